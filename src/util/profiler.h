/* Per-layer profiling of a net: forward and backward wall times accumulated over passes
 * (mean and spread), whole-step times, and optionally a trace of every timed event kept
 * in a buffer allocated up front. net_forward/net_backward feed it when Net.profiler is
 * set; the caller times whole steps and writes the trace with util/trace.h. */
#ifndef CDL_PROFILER_H
#define CDL_PROFILER_H

#include <stddef.h>
#include <stdint.h>

#include "util/error.h"
#include "util/trace.h"

typedef enum ProfilePhase { PROFILE_FORWARD, PROFILE_BACKWARD } ProfilePhase;

/* Durations in seconds accumulated over repetitions. */
typedef struct TimeStat {
    double sum_s, sum_sq_s, min_s, max_s;
    long count;
} TimeStat;

/* Mean; 0 when empty. */
double time_stat_mean_s(const TimeStat *t);
/* Sample standard deviation (divides by count - 1); 0 with fewer than two values. */
double time_stat_std_s(const TimeStat *t);

typedef struct Profiler {
    int n_layers;
    TimeStat *forward, *backward; /* [n_layers]: one value per pass of the layer */
    TimeStat step;                /* whole steps, as the caller reports them */
    /* Trace: while `tracing` is set (the caller toggles it between steps) every recorded
     * time is also appended to events, up to max_events; those that do not fit are
     * counted in dropped. */
    int tracing;
    TraceEvent *events; /* [max_events] */
    size_t n_events, max_events, dropped;
    double origin_s;                /* profiler_now_s() the trace timestamps count from */
    char (*labels)[TRACE_NAME_MAX]; /* [n_layers] event names, "INDEX TYPE" */
    /* The clock of the times recorded (profiler_now_s): NULL, time_now_s(); else
     * clock_s(clock_ctx) on the same scale, e.g. a device's, which waits for the work queued
     * before it (CUDA events). */
    double (*clock_s)(void *ctx);
    void *clock_ctx;
} Profiler;

/* Allocates statistics for n_layers layers and room for max_events trace events (0: no
 * trace). Layers are named by their index until profiler_name_layer. */
int profiler_init(Profiler *p, int n_layers, size_t max_events, Error *e);
void profiler_free(Profiler *p);
/* Names layer's trace events "LAYER TYPE". */
void profiler_name_layer(Profiler *p, int layer, const char *type);
/* Now on p's clock (clock_s, else time_now_s()), in seconds. */
double profiler_now_s(const Profiler *p);
/* Forgets all times and events (e.g. after warm-up) and restarts the trace clock. */
void profiler_reset(Profiler *p);
/* Records one pass of layer in phase during optimizer step `step` (0-based, as Net.step;
 * trace events number it from 1), from start_s to end_s (profiler_now_s values). Allocates
 * nothing. */
void profiler_layer(Profiler *p, uint64_t step, int layer, ProfilePhase phase, double start_s,
                    double end_s);
/* Records the replay of pass `pass` (0-based; named from 1) of step `step`, a CUDA graph: one
 * launch whose layers cannot be timed apart (category "graph"). Allocates nothing. */
void profiler_graph(Profiler *p, uint64_t step, int pass, double start_s, double end_s);
/* Records a whole optimizer step. Allocates nothing. */
void profiler_step(Profiler *p, uint64_t step, double start_s, double end_s);

#endif
