/* cdl profile: times every layer's forward and backward over training steps on random
 * data, as `caffe time` does, and reports each layer's share of the step, its FLOP rate,
 * parameters and activation memory; optionally writes a Chrome trace of the timed steps. */
#include <cjson/cJSON.h>
#include <limits.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "cli/step_trace.h"
#include "cli/timing.h"
#include "util/timer.h"

static const OptSpec profile_opts[] = {
    {"--batch", 1, 0, "images per step (default: the model's batch; sets subdivisions=1)"},
    {"--iters", 1, 0, "timed training steps (default 10)"},
    {"--warmup", 1, 0, "untimed steps after the first untimed one (default 1)"},
    {"--threads", 1, 0, "CPU threads (default: all cores)"},
    {"--trace", 1, 0, "write a Chrome trace (Perfetto, chrome://tracing) of the timed steps"},
    {"--set", 1, 1, "override a cfg key: net.KEY=V or LAYER.KEY=V (repeatable)"},
    {"--json", 0, 0, "print one JSON object instead of a table"},
    {"--help", 0, 0, "show this help"},
};
#define N_PROFILE_OPTS (int)(sizeof profile_opts / sizeof profile_opts[0])

typedef struct ProfileSettings {
    const char *path;
    const char *trace_path; /* NULL: no trace */
    long batch;             /* 0: the model's */
    long iters, warmup, threads;
    int json;
} ProfileSettings;

/* What one layer costs in a step, summed over the step's passes. */
typedef struct LayerCost {
    double flops;    /* forward + backward, per step */
    double step_ms;  /* forward + backward, summed over the step's passes */
    double share;    /* step_ms / the step's time */
    double gflops_s; /* achieved rate */
    size_t params, activation_bytes;
} LayerCost;

static int read_settings(const Args *a, ProfileSettings *p, Error *e)
{
    if (a->n_positional != 1)
        return error_set(e, CDL_EUSAGE, "profile takes one CFG or MODEL; see --help");
    p->path = a->positional[0];
    p->trace_path = args_get(a, "--trace");
    p->json = args_get(a, "--json") != NULL;
    int st = args_get_int(a, "--batch", 0, 1, INT_MAX, &p->batch, e);
    st = st ? st : args_get_int(a, "--iters", 10, 1, 1000000, &p->iters, e);
    st = st ? st : args_get_int(a, "--warmup", 1, 0, 1000000, &p->warmup, e);
    st = st ? st : args_get_int(a, "--threads", 0, 0, 1024, &p->threads, e);
    return st;
}

/* Forward + backward FLOPs of one sample. Convolution and connected layers do a GEMM of
 * the forward's size for the weight gradient and another for the input gradient (skipped
 * for the net input); every other layer's backward costs about what its forward does. */
static double sample_step_flops(Net *net, const Layer *l)
{
    const int gemm = l->type->gemm_bound;
    if (!gemm)
        return 2 * l->flops;
    return (net_layer_input_delta(net, l, 0) ? 3 : 2) * l->flops;
}

static LayerCost layer_cost(Net *net, const Profiler *prof, int i)
{
    const Layer *l = &net->layers[i];
    LayerCost c = {0};
    const double passes = net->hyper.subdivisions;
    const double pass_ms =
        1e3 * (time_stat_mean_s(&prof->forward[i]) + time_stat_mean_s(&prof->backward[i]));
    c.flops = sample_step_flops(net, l) * net->hyper.batch;
    c.step_ms = pass_ms * passes;
    c.share = c.step_ms / (1e3 * time_stat_mean_s(&prof->step));
    c.gflops_s = c.step_ms > 0 ? c.flops / (c.step_ms * 1e6) : 0;
    for (int k = 0; k < l->n_params; k++)
        c.params += l->params[k].trainable ? l->params[k].count : 0;
    /* The buffers net_resize gives the layer: output, delta, and pre-activations. */
    const size_t planes = 1 + (size_t)net->want_grads + (size_t)(l->activation != CDL_ACT_LINEAR);
    c.activation_bytes = planes * (size_t)net->batch * shape_size(l->out_shape) * sizeof(float);
    return c;
}

