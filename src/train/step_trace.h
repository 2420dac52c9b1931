/* Chrome traces of training steps: a profiler sized for a net, and a training session's
 * profile_steps (`cdl train --profile-steps`), which traces chosen steps by wrapping the
 * trainer's callbacks (they time each step and switch tracing on and off between steps). */
#ifndef CDL_STEP_TRACE_H
#define CDL_STEP_TRACE_H

#include <limits.h>

#include "core/net.h"
#include "train/trainer.h"
#include "util/profiler.h"

/* Sizes a profiler for net: statistics for every layer (named "INDEX TYPE" in the trace)
 * and room for the events of traced_steps optimizer steps: each layer's forward and
 * backward per mini-batch, and the step itself; on the net's backend's clock where it has one
 * (BackendOps.clock_s: a GPU's CUDA events), else the host's. */
int profiler_init_for_net(Profiler *p, const Net *net, size_t traced_steps, Error *e);

#define STEP_TRACE_MAX_RANGES 64

typedef struct StepTrace {
    uint64_t first[STEP_TRACE_MAX_RANGES], last[STEP_TRACE_MAX_RANGES]; /* 1-based, inclusive */
    int n_ranges;
    const char *spec;    /* the option's text, for messages */
    char path[PATH_MAX]; /* where the trace goes */
    Profiler profiler;
    Net *net;
    TrainCallbacks inner; /* the callbacks being wrapped */
    double mark_s;        /* when the coming step began: the end of the last callback */
} StepTrace;

/* With spec (--profile-steps: "A-B", "N", or a comma-separated list of them, in 1-based
 * steps as --log records them), attaches a profiler to net for the listed steps among
 * done_steps+1 .. total_steps and wraps *cb so that its callbacks time the steps. The trace
 * goes to path, or (NULL) next to checkpoint_path as NAME.trace.json. Without spec it does
 * nothing, and a path is a usage error. t must be zeroed (= {0}) before. */
int step_trace_begin(StepTrace *t, const char *spec, const char *path, const char *checkpoint_path,
                     Net *net, uint64_t done_steps, uint64_t total_steps, TrainCallbacks *cb,
                     Error *e);
/* When status is CDL_OK and tracing began, writes the trace to t->path and sets *events to
 * the events written (else 0). Always detaches the profiler and frees t. Returns status, or
 * the write's failure. */
int step_trace_end(StepTrace *t, int status, size_t *events, Error *e);

#endif
