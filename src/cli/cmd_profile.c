/* cdl profile: times every layer's forward and backward over training steps (with
 * --inference: its forward over inference forwards) on random data, as `caffe time` does, and
 * reports each layer's share of the step, its FLOP rate,
 * parameters and activation memory; optionally writes a Chrome trace of the timed steps. */
#include <cjson/cJSON.h>
#include <limits.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

#include "api/cdl.h"
#include "cli/cli.h"

static const OptSpec profile_opts[] = {
    {"--batch", 1, 0, "images per step (default: the model's batch; sets subdivisions=1)"},
    {"--iters", 1, 0, "timed training steps (default 10)"},
    {"--inference", 0, 0,
     "time inference forwards instead, as bench --inference (a cfg or a checkpoint)"},
    {"--warmup", 1, 0, "untimed steps after the first untimed one (default 1)"},
    {"--threads", 1, 0,
     "CPU threads (default: OMP_NUM_THREADS, else the cores no other process is running on)"},
    CLI_PRECISION_OPT,
    CLI_GPU_OPT,
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
    int inference; /* forwards of a net without gradients */
} ProfileSettings;

static int read_settings(const Args *a, ProfileSettings *p, Error *e)
{
    if (a->n_positional != 1)
        return error_set(e, CDL_EUSAGE, "profile takes one CFG or MODEL; see --help");
    p->path = a->positional[0];
    p->trace_path = args_get(a, "--trace");
    p->json = args_get(a, "--json") != NULL;
    p->inference = args_get(a, "--inference") != NULL;
    int st = p->trace_path ? cli_check_output(a, p->trace_path, FILE_KIND_JSON, e) : CDL_OK;
    st = st ? st : args_get_int(a, "--batch", 0, 1, INT_MAX, &p->batch, e);
    st = st ? st : args_get_int(a, "--iters", 10, 1, 1000000, &p->iters, e);
    st = st ? st : args_get_int(a, "--warmup", 1, 0, 1000000, &p->warmup, e);
    st = st ? st : args_get_int(a, "--threads", 0, 0, 1024, &p->threads, e);
    const char *precision; /* applied by cli_open_model, as --gpu */
    int gpu;
    st = st ? st : cli_get_precision(a, &precision, e);
    st = st ? st : cli_get_gpu(a, &gpu, e);
    return st;
}

/* The process's peak resident set (Linux reports ru_maxrss in KiB). */
static double peak_rss_bytes(void)
{
    struct rusage ru;
    return getrusage(RUSAGE_SELF, &ru) ? 0 : 1024.0 * (double)ru.ru_maxrss;
}

static cJSON *stat_json(const cdl_time_stat *t)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "mean", t->mean_ms);
    cJSON_AddNumberToObject(o, "std", t->std_ms);
    cJSON_AddNumberToObject(o, "min", t->min_ms);
    cJSON_AddNumberToObject(o, "max", t->max_ms);
    return o;
}

/* gpu: the steps ran on a GPU, whose layers are timed with CUDA events (cdl_model_profile). */
static void print_json(const cdl_profile_result *r, const ProfileSettings *p, int threads, int gpu)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "model", p->path);
    cJSON_AddStringToObject(o, "device", gpu ? "gpu" : "cpu");
    cJSON_AddStringToObject(o, "clock", gpu ? "cuda_events" : "host");
    cJSON_AddBoolToObject(o, "inference", p->inference);
    cJSON_AddNumberToObject(o, "batch", r->batch);
    cJSON_AddNumberToObject(o, "passes_per_step", r->passes_per_step);
    cJSON_AddNumberToObject(o, "threads", threads);
    cJSON_AddNumberToObject(o, "iters", (double)p->iters);
    cJSON_AddNumberToObject(o, "warmup", (double)p->warmup);
    cJSON *layers = cJSON_AddArrayToObject(o, "layers");
    for (int i = 0; i < r->n_layers; i++) {
        const cdl_layer_profile *c = &r->layers[i];
        cJSON *j = cJSON_CreateObject();
        int out[3] = {c->out_c, c->out_h, c->out_w};
        cJSON_AddNumberToObject(j, "index", i);
        cJSON_AddStringToObject(j, "type", c->type);
        cJSON_AddItemToObject(j, "output", cJSON_CreateIntArray(out, 3));
        cJSON_AddItemToObject(j, "forward_ms", stat_json(&c->forward));
        cJSON_AddItemToObject(j, "backward_ms", stat_json(&c->backward));
        cJSON_AddNumberToObject(j, "step_ms", c->step_ms);
        cJSON_AddNumberToObject(j, "share", c->share);
        cJSON_AddNumberToObject(j, "flops", c->flops);
        cJSON_AddNumberToObject(j, "gflops_per_s", c->gflops_per_s);
        cJSON_AddNumberToObject(j, "params", (double)c->params);
        cJSON_AddNumberToObject(j, "activation_bytes", (double)c->activation_bytes);
        if (c->engine)
            cJSON_AddStringToObject(j, "engine", c->engine);
        cJSON_AddItemToArray(layers, j);
    }
    cJSON_AddItemToObject(o, "step_ms", stat_json(&r->step));
    cJSON_AddNumberToObject(o, "images_per_s", r->images_per_s);
    cJSON_AddNumberToObject(o, "layers_ms", r->layers_ms);
    cJSON_AddNumberToObject(o, "layers_share", r->layers_share);
    cJSON_AddNumberToObject(o, "peak_rss_bytes", peak_rss_bytes());
    if (p->trace_path)
        cJSON_AddStringToObject(o, "trace", p->trace_path);
    char *text = cli_json_text(o);
    if (text)
        puts(text);
    free(text);
    cJSON_Delete(o);
}

