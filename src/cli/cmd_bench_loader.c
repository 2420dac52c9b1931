/* cdl bench-loader: times the data loader alone (decode + the cfg's training augmentation)
 * over a dataset's training set, so scripts/bench-loader.sh can compare it with PyTorch's
 * DataLoader doing the same transforms on the same files. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>

#include "api/cdl.h"
#include "cli/cli.h"

static const OptSpec bench_loader_opts[] = {
    {"--data", 1, 0, "dataset .data file (required)"},
    {"--workers", 1, 0, "loader threads (default 2)"},
    {"--batch", 1, 0, "images per mini-batch (default: the cfg's batch/subdivisions)"},
    {"--epochs", 1, 0, "passes over the training set (default 3)"},
    {"--seed", 1, 0, "sample order and augmentation seed (default 1)"},
    {"--set", 1, 1, "override a cfg key: net.KEY=V (repeatable)"},
    {"--json", 0, 0, "print one JSON object instead of a line"},
    {"--help", 0, 0, "show this help"},
};
#define N_BENCH_LOADER_OPTS (int)(sizeof bench_loader_opts / sizeof bench_loader_opts[0])

static void print_result(const cdl_loader_bench_result *b, int workers, const char *data, int json)
{
    const double rate = b->images / (b->elapsed_s > 0 ? b->elapsed_s : 1e-9);
    if (!json) {
        printf("%s: %d workers, batch %d, %d images in %.3f s: %.1f images/s\n", data, workers,
               b->batch, b->images, b->elapsed_s, rate);
        return;
    }
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "data", data);
    cJSON_AddNumberToObject(o, "workers", workers);
    cJSON_AddNumberToObject(o, "batch", b->batch);
    cJSON_AddNumberToObject(o, "images", b->images);
    cJSON_AddNumberToObject(o, "elapsed_s", b->elapsed_s);
    cJSON_AddNumberToObject(o, "images_per_s", rate);
    char *text = cli_json_text(o);
    if (text)
        puts(text);
    free(text);
    cJSON_Delete(o);
}

static int run_bench_loader(const Args *a, Error *e)
{
    const char *data = args_get(a, "--data");
    if (a->n_positional != 1 || !data)
        return error_set(e, CDL_EUSAGE, "bench-loader needs one CFG and --data D; see --help");
    long workers, epochs, seed, batch;
    int st = args_get_int(a, "--workers", CDL_DEFAULT_WORKERS, 0, 256, &workers, e);
    st = st ? st : args_get_int(a, "--epochs", 3, 1, 1000000, &epochs, e);
    st = st ? st : args_get_int(a, "--seed", 1, 0, 0x7fffffff, &seed, e);
    st = st ? st : args_get_int(a, "--batch", 0, 1, 65536, &batch, e);
    if (st)
        return st;
    const cdl_open_options open = {.overrides = a->repeats,
                                   .n_overrides = a->n_repeats,
                                   .seed = (uint64_t)seed,
                                   .kind = CDL_OPEN_CFG};
    cdl_model *m;
    if ((e->code = cdl_model_open(a->positional[0], &open, &m, e->msg, sizeof e->msg)))
        return e->code;
    const cdl_loader_bench_options o = {(int)workers, (int)batch, (int)epochs, (uint64_t)seed};
    cdl_loader_bench_result r;
    e->code = cdl_model_bench_loader(m, data, &o, &r, e->msg, sizeof e->msg);
    if (!e->code)
        print_result(&r, (int)workers, data, args_get(a, "--json") != NULL);
    cdl_model_free(m);
    return e->code;
}

int cmd_bench_loader(int argc, char **argv)
{
    Args a;
    Error e = {0};
    if (args_parse(argc, argv, bench_loader_opts, N_BENCH_LOADER_OPTS, &a, &e))
        return cli_fail(&e);
    if (args_get(&a, "--help")) {
        args_print_help("bench-loader", "CFG --data D [options]",
                        "Times the data loader alone: decoding and the cfg's training "
                        "augmentation of the training set, in images/s.",
                        bench_loader_opts, N_BENCH_LOADER_OPTS);
        return 0;
    }
    return run_bench_loader(&a, &e) ? cli_fail(&e) : 0;
}
