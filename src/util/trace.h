/* Chrome trace-event JSON: the timeline format that Perfetto (ui.perfetto.dev) and
 * chrome://tracing open. Each event is a complete slice ("ph":"X") on one thread. */
#ifndef CDL_TRACE_H
#define CDL_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "util/error.h"

#define TRACE_NAME_MAX 48

typedef struct TraceEvent {
    char name[TRACE_NAME_MAX]; /* what the slice shows, e.g. "3 convolutional" */
    const char *cat;           /* category, a static string: "forward", "backward", "step" */
    double start_us, dur_us;   /* microseconds from the trace's time origin */
    int tid;                   /* thread lane the slice is drawn on */
    uint64_t step;             /* args.step: 1-based optimizer step, as training logs count */
    int layer;                 /* args.layer; -1: the event belongs to no layer */
} TraceEvent;

/* Writes {"traceEvents":[{"name","cat","ph":"X","ts","dur","pid","tid","args"},...],
 * "displayTimeUnit":"ms"} to path, whole or not at all (temporary file, then rename).
 * Errors start with path. */
int trace_write(const char *path, const TraceEvent *events, size_t n, Error *e);

#endif
