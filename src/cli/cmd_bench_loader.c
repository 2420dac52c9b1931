/* cdl bench-loader: times the data loader alone (decode + the cfg's training augmentation)
 * over a dataset's training set, so scripts/bench-loader.sh can compare it with PyTorch's
 * DataLoader doing the same transforms on the same files. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli/cli.h"
#include "core/net.h"
#include "data/data_config.h"
#include "data/loader.h"
#include "util/timer.h"

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

typedef struct LoaderBench {
    long workers, batch, epochs, seed;
    int images;       /* timed: every mini-batch but the very first */
    double elapsed_s; /* from the first mini-batch's arrival to the last one's */
} LoaderBench;

/* Takes every mini-batch of b->epochs epochs; the first one (thread start-up, first reads)
 * is not timed. x: [batch][c][h][w], y: [batch]. */
static int time_loader(Loader *l, LoaderBench *b, float *x, int *y, Error *e)
{
    double start = 0;
    b->images = 0;
    for (int epoch = 0; epoch < b->epochs; epoch++) {
        int st = loader_start_epoch(l, epoch, 0, e);
        for (int k = 0; !st && k < loader_batches_per_epoch(l); k++) {
            int n;
            st = loader_next(l, x, y, &n, e);
            if (epoch == 0 && k == 0)
                start = time_now_s();
            else
                b->images += n;
        }
        if (st)
            return st;
    }
    b->elapsed_s = time_now_s() - start;
    return CDL_OK;
}

static void print_result(const LoaderBench *b, const char *data, int json)
{
    const double rate = b->images / (b->elapsed_s > 0 ? b->elapsed_s : 1e-9);
    if (!json) {
        printf("%s: %ld workers, batch %ld, %d images in %.3f s: %.1f images/s\n", data, b->workers,
               b->batch, b->images, b->elapsed_s, rate);
        return;
    }
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "data", data);
    cJSON_AddNumberToObject(o, "workers", (double)b->workers);
    cJSON_AddNumberToObject(o, "batch", (double)b->batch);
    cJSON_AddNumberToObject(o, "images", b->images);
    cJSON_AddNumberToObject(o, "elapsed_s", b->elapsed_s);
    cJSON_AddNumberToObject(o, "images_per_s", rate);
    char *text = cJSON_PrintUnformatted(o);
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
    LoaderBench b = {0};
    Net net = {0};
    DataConfig dc = {0};
    SampleSource train = {0}, valid = {0};
    Loader *loader = NULL;
    float *x = NULL;
    int *y = NULL;
    int st = args_get_int(a, "--workers", LOADER_DEFAULT_WORKERS, 0, 256, &b.workers, e);
    st = st ? st : args_get_int(a, "--epochs", 3, 1, 1000000, &b.epochs, e);
    st = st ? st : args_get_int(a, "--seed", 1, 0, 0x7fffffff, &b.seed, e);
    st = st ? st
            : net_build_from_file(&net, a->positional[0], a->repeats, a->n_repeats, 0,
                                  (uint64_t)b.seed, e);
    st = st ? st
            : args_get_int(a, "--batch", net.hyper.batch / net.hyper.subdivisions, 1, 65536,
                           &b.batch, e);
    st = st ? st : data_config_load(data, &dc, e);
    st = st ? st : data_config_open_sources(&dc, &train, &valid, e);
    if (!st) {
        const LoaderOptions opt = {.batch = (int)b.batch,
                                   .workers = (int)b.workers,
                                   .prefetch = LOADER_PREFETCH_PER_WORKER * (int)b.workers,
                                   .seed = (uint64_t)b.seed,
                                   .train = 1,
                                   .drop_last = 1};
        st = loader_open(&loader, &train, &net.augment, &opt, e);
    }
    if (!st && (!(x = malloc((size_t)b.batch * shape_size(net.in_shape) * sizeof *x)) ||
                !(y = malloc((size_t)b.batch * sizeof *y))))
        st = error_set(e, CDL_ERUNTIME, "out of memory");
    st = st ? st : time_loader(loader, &b, x, y, e);
    if (!st)
        print_result(&b, data, args_get(a, "--json") != NULL);
    loader_close(loader);
    free(x);
    free(y);
    source_free(&train);
    source_free(&valid);
    data_config_free(&dc);
    net_free(&net);
    return st;
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
