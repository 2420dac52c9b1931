/* Liveness packing: buffers that are live over spans of a timeline of steps share one slab, two
 * buffers overlapping in memory only when no span of one meets a span of the other. */
#ifndef CDL_LIVENESS_H
#define CDL_LIVENESS_H

#include <stddef.h>

/* Steps first..last (inclusive) of a timeline: the buffer is written at first and read up to
 * last. */
typedef struct LiveSpan {
    int first, last;
} LiveSpan;

/* A buffer written more than once (a recomputed forward, a layer's work memory) is live over one
 * span per write. */
#define LIVE_MAX_SPANS 3

typedef struct LiveBuffer {
    size_t bytes; /* 0: the buffer takes no memory and is ignored */
    LiveSpan spans[LIVE_MAX_SPANS];
    int n_spans;
    size_t offset; /* set by liveness_pack: where the buffer starts in the slab */
} LiveBuffer;

/* Places buffers[0..n) in one slab: each at a multiple of align, the largest first, at the
 * lowest offset where it overlaps no buffer placed before it whose spans meet its own (greedy
 * first fit). work is space for 2 * n ints. Returns the slab's size in bytes. Deterministic:
 * the same buffers give the same offsets. */
size_t liveness_pack(LiveBuffer *buffers, int n, size_t align, int *work);

#endif