/* The process's peak resident set (Linux reports ru_maxrss in KiB). */
static double peak_rss_bytes(void)
{
    struct rusage ru;
    return getrusage(RUSAGE_SELF, &ru) ? 0 : 1024.0 * (double)ru.ru_maxrss;
}

static double layers_step_ms(Net *net, const Profiler *prof)
{
    double ms = 0;
    for (int i = 0; i < net->n_layers; i++)
        ms += layer_cost(net, prof, i).step_ms;
    return ms;
}

static cJSON *stat_json(const TimeStat *t)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "mean", 1e3 * time_stat_mean_s(t));
    cJSON_AddNumberToObject(o, "std", 1e3 * time_stat_std_s(t));
    cJSON_AddNumberToObject(o, "min", 1e3 * t->min_s);
    cJSON_AddNumberToObject(o, "max", 1e3 * t->max_s);
    return o;
}

static void print_json(Net *net, const Profiler *prof, const ProfileSettings *p, int threads)
{
    const double step_s = time_stat_mean_s(&prof->step);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "model", p->path);
    cJSON_AddNumberToObject(o, "batch", net->hyper.batch);
    cJSON_AddNumberToObject(o, "passes_per_step", net->hyper.subdivisions);
    cJSON_AddNumberToObject(o, "threads", threads);
    cJSON_AddNumberToObject(o, "iters", (double)p->iters);
    cJSON_AddNumberToObject(o, "warmup", (double)p->warmup);
    cJSON *layers = cJSON_AddArrayToObject(o, "layers");
    for (int i = 0; i < net->n_layers; i++) {
        const Layer *l = &net->layers[i];
        const LayerCost c = layer_cost(net, prof, i);
        cJSON *j = cJSON_CreateObject();
        int out[3] = {l->out_shape.c, l->out_shape.h, l->out_shape.w};
        cJSON_AddNumberToObject(j, "index", i);
        cJSON_AddStringToObject(j, "type", l->type->name);
        cJSON_AddItemToObject(j, "output", cJSON_CreateIntArray(out, 3));
        cJSON_AddItemToObject(j, "forward_ms", stat_json(&prof->forward[i]));
        cJSON_AddItemToObject(j, "backward_ms", stat_json(&prof->backward[i]));
        cJSON_AddNumberToObject(j, "step_ms", c.step_ms);
        cJSON_AddNumberToObject(j, "share", c.share);
        cJSON_AddNumberToObject(j, "flops", c.flops);
        cJSON_AddNumberToObject(j, "gflops_per_s", c.gflops_s);
        cJSON_AddNumberToObject(j, "params", (double)c.params);
        cJSON_AddNumberToObject(j, "activation_bytes", (double)c.activation_bytes);
        cJSON_AddItemToArray(layers, j);
    }
    const double layers_ms = layers_step_ms(net, prof);
    cJSON_AddItemToObject(o, "step_ms", stat_json(&prof->step));
    cJSON_AddNumberToObject(o, "images_per_s", net->hyper.batch / step_s);
    cJSON_AddNumberToObject(o, "layers_ms", layers_ms);
    cJSON_AddNumberToObject(o, "layers_share", layers_ms / (1e3 * step_s));
    cJSON_AddNumberToObject(o, "peak_rss_bytes", peak_rss_bytes());
    if (p->trace_path)
        cJSON_AddStringToObject(o, "trace", p->trace_path);
    char *text = cJSON_PrintUnformatted(o);
    if (text)
        puts(text);
    free(text);
    cJSON_Delete(o);
}

