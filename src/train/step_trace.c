/* Step traces for a training run's chosen steps, and profilers sized for a net. */
#include "train/step_trace.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The profiling clock of a net whose backend has its own (a GPU's CUDA events), ctx the net. */
static double backend_clock_s(void *ctx)
{
    const Net *net = ctx;
    return net->backend->clock_s(&net->exec);
}

int profiler_init_for_net(Profiler *p, const Net *net, size_t traced_steps, Error *e)
{
    const size_t per_step =
        2 * (size_t)net->n_layers * (size_t)net->hyper.subdivisions * (size_t)net->split + 1;
    int st = profiler_init(p, net->n_layers, traced_steps * per_step, e);
    for (int i = 0; !st && i < net->n_layers; i++)
        profiler_name_layer(p, i, net->layers[i].type->name);
    if (!st && net->backend->clock_s) { /* the device's own times, not the host's launches */
        p->clock_s = backend_clock_s;
        p->clock_ctx = (void *)net;
        profiler_reset(p); /* the trace's origin on that clock */
    }
    return st;
}

static int bad_spec(const StepTrace *t, Error *e)
{
    return error_set(e, CDL_EUSAGE,
                     "--profile-steps: bad value '%s': expected steps such as 5-8 or 3,10 "
                     "(1-based, ranges A-B with A <= B, at most %d items)",
                     t->spec, STEP_TRACE_MAX_RANGES);
}

/* Reads a step number (>= 1) at *s, advancing it; 0 when there is none. */
static uint64_t read_step(const char **s)
{
    if (**s < '0' || **s > '9')
        return 0;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(*s, &end, 10);
    *s = end;
    return errno ? 0 : (uint64_t)v;
}

/* "weights/x.cdl" -> "weights/x.trace.json" */
static void default_trace_path(const char *checkpoint_path, char *out, size_t size)
{
    snprintf(out, size, "%s", checkpoint_path);
    char *dot = strrchr(out, '.');
    char *slash = strrchr(out, '/');
    if (dot && dot != out && (!slash || dot > slash + 1))
        *dot = '\0';
    strncat(out, ".trace.json", size - strlen(out) - 1);
}

/* Reads the step list and where the trace goes. */
static int parse_spec(StepTrace *t, const char *spec, const char *path, const char *checkpoint_path,
                      Error *e)
{
    t->spec = spec;
    const char *s = spec;
    do {
        if (t->n_ranges == STEP_TRACE_MAX_RANGES)
            return bad_spec(t, e);
        uint64_t first = read_step(&s), last = first;
        if (*s == '-') {
            s++;
            last = read_step(&s);
        }
        if (!first || last < first || (*s && *s != ','))
            return bad_spec(t, e);
        t->first[t->n_ranges] = first;
        t->last[t->n_ranges++] = last;
    } while (*s++ == ',');
    if (path)
        snprintf(t->path, sizeof t->path, "%s", path);
    else
        default_trace_path(checkpoint_path, t->path, sizeof t->path);
    return CDL_OK;
}

static int wants(const StepTrace *t, uint64_t step)
{
    for (int i = 0; i < t->n_ranges; i++)
        if (step >= t->first[i] && step <= t->last[i])
            return 1;
    return 0;
}

/* Step `step` (1-based) is about to run: the net is profiled in the traced steps only, so that
 * the others run as without --profile-steps (a device's clock waits for its work). */
static void begin_step(StepTrace *t, uint64_t step)
{
    t->profiler.tracing = wants(t, step);
    t->net->profiler = t->profiler.tracing ? &t->profiler : NULL;
    if (t->profiler.tracing)
        t->mark_s = profiler_now_s(&t->profiler);
}

static void on_step(void *ctx, const StepReport *r)
{
    StepTrace *t = ctx;
    if (t->profiler.tracing)
        profiler_step(&t->profiler, r->step - 1, t->mark_s, profiler_now_s(&t->profiler));
    t->profiler.tracing = 0;
    t->net->profiler = NULL;
    if (t->inner.on_step)
        t->inner.on_step(t->inner.ctx, r);
    /* At an epoch's end evaluation and the checkpoint come first: on_epoch begins the step. */
    if (r->step_in_epoch != r->steps_per_epoch)
        begin_step(t, r->step + 1);
}

static void on_epoch(void *ctx, const EpochReport *r)
{
    StepTrace *t = ctx;
    if (t->inner.on_epoch)
        t->inner.on_epoch(t->inner.ctx, r);
    begin_step(t, r->step + 1);
}

int step_trace_begin(StepTrace *t, const char *spec, const char *path, const char *checkpoint_path,
                     Net *net, uint64_t done_steps, uint64_t total_steps, TrainCallbacks *cb,
                     Error *e)
{
    if (!spec)
        return path ? error_set(e, CDL_EUSAGE, "--trace needs --profile-steps STEPS") : CDL_OK;
    int st = parse_spec(t, spec, path, checkpoint_path, e);
    if (st)
        return st;
    size_t traced = 0;
    for (uint64_t s = done_steps + 1; s <= total_steps; s++)
        traced += (size_t)wants(t, s);
    if (!traced && done_steps >= total_steps)
        return error_set(e, CDL_EUSAGE, "--profile-steps %s: this run has no steps left to trace",
                         spec);
    if (!traced)
        return error_set(e, CDL_EUSAGE,
                         "--profile-steps %s: none of these steps runs; this run trains steps "
                         "%llu-%llu",
                         spec, (unsigned long long)done_steps + 1, (unsigned long long)total_steps);
    st = profiler_init_for_net(&t->profiler, net, traced, e);
    if (st)
        return st;
    t->net = net;
    t->inner = *cb;
    *cb = (TrainCallbacks){.on_step = on_step, .on_epoch = on_epoch, .ctx = t};
    begin_step(t, done_steps + 1);
    return CDL_OK;
}

int step_trace_end(StepTrace *t, int status, size_t *events, Error *e)
{
    *events = 0;
    if (!t->net)
        return status;
    t->net->profiler = NULL;
    if (!status) {
        status = trace_write(t->path, t->profiler.events, t->profiler.n_events, e);
        if (!status)
            *events = t->profiler.n_events;
    }
    profiler_free(&t->profiler);
    t->net = NULL;
    return status;
}
