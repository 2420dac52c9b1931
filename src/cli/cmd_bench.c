/* cdl bench: times training steps of a cfg's net on random data (random tokens for a sequence
 * net; no dataset needed), so
 * scripts/bench*.sh can compare cdl with a peer on the same architecture and batch. */
#include <cjson/cJSON.h>
#include <limits.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

#include "api/cdl.h"
#include "cli/cli.h"

static const OptSpec bench_opts[] = {
    {"--batch", 1, 0, "images per step (default: the cfg's batch; sets subdivisions=1)"},
    {"--steps", 1, 0, "timed training steps (default 20)"},
    {"--warmup", 1, 0, "untimed steps before timing (default 3)"},
    {"--threads", 1, 0,
     "CPU threads (default: OMP_NUM_THREADS, else the cores no other process is running on)"},
    CLI_PRECISION_OPT,
    CLI_GPU_OPT,
    {"--cuda-graph", 0, 0,
     "with --gpu: time the steps as CUDA graphs (the first warm-up step eager, the second "
     "captures; at least 2 warm-up steps)"},
    {"--inference", 0, 0,
     "time inference forwards instead (a cfg or a checkpoint, int8 ones included)"},
    {"--set", 1, 1, "override a cfg key: net.KEY=V or LAYER.KEY=V (repeatable)"},
    {"--json", 0, 0, "print one JSON object instead of a line"},
    {"--help", 0, 0, "show this help"},
};
#define N_BENCH_OPTS (int)(sizeof bench_opts / sizeof bench_opts[0])

typedef struct BenchSettings {
    const char *cfg_path;
    long batch; /* 0: the cfg's */
    long steps, warmup, threads;
    int json;
    int inference;  /* forwards without gradients */
    int cuda_graph; /* training steps replayed as CUDA graphs */
} BenchSettings;

static int read_settings(const Args *a, BenchSettings *b, Error *e)
{
    if (a->n_positional != 1)
        return error_set(e, CDL_EUSAGE, "bench needs one CFG file; see --help");
    b->cfg_path = a->positional[0];
    b->json = args_get(a, "--json") != NULL;
    b->inference = args_get(a, "--inference") != NULL;
    int st = args_get_int(a, "--batch", 0, 1, INT_MAX, &b->batch, e);
    st = st ? st : args_get_int(a, "--steps", 20, 1, INT_MAX, &b->steps, e);
    st = st ? st : args_get_int(a, "--warmup", 3, 0, INT_MAX, &b->warmup, e);
    st = st ? st : args_get_int(a, "--threads", 0, 0, 1024, &b->threads, e);
    const char *precision; /* applied by cli_open_model, as --gpu */
    int gpu;
    st = st ? st : cli_get_precision(a, &precision, e);
    st = st ? st : cli_get_gpu(a, &gpu, e);
    b->cuda_graph = args_get(a, "--cuda-graph") != NULL;
    if (!st && b->cuda_graph && (gpu < 0 || b->inference))
        return error_set(e, CDL_EUSAGE,
                         "--cuda-graph captures a GPU's training steps: it needs --gpu N and no "
                         "--inference");
    if (!st && b->cuda_graph && b->warmup < 2)
        return error_set(e, CDL_EUSAGE,
                         "--cuda-graph needs --warmup 2 or more: the first step runs eagerly and "
                         "the second captures the graphs");
    return st;
}

/* The process's peak resident memory so far, in bytes. */
static double peak_rss_bytes(void)
{
    struct rusage u;
    return getrusage(RUSAGE_SELF, &u) ? 0 : (double)u.ru_maxrss * 1024;
}

/* threads: the CPU threads the steps ran on. */
static void print_result(const BenchSettings *b, int threads, const cdl_bench_result *r)
{
    const double mib = 1 << 20;
    if (!b->json && r->seq) {
        printf("%s: batch %d x %d tokens, threads %d, %ld steps: %.0f tokens/s (%.2f ms/step), "
               "activations %.1f MiB, peak RSS %.1f MiB\n",
               b->cfg_path, r->batch, r->seq, threads, b->steps, r->images_per_s * r->seq,
               r->ms_per_step, (double)r->activation_bytes / mib, peak_rss_bytes() / mib);
        return;
    }
    if (!b->json) {
        printf("%s: batch %d, threads %d, %ld steps: %.1f images/s (%.2f ms/step), activations "
               "%.1f MiB, peak RSS %.1f MiB\n",
               b->cfg_path, r->batch, threads, b->steps, r->images_per_s, r->ms_per_step,
               (double)r->activation_bytes / mib, peak_rss_bytes() / mib);
        return;
    }
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "cfg", b->cfg_path);
    cJSON_AddNumberToObject(o, "batch", r->batch);
    cJSON_AddNumberToObject(o, "threads", threads);
    cJSON_AddNumberToObject(o, "steps", (double)b->steps);
    cJSON_AddNumberToObject(o, "images_per_s", r->images_per_s);
    if (r->seq) {
        cJSON_AddNumberToObject(o, "seq", r->seq);
        cJSON_AddNumberToObject(o, "tokens_per_s", r->images_per_s * r->seq);
    }
    cJSON_AddNumberToObject(o, "ms_per_step", r->ms_per_step);
    cJSON_AddBoolToObject(o, "cuda_graph", b->cuda_graph);
    cJSON_AddNumberToObject(o, "loss", r->loss);
    cJSON_AddNumberToObject(o, "activation_bytes", (double)r->activation_bytes);
    cJSON_AddNumberToObject(o, "peak_rss_bytes", peak_rss_bytes());
    char *text = cli_json_text(o);
    if (text)
        puts(text);
    free(text);
    cJSON_Delete(o);
}

static int run_bench(const Args *a, Error *e)
{
    BenchSettings b;
    int st = read_settings(a, &b, e);
    if (st)
        return st;
    cdl_set_threads((int)b.threads);
    const int threads = omp_get_max_threads();
    cdl_model *m;
    if ((st = cli_open_model(a, b.cfg_path, !b.inference, &m, e)))
        return st;
    const cdl_timing_options o = {.batch = (int)b.batch,
                                  .steps = (int)b.steps,
                                  .warmup = (int)b.warmup,
                                  .cuda_graph = b.cuda_graph};
    cdl_bench_result r;
    e->code = b.inference ? cdl_model_bench_inference(m, &o, &r, e->msg, sizeof e->msg)
                          : cdl_model_bench(m, &o, &r, e->msg, sizeof e->msg);
    if (!e->code && !isfinite(r.loss))
        fprintf(stderr,
                "cdl: warning: the loss became %g; timings of non-finite values may not "
                "be representative\n",
                r.loss);
    if (!e->code)
        print_result(&b, threads, &r);
    cdl_model_free(m);
    return e->code;
}

int cmd_bench(int argc, char **argv)
{
    Args a;
    Error e = {0};
    if (args_parse(argc, argv, bench_opts, N_BENCH_OPTS, &a, &e))
        return cli_fail(&e);
    if (args_get(&a, "--help")) {
        args_print_help("bench", "CFG [options]",
                        "Times training steps (or, with --inference, forwards) of the cfg's "
                        "network on random data.",
                        bench_opts, N_BENCH_OPTS);
        return 0;
    }
    return run_bench(&a, &e) ? cli_fail(&e) : 0;
}