static void print_table(const cdl_profile_result *r, const ProfileSettings *p, int threads, int gpu)
{
    printf("%s: batch %d, threads %d, %ld timed %s after %ld untimed\n", p->path, r->batch, threads,
           p->iters, p->inference ? "inference forwards" : "steps", p->warmup + 1);
    if (gpu)
        printf("on the GPU: each layer timed by CUDA events on the net's stream, waited for "
               "before the next layer starts\n");
    if (r->passes_per_step > 1)
        printf("each step is %d passes of %d images: forward and backward times are per pass\n",
               r->passes_per_step, r->pass_batch);
    printf("%4s  %-14s %-14s %20s %20s %6s %10s %8s %10s %10s\n", "#", "type", "output CxHxW",
           "forward ms", "backward ms", "share", "MFLOP", "GFLOP/s", "params", "act. MiB");
    for (int i = 0; i < r->n_layers; i++) {
        const cdl_layer_profile *c = &r->layers[i];
        char shape[48], fwd[48], bwd[48];
        snprintf(shape, sizeof shape, "%dx%dx%d", c->out_c, c->out_h, c->out_w);
        snprintf(fwd, sizeof fwd, "%.3f ± %.3f", c->forward.mean_ms, c->forward.std_ms);
        snprintf(bwd, sizeof bwd, "%.3f ± %.3f", c->backward.mean_ms, c->backward.std_ms);
        /* "±" is two bytes but one column: pad by one more. */
        printf("%4d  %-14s %-14s %21s %21s %5.1f%% %10.1f %8.1f %10zu %10.2f%s%s\n", i, c->type,
               shape, fwd, bwd, 100 * c->share, c->flops / 1e6, c->gflops_per_s, c->params,
               (double)c->activation_bytes / (1 << 20), c->engine ? "  " : "",
               c->engine ? c->engine : "");
    }
    printf("step: %.3f ± %.3f ms (min %.3f, max %.3f), %.1f images/s\n", r->step.mean_ms,
           r->step.std_ms, r->step.min_ms, r->step.max_ms, r->images_per_s);
    if (p->inference)
        printf("layers: %.3f ms of the forward (%.1f%%)\n", r->layers_ms, 100 * r->layers_share);
    else
        printf("layers: %.3f ms of the step (%.1f%%); the rest zeroes gradients, fills the batch "
               "and updates the weights\n",
               r->layers_ms, 100 * r->layers_share);
    printf("peak memory: %.1f MiB (maximum resident set)\n", peak_rss_bytes() / (1 << 20));
    if (p->trace_path)
        printf("trace: %s (%zu events)\n", p->trace_path, r->trace_events);
}

static int run_profile(const Args *a, Error *e)
{
    ProfileSettings p;
    int st = read_settings(a, &p, e);
    if (st)
        return st;
    cdl_set_threads((int)p.threads);
    const int threads = omp_get_max_threads();
    cdl_model *m;
    if ((st = cli_open_model(a, p.path, !p.inference, &m, e)))
        return st;
    const cdl_timing_options o = {.batch = (int)p.batch,
                                  .steps = (int)p.iters,
                                  .warmup = (int)p.warmup,
                                  .trace_path = p.trace_path};
    cdl_profile_result r;
    e->code = cdl_model_profile(m, &o, &r, e->msg, sizeof e->msg);
    if (!e->code && !isfinite(r.loss))
        fprintf(stderr,
                "cdl: warning: the loss became %g; timings of non-finite values may not "
                "be representative\n",
                r.loss);
    if (!e->code && p.json)
        print_json(&r, &p, threads, cdl_model_on_gpu(m));
    else if (!e->code)
        print_table(&r, &p, threads, cdl_model_on_gpu(m));
    cdl_profile_result_free(&r);
    cdl_model_free(m);
    return e->code;
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
            "(one untimed step, --warmup more, then --iters timed ones; with --inference, "
            "inference forwards and the forward alone) and prints per layer: mean ± standard "
            "deviation in ms, share of the step, forward+backward "
            "FLOPs of the step (3x the forward for convolutional and connected layers), the "
            "achieved GFLOP/s, parameters and activation memory; then the step time, "
            "images/s, the layers' sum against the step, and the peak memory.",
            profile_opts, N_PROFILE_OPTS);
        return 0;
    }
    return run_profile(&a, &e) ? cli_fail(&e) : 0;
}
