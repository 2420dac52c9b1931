/* The data loader: worker threads read and augment samples into a bounded queue of ready
 * mini-batches ahead of training (like PyTorch's DataLoader with num_workers and
 * prefetch_factor). The batches of an epoch, their sample order and every augmentation
 * draw depend only on (seed, epoch, position), never on the number of workers. */
#ifndef CDL_LOADER_H
#define CDL_LOADER_H

#include <stdint.h>

#include "data/augment.h"
#include "data/source.h"

typedef struct LoaderOptions {
    int batch;    /* samples per mini-batch */
    int workers;  /* decode/augment threads; 0 = in the caller's thread */
    int prefetch; /* ready mini-batches kept ahead (bounded memory) */
    uint64_t seed;
    int train;     /* 1: shuffle each epoch and augment_train; 0: in order, augment_eval */
    int drop_last; /* drop the last partial mini-batch of an epoch */
    int skip_bad;  /* replace an unreadable sample (counted) instead of failing */
    /* A shard of every epoch for rank `rank` of `ranks` data-parallel processes (0 and 0: the
     * whole epoch): mini-batch k is part `rank` of the epoch's k-th global mini-batch of
     * ranks * batch positions, so the ranks' shards make up the one-process epoch of mini-batches
     * of ranks * batch samples. Needs drop_last (and train) when ranks > 1. */
    int rank, ranks;
    /* Truth-box slots per sample (a detection net's net_truth_boxes), read with each sample
     * (SampleSource.read_boxes) and moved as its image is framed and flipped; 0: no boxes. */
    int truth_boxes;
    /* Multi-scale training (train/multi_scale.h): the out_w x out_h of mini-batch k of epoch,
     * at most the AugmentConfig's, which the ring is sized for; loader_next then gives
     * [n][out_c][*h][*w]. NULL: the AugmentConfig's for every mini-batch. */
    void (*batch_size)(const void *ctx, int epoch, int k, int *w, int *h);
    const void *batch_size_ctx;
} LoaderOptions;

/* The command line's defaults: worker threads (in-memory data without augmentation measured
 * no faster with 0), and ready mini-batches per worker (PyTorch's prefetch_factor). */
enum { LOADER_DEFAULT_WORKERS = 2, LOADER_PREFETCH_PER_WORKER = 2 };

typedef struct Loader Loader;

int loader_open(Loader **out, const SampleSource *src, const AugmentConfig *aug,
                const LoaderOptions *opt, Error *e);
void loader_close(Loader *l);
int loader_batches_per_epoch(const Loader *l);
/* Positions the loader at mini-batch `first` of `epoch` (resume) and starts producing. */
int loader_start_epoch(Loader *l, int epoch, int first, Error *e);
/* Blocks until the next mini-batch is ready and copies it into x [n][c][h][w], y [n] and, with
 * truth_boxes, truth [n][truth_boxes][TRUTH_FLOATS] (data/boxes.h; else truth may be NULL);
 * *n is the batch size (smaller only for a last partial batch without drop_last). A sample
 * whose image or label file cannot be read fails with the file's name (and line) unless
 * skip_bad is set. */
int loader_next(Loader *l, float *x, int *y, float *truth, int *n, Error *e);
/* Samples replaced because they could not be read, in the mini-batches taken since the
 * epoch started. */
int loader_skipped(const Loader *l);
/* The source the loader reads. */
const SampleSource *loader_source(const Loader *l);

#endif