static void print_table(Net *net, const Profiler *prof, const ProfileSettings *p, int threads)
{
    const int passes = net->hyper.subdivisions;
    printf("%s: batch %d, threads %d, %ld timed steps after %ld untimed\n", p->path,
           net->hyper.batch, threads, p->iters, p->warmup + 1);
    if (passes > 1)
        printf("each step is %d passes of %d images: forward and backward times are per pass\n",
               passes, net->batch);
    printf("%4s  %-14s %-14s %20s %20s %6s %10s %8s %10s %10s\n", "#", "type", "output CxHxW",
           "forward ms", "backward ms", "share", "MFLOP", "GFLOP/s", "params", "act. MiB");
    for (int i = 0; i < net->n_layers; i++) {
        const Layer *l = &net->layers[i];
        const LayerCost c = layer_cost(net, prof, i);
        char shape[48], fwd[48], bwd[48];
        snprintf(shape, sizeof shape, "%dx%dx%d", l->out_shape.c, l->out_shape.h, l->out_shape.w);
        snprintf(fwd, sizeof fwd, "%.3f ± %.3f", 1e3 * time_stat_mean_s(&prof->forward[i]),
                 1e3 * time_stat_std_s(&prof->forward[i]));
        snprintf(bwd, sizeof bwd, "%.3f ± %.3f", 1e3 * time_stat_mean_s(&prof->backward[i]),
                 1e3 * time_stat_std_s(&prof->backward[i]));
        /* "±" is two bytes but one column: pad by one more. */
        printf("%4d  %-14s %-14s %21s %21s %5.1f%% %10.1f %8.1f %10zu %10.2f\n", i, l->type->name,
               shape, fwd, bwd, 100 * c.share, c.flops / 1e6, c.gflops_s, c.params,
               (double)c.activation_bytes / (1 << 20));
    }
    const double step_ms = 1e3 * time_stat_mean_s(&prof->step);
    const double layers_ms = layers_step_ms(net, prof);
    printf("step: %.3f ± %.3f ms (min %.3f, max %.3f), %.1f images/s\n", step_ms,
           1e3 * time_stat_std_s(&prof->step), 1e3 * prof->step.min_s, 1e3 * prof->step.max_s,
           net->hyper.batch / (step_ms / 1e3));
    printf("layers: %.3f ms of the step (%.1f%%); the rest zeroes gradients, fills the batch "
           "and updates the weights\n",
           layers_ms, 100 * layers_ms / step_ms);
    printf("peak memory: %.1f MiB (maximum resident set)\n", peak_rss_bytes() / (1 << 20));
    if (p->trace_path)
        printf("trace: %s (%zu events)\n", p->trace_path, prof->n_events);
}

static int run_profile(const Args *a, Error *e)
{
    ProfileSettings p;
    int st = read_settings(a, &p, e);
    if (st)
        return st;
    cli_set_threads((int)p.threads);
    const int threads = omp_get_max_threads();
    TimingRun t;
    Profiler prof = {0};
    st = timing_run_setup(&t, p.path, a, p.batch, e);
    st = st ? st : profiler_init_for_net(&prof, &t.net, p.trace_path ? (size_t)p.iters : 0, e);
    if (st)
        goto done;
    t.net.profiler = &prof;
    for (long i = 0; i < 1 + p.warmup; i++)
        timing_run_step(&t);
    profiler_reset(&prof);
    prof.tracing = p.trace_path != NULL;
    for (long i = 0; i < p.iters; i++) {
        const double start_s = time_now_s();
        timing_run_step(&t);
        profiler_step(&prof, t.net.step - 1, start_s, time_now_s());
    }
    t.net.profiler = NULL;
    if (!isfinite(t.net.loss))
        fprintf(stderr,
                "cdl: warning: the loss became %g; timings of non-finite values may not "
                "be representative\n",
                t.net.loss);
    if (p.trace_path && (st = trace_write(p.trace_path, prof.events, prof.n_events, e)))
        goto done;
    if (p.json)
        print_json(&t.net, &prof, &p, threads);
    else
        print_table(&t.net, &prof, &p, threads);
done:
    profiler_free(&prof);
    timing_run_free(&t);
    return st;
}

int cmd_profile(int argc, char **argv)
{
    Args a;
    Error e = {0};
    if (args_parse(argc, argv, profile_opts, N_PROFILE_OPTS, &a, &e))
        return cli_fail(&e);
    if (args_get(&a, "--help")) {
        args_print_help(
            "profile", "CFG|MODEL [options]",
            "Times each layer's forward and backward over training steps on random data "
            "(one untimed step, --warmup more, then --iters timed ones) and prints per "
            "layer: mean ± standard deviation in ms, share of the step, forward+backward "
            "FLOPs of the step (3x the forward for convolutional and connected layers), the "
            "achieved GFLOP/s, parameters and activation memory; then the step time, "
            "images/s, the layers' sum against the step, and the peak memory.",
            profile_opts, N_PROFILE_OPTS);
        return 0;
    }
    return run_profile(&a, &e) ? cli_fail(&e) : 0;
}
