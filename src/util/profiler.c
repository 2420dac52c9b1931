/* Profiler: running sums for per-layer statistics, and trace events appended to a
 * preallocated buffer so that recording never allocates inside the training step. */
#include "util/profiler.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/timer.h"

double time_stat_mean_s(const TimeStat *t)
{
    return t->count ? t->sum_s / (double)t->count : 0;
}

double time_stat_std_s(const TimeStat *t)
{
    if (t->count < 2)
        return 0;
    const double n = (double)t->count;
    const double var = (t->sum_sq_s - t->sum_s * t->sum_s / n) / (n - 1);
    return var > 0 ? sqrt(var) : 0; /* rounding can make a zero variance slightly negative */
}

static void time_stat_add(TimeStat *t, double s)
{
    t->min_s = t->count && t->min_s < s ? t->min_s : s;
    t->max_s = t->count && t->max_s > s ? t->max_s : s;
    t->sum_s += s;
    t->sum_sq_s += s * s;
    t->count++;
}

int profiler_init(Profiler *p, int n_layers, size_t max_events, Error *e)
{
    memset(p, 0, sizeof *p);
    p->n_layers = n_layers;
    p->max_events = max_events;
    p->forward = calloc((size_t)n_layers + 1, sizeof *p->forward);
    p->backward = calloc((size_t)n_layers + 1, sizeof *p->backward);
    p->labels = calloc((size_t)n_layers + 1, sizeof *p->labels);
    p->events = calloc(max_events + 1, sizeof *p->events);
    if (!p->forward || !p->backward || !p->labels || !p->events) {
        profiler_free(p);
        return error_set(e, CDL_ERUNTIME, "out of memory for a profile of %zu trace events",
                         max_events);
    }
    for (int i = 0; i < n_layers; i++)
        snprintf(p->labels[i], sizeof p->labels[i], "%d", i);
    p->origin_s = time_now_s();
    return CDL_OK;
}

void profiler_free(Profiler *p)
{
    free(p->forward);
    free(p->backward);
    free(p->labels);
    free(p->events);
    memset(p, 0, sizeof *p);
}

void profiler_name_layer(Profiler *p, int layer, const char *type)
{
    snprintf(p->labels[layer], sizeof p->labels[layer], "%d %s", layer, type);
}

double profiler_now_s(const Profiler *p)
{
    return p->clock_s ? p->clock_s(p->clock_ctx) : time_now_s();
}

void profiler_reset(Profiler *p)
{
    memset(p->forward, 0, (size_t)p->n_layers * sizeof *p->forward);
    memset(p->backward, 0, (size_t)p->n_layers * sizeof *p->backward);
    memset(&p->step, 0, sizeof p->step);
    p->n_events = p->dropped = 0;
    p->origin_s = profiler_now_s(p);
}

static void add_event(Profiler *p, const char *name, const char *cat, uint64_t step, int layer,
                      double start_s, double end_s)
{
    if (!p->tracing)
        return;
    if (p->n_events == p->max_events) {
        p->dropped++;
        return;
    }
    TraceEvent *ev = &p->events[p->n_events++];
    snprintf(ev->name, sizeof ev->name, "%s", name);
    ev->cat = cat;
    ev->start_us = 1e6 * (start_s - p->origin_s);
    ev->dur_us = 1e6 * (end_s - start_s);
    ev->tid = 1;
    ev->step = step + 1;
    ev->layer = layer;
}

void profiler_layer(Profiler *p, uint64_t step, int layer, ProfilePhase phase, double start_s,
                    double end_s)
{
    const int forward = phase == PROFILE_FORWARD;
    time_stat_add(forward ? &p->forward[layer] : &p->backward[layer], end_s - start_s);
    add_event(p, p->labels[layer], forward ? "forward" : "backward", step, layer, start_s, end_s);
}

void profiler_graph(Profiler *p, uint64_t step, int pass, double start_s, double end_s)
{
    char name[TRACE_NAME_MAX];
    snprintf(name, sizeof name, "graph replay, pass %d", pass + 1);
    add_event(p, name, "graph", step, -1, start_s, end_s);
}

void profiler_step(Profiler *p, uint64_t step, double start_s, double end_s)
{
    time_stat_add(&p->step, end_s - start_s);
    add_event(p, "step", "step", step, -1, start_s, end_s);
}
