/* The data loader: mini-batch k holds positions [k*batch, (k+1)*batch) of the epoch order,
 * the batches do not depend on the worker count, unreadable samples fail with their file
 * name or are replaced and counted, a resumed epoch continues identically, and workers stay
 * at most `prefetch` mini-batches ahead. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "data/loader.h"
#include "data/source_files.h"

#define SEED 11

/* ---- sources ---- */

/* n in-memory 1x4x4 samples whose pixels encode their index (pixel j of sample i is
 * (3i + j) mod 256, so every sample differs) and whose label is i mod 3. */
static void memory_source(SampleSource *s, int n)
{
    Dataset d = {.n = n, .c = 1, .h = 4, .w = 4, .max_value = 1.0f, .classes = 3};
    d.pixels = malloc((size_t)n * 16);
    d.labels = malloc((size_t)n * sizeof *d.labels);
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < 16; j++)
            d.pixels[i * 16 + j] = (uint8_t)(3 * i + j);
        d.labels[i] = i % 3;
    }
    Error e = {0};
    if (source_from_dataset(s, &d, &e))
        fprintf(stderr, "memory_source: %s\n", e.msg);
}

/* The loader's output for in-memory sample i (see memory_source). */
static float memory_pixel(int i, int j)
{
    return (float)(uint8_t)(3 * i + j);
}

/* A folder dataset in a fresh temp dir: root/a and root/b holding n RGB PNGs of sizes
 * between 9x7 and 20x23, file k (sorted order) with a distinct pattern. */
typedef struct Folder {
    char root[64];
    char paths[64][128];
    int n;
} Folder;

static void write_png(const char *path, int w, int h, int seed)
{
    Image img = {3, h, w, malloc((size_t)3 * h * w * sizeof(float))};
    for (int i = 0; i < 3 * h * w; i++)
        img.data[i] = (float)((i * 7 + seed * 31) % 256) / 255.0f;
    Error e = {0};
    if (image_write_png(path, &img, &e))
        fprintf(stderr, "write_png: %s\n", e.msg);
    image_free(&img);
}

static void folder_create(Folder *f, int n)
{
    snprintf(f->root, sizeof f->root, "/tmp/cdl_loader_XXXXXX");
    if (!mkdtemp(f->root))
        perror("mkdtemp");
    char dir[96];
    for (int c = 0; c < 2; c++) {
        snprintf(dir, sizeof dir, "%s/%c", f->root, 'a' + c);
        mkdir(dir, 0777);
    }
    f->n = n;
    for (int k = 0; k < n; k++) {
        const int cls = k < n / 2 ? 0 : 1;
        char path[sizeof f->paths[k]];
        snprintf(path, sizeof path, "%s/%c/%02d.png", f->root, 'a' + cls, k);
        memcpy(f->paths[k], path, sizeof path);
        write_png(f->paths[k], 9 + k % 12, 7 + (k * 5) % 17, k);
    }
}

static void folder_remove(Folder *f)
{
    char dir[96];
    for (int k = 0; k < f->n; k++)
        unlink(f->paths[k]);
    for (int c = 0; c < 2; c++) {
        snprintf(dir, sizeof dir, "%s/%c", f->root, 'a' + c);
        rmdir(dir);
    }
    rmdir(f->root);
}

static void corrupt(const char *path)
{
    FILE *f = fopen(path, "wb");
    fputs("\x89PNG\r\n\x1a\n this is not a PNG", f);
    fclose(f);
}

static int folder_source(SampleSource *s, const Folder *f)
{
    Error e = {0};
    int st = source_folder_open(s, f->root, NULL, 0, &e);
    if (st)
        fprintf(stderr, "folder_source: %s\n", e.msg);
    return st;
}

/* ---- augmentation settings ---- */

/* The augmentation that the [net] keys give for a c x h x w net. */
static AugmentConfig augment_from_keys(const char *keys, int c, int h, int w)
{
    char text[512];
    snprintf(text, sizeof text, "[net]\n%s", keys);
    Cfg cfg;
    AugmentConfig a;
    memset(&a, 0, sizeof a);
    Error e = {0};
    if (cfg_parse_text(text, "aug.cfg", &cfg, &e) ||
        augment_config_parse(&cfg, &cfg.sections[0], c, h, w, &a, &e))
        fprintf(stderr, "augment_from_keys: %s\n", e.msg);
    cfg_free(&cfg);
    return a;
}

static const char *train_keys = "random_resized_crop=1\nflip=1\nangle=10\nmean=0.5,0.4,0.3\n"
                                "std=0.2,0.25,0.3\nerasing=0.5\n";

/* ---- running a loader ---- */

static Loader *open_loader(const SampleSource *s, const AugmentConfig *a, int batch, int workers,
                           int train, int drop_last, int skip_bad)
{
    LoaderOptions o = {batch, workers, workers ? 2 : 0, SEED, train, drop_last, skip_bad, 0, 0, 0,
                       NULL,  NULL};
    Loader *l = NULL;
    Error e = {0};
    if (loader_open(&l, s, a, &o, &e))
        fprintf(stderr, "loader_open: %s\n", e.msg);
    return l;
}

/* Every mini-batch of epochs [0, epochs), concatenated: x then y of each batch. */
typedef struct Output {
    float *x;
    int *y;
    size_t floats, labels;
    int status;
} Output;

static Output run_epochs(Loader *l, const AugmentConfig *a, int batch, int epochs)
{
    const size_t per = (size_t)a->out_c * a->out_h * a->out_w;
    const int batches = loader_batches_per_epoch(l);
    Output o = {malloc((size_t)epochs * batches * batch * per * sizeof(float)),
                malloc((size_t)epochs * batches * batch * sizeof(int)), 0, 0, 0};
    Error e = {0};
    for (int epoch = 0; epoch < epochs && !o.status; epoch++) {
        o.status = loader_start_epoch(l, epoch, 0, &e);
        for (int k = 0; k < batches && !o.status; k++) {
            int n;
            o.status = loader_next(l, o.x + o.floats, o.y + o.labels, NULL, &n, &e);
            o.floats += (size_t)n * per;
            o.labels += (size_t)n;
        }
    }
    if (o.status)
        fprintf(stderr, "run_epochs: %s\n", e.msg);
    return o;
}

static void output_free(Output *o)
{
    free(o->x);
    free(o->y);
}

/* The order the loader promises for a training epoch. */
static void expected_order(int *order, int n, int epoch)
{
    Rng rng;
    rng_seed(&rng, SEED, 0x5eed0000u + (uint64_t)epoch);
    for (int i = 0; i < n; i++)
        order[i] = i;
    rng_shuffle(&rng, order, n);
}

/* ---- tests ---- */

static void test_training_batches_follow_the_epoch_permutation(void)
{
    SampleSource s;
    memory_source(&s, 23);
    AugmentConfig a = augment_from_keys("", 1, 4, 4);
    Loader *l = open_loader(&s, &a, 5, 0, 1, 1, 0);
    CHECK(loader_batches_per_epoch(l) == 4); /* 23 / 5, the partial batch dropped */
    Output o = run_epochs(l, &a, 5, 2);
    CHECK(o.status == CDL_OK && o.labels == 40);
    int order[23];
    for (int epoch = 0; epoch < 2; epoch++) {
        expected_order(order, 23, epoch);
        for (int p = 0; p < 20; p++) {
            const int i = order[p], row = epoch * 20 + p;
            CHECK(o.y[row] == i % 3);
            CHECK(o.x[(size_t)row * 16 + 5] == memory_pixel(i, 5));
        }
    }
    output_free(&o);
    loader_close(l);
    source_free(&s);
}

/* 3 ranks with mini-batches of 2 (augmented, with workers) deliver, interleaved, the samples and
 * augmented values of 1 loader with mini-batches of 6. */
static void test_rank_shards_make_up_the_one_process_epoch(void)
{
    SampleSource s;
    memory_source(&s, 40);
    AugmentConfig a = augment_from_keys(train_keys, 3, 8, 8);
    Loader *one = open_loader(&s, &a, 6, 2, 1, 1, 0);
    CHECK(loader_batches_per_epoch(one) == 6); /* 40 / 6 */
    Output whole = run_epochs(one, &a, 6, 2);
    const size_t per = (size_t)a.out_c * a.out_h * a.out_w;
    for (int rank = 0; rank < 3; rank++) {
        LoaderOptions o = {2, 2, 4, SEED, 1, 1, 0, rank, 3, 0, NULL, NULL};
        Loader *l = NULL;
        Error e = {0};
        CHECK(loader_open(&l, &s, &a, &o, &e) == CDL_OK);
        CHECK(loader_batches_per_epoch(l) == 6);
        Output part = run_epochs(l, &a, 2, 2);
        CHECK(part.status == CDL_OK && part.labels == 24);
        for (int k = 0; k < 12; k++) /* epoch-major: 2 epochs x 6 mini-batches */
            for (int j = 0; j < 2; j++) {
                const size_t mine = (size_t)k * 2 + j, at = (size_t)k * 6 + rank * 2 + j;
                CHECK(part.y[mine] == whole.y[at]);
                CHECK(!memcmp(part.x + mine * per, whole.x + at * per, per * sizeof(float)));
            }
        output_free(&part);
        loader_close(l);
    }
    LoaderOptions bad = {2, 0, 0, SEED, 1, 0, 0, 1, 3, 0, NULL, NULL};
    Loader *l = NULL;
    Error e = {0};
    CHECK(loader_open(&l, &s, &a, &bad, &e) == CDL_EUSAGE); /* shards need drop_last */
    output_free(&whole);
    loader_close(one);
    source_free(&s);
}

static void test_eval_batches_are_in_order_with_a_partial_last_batch(void)
{
    SampleSource s;
    memory_source(&s, 23);
    AugmentConfig a = augment_from_keys("", 1, 4, 4);
    for (int workers = 0; workers <= 2; workers += 2) {
        Loader *l = open_loader(&s, &a, 5, workers, 0, 0, 0);
        CHECK(loader_batches_per_epoch(l) == 5);
        Error e = {0};
        loader_start_epoch(l, 0, 0, &e);
        float x[5 * 16];
        int y[5], n, seen = 0;
        for (int k = 0; k < 5; k++) {
            CHECK(loader_next(l, x, y, NULL, &n, &e) == CDL_OK);
            CHECK(n == (k < 4 ? 5 : 3));
            for (int i = 0; i < n; i++, seen++) {
                CHECK(y[i] == seen % 3);
                CHECK(x[i * 16 + 15] == memory_pixel(seen, 15));
            }
        }
        CHECK(seen == 23);
        CHECK(loader_next(l, x, y, NULL, &n, &e) == CDL_EUSAGE); /* the epoch is over */
        loader_close(l);
    }
    source_free(&s);
}

static void test_batches_do_not_depend_on_the_worker_count(void)
{
    Folder f;
    folder_create(&f, 14);
    SampleSource s;
    folder_source(&s, &f);
    AugmentConfig a = augment_from_keys(train_keys, 3, 8, 8);
    Output ref = {0};
    for (int workers = 0; workers <= 4; workers += workers ? 3 : 1) {
        Loader *l = open_loader(&s, &a, 4, workers, 1, 1, 0);
        Output o = run_epochs(l, &a, 4, 2);
        CHECK(o.status == CDL_OK && o.labels == 24);
        if (workers == 0) {
            ref = o;
        } else {
            CHECK(o.floats == ref.floats && !memcmp(o.x, ref.x, o.floats * sizeof *o.x));
            CHECK(!memcmp(o.y, ref.y, o.labels * sizeof *o.y));
            output_free(&o);
        }
        loader_close(l);
    }
    /* The two epochs differ: a new order and new draws. */
    CHECK(memcmp(ref.x, ref.x + ref.floats / 2, ref.floats / 2 * sizeof *ref.x) != 0);
    output_free(&ref);
    source_free(&s);
    folder_remove(&f);
}

/* LoaderOptions.batch_size: odd mini-batches 8x8, even ones 6 high and 10 wide. */
static void alternate_sizes(const void *ctx, int epoch, int k, int *w, int *h)
{
    (void)ctx, (void)epoch;
    *w = k % 2 ? 8 : 10;
    *h = k % 2 ? 8 : 6;
}

/* Mini-batches at the sizes batch_size gives (multi-scale training), through the ring of workers:
 * each is the batch a loader made for that size alone gives. */
static void test_batches_take_the_size_batch_size_gives(void)
{
    Folder f;
    folder_create(&f, 12);
    SampleSource s;
    folder_source(&s, &f);
    const AugmentConfig largest = augment_from_keys(train_keys, 3, 10, 10);
    const AugmentConfig at[2] = {augment_from_keys(train_keys, 3, 6, 10),
                                 augment_from_keys(train_keys, 3, 8, 8)};
    LoaderOptions o = {3, 2, 4, SEED, 1, 1, 0, 0, 0, 0, alternate_sizes, NULL};
    Loader *l = NULL;
    Error e = {0};
    CHECK(loader_open(&l, &s, &largest, &o, &e) == CDL_OK);
    Output want[2];
    for (int size = 0; size < 2; size++) {
        Loader *one = open_loader(&s, &at[size], 3, 0, 1, 1, 0);
        want[size] = run_epochs(one, &at[size], 3, 1);
        loader_close(one);
    }
    const size_t per[2] = {3 * 6 * 10, 3 * 8 * 8};
    float x[3 * 3 * 10 * 10];
    int y[3], n;
    CHECK(l && loader_start_epoch(l, 0, 0, &e) == CDL_OK);
    for (int k = 0; l && k < loader_batches_per_epoch(l); k++) {
        const int size = k % 2;
        CHECK(loader_next(l, x, y, NULL, &n, &e) == CDL_OK && n == 3);
        CHECK(!memcmp(x, want[size].x + (size_t)k * 3 * per[size], 3 * per[size] * sizeof *x));
        CHECK(!memcmp(y, want[size].y + (size_t)k * 3, sizeof y));
    }
    check_varies("the mini-batch", x, 3 * per[1]);
    loader_close(l);
    output_free(&want[0]);
    output_free(&want[1]);
    source_free(&s);
    folder_remove(&f);
}

static void test_resumed_epoch_gives_the_same_remaining_batches(void)
{
    Folder f;
    folder_create(&f, 14);
    SampleSource s;
    folder_source(&s, &f);
    AugmentConfig a = augment_from_keys(train_keys, 3, 8, 8);
    const size_t per = 3 * 8 * 8;
    Loader *whole = open_loader(&s, &a, 3, 2, 1, 1, 0),
           *resumed = open_loader(&s, &a, 3, 2, 1, 1, 0);
    Error e = {0};
    loader_start_epoch(whole, 1, 0, &e);
    loader_start_epoch(resumed, 2, 0, &e); /* started elsewhere first, then repositioned */
    loader_start_epoch(resumed, 1, 2, &e);
    float x[3 * 3 * 8 * 8], xr[3 * 3 * 8 * 8];
    int y[3], yr[3], n, nr;
    for (int k = 0; k < loader_batches_per_epoch(whole); k++) {
        CHECK(loader_next(whole, x, y, NULL, &n, &e) == CDL_OK);
        if (k < 2)
            continue;
        CHECK(loader_next(resumed, xr, yr, NULL, &nr, &e) == CDL_OK);
        CHECK(n == nr && !memcmp(x, xr, (size_t)n * per * sizeof *x) &&
              !memcmp(y, yr, (size_t)n * sizeof *y));
    }
    loader_close(whole);
    loader_close(resumed);
    source_free(&s);
    folder_remove(&f);
}

static void test_unreadable_sample_fails_with_its_file_name(void)
{
    Folder f;
    folder_create(&f, 6);
    corrupt(f.paths[4]);
    SampleSource s;
    folder_source(&s, &f);
    AugmentConfig a = augment_from_keys("", 3, 8, 8);
    for (int workers = 0; workers <= 2; workers += 2) {
        Loader *l = open_loader(&s, &a, 2, workers, 0, 0, 0);
        Error e = {0};
        loader_start_epoch(l, 0, 0, &e);
        float x[2 * 3 * 8 * 8];
        int y[2], n;
        CHECK(loader_next(l, x, y, NULL, &n, &e) == CDL_OK);
        CHECK(loader_next(l, x, y, NULL, &n, &e) == CDL_OK);
        CHECK(loader_next(l, x, y, NULL, &n, &e) == CDL_ERUNTIME); /* positions 4 and 5 */
        CHECK_CONTAINS(e.msg, f.paths[4]);
        loader_close(l);
    }
    source_free(&s);
    folder_remove(&f);
}

static void test_skip_bad_replaces_with_the_next_readable_sample_and_counts(void)
{
    Folder f;
    folder_create(&f, 6);
    corrupt(f.paths[2]);
    corrupt(f.paths[5]);
    SampleSource s;
    folder_source(&s, &f);
    AugmentConfig a = augment_from_keys("", 3, 8, 8);
    const size_t per = 3 * 8 * 8;
    float good[6 * 3 * 8 * 8];
    for (int k = 0; k < 6; k++) {
        Image img;
        Error e = {0};
        AugmentScratch scratch = {0};
        if (k != 2 && k != 5 && !image_load(f.paths[k], &img, &e)) {
            augment_eval(&a, &img, &scratch, good + k * per, NULL);
            image_free(&img);
        }
        augment_scratch_free(&scratch);
    }
    /* Eval order is the file order: 2 becomes 3, and 5 wraps round to 0. */
    const int expect[6] = {0, 1, 3, 3, 4, 0};
    for (int workers = 0; workers <= 2; workers += 2) {
        Loader *l = open_loader(&s, &a, 6, workers, 0, 0, 1);
        Error e = {0};
        loader_start_epoch(l, 0, 0, &e);
        float x[6 * 3 * 8 * 8];
        int y[6], n;
        CHECK(loader_next(l, x, y, NULL, &n, &e) == CDL_OK && n == 6);
        for (int i = 0; i < 6; i++) {
            CHECK(y[i] == (expect[i] < 3 ? 0 : 1));
            CHECK(!memcmp(x + i * per, good + expect[i] * per, per * sizeof *x));
        }
        CHECK(loader_skipped(l) == 2);
        loader_start_epoch(l, 1, 0, &e);
        CHECK(loader_skipped(l) == 0); /* counted per epoch */
        loader_close(l);
    }
    source_free(&s);
    folder_remove(&f);
}

/* A source of n constant 1x2x2 samples that counts its reads and takes `delay_ms` each. */
typedef struct CountingSource {
    atomic_int reads;
    int delay_ms;
} CountingSource;

static int counting_read(const SampleSource *s, int i, Image *img, int *label, Error *e)
{
    CountingSource *c = s->impl;
    atomic_fetch_add(&c->reads, 1);
    if (c->delay_ms) {
        struct timespec t = {0, c->delay_ms * 1000000L};
        nanosleep(&t, NULL);
    }
    img->c = 1;
    img->h = img->w = 2;
    img->data = calloc(4, sizeof *img->data);
    *label = i % 2;
    return img->data ? CDL_OK : error_set(e, CDL_ERUNTIME, "out of memory");
}

static SampleSource counting_source(CountingSource *c, int n, int delay_ms)
{
    atomic_init(&c->reads, 0);
    c->delay_ms = delay_ms;
    SampleSource s = {.n = n, .classes = 2, .read = counting_read, .impl = c};
    return s;
}

static void test_workers_stay_at_most_prefetch_batches_ahead(void)
{
    CountingSource c;
    SampleSource s = counting_source(&c, 100000, 0);
    AugmentConfig a = augment_from_keys("", 1, 2, 2);
    Loader *l = open_loader(&s, &a, 4, 4, 1, 1, 0); /* prefetch 2 */
    Error e = {0};
    loader_start_epoch(l, 0, 0, &e);
    float x[4 * 4];
    int y[4], n;
    CHECK(loader_next(l, x, y, NULL, &n, &e) == CDL_OK);
    struct timespec t = {0, 200 * 1000000L};
    nanosleep(&t, NULL);
    /* Batch 0 taken, batches 1 and 2 prefetched: nothing else may have been read. */
    CHECK(atomic_load(&c.reads) <= (1 + 2) * 4);
    loader_close(l);
}

static void test_close_and_restart_while_workers_are_busy(void)
{
    CountingSource c;
    SampleSource s = counting_source(&c, 1000, 5);
    AugmentConfig a = augment_from_keys("", 1, 2, 2);
    Loader *l = open_loader(&s, &a, 8, 4, 1, 1, 0);
    Error e = {0};
    loader_start_epoch(l, 0, 0, &e);
    CHECK(loader_start_epoch(l, 3, 5, &e) == CDL_OK);
    float x[8 * 4];
    int y[8], n;
    CHECK(loader_next(l, x, y, NULL, &n, &e) == CDL_OK && n == 8);
    int order[1000];
    expected_order(order, 1000, 3);
    for (int i = 0; i < 8; i++)
        CHECK(y[i] == order[5 * 8 + i] % 2);
    loader_close(l); /* workers are mid-batch: must return, leaking nothing */
}

int main(void)
{
    test_training_batches_follow_the_epoch_permutation();
    test_eval_batches_are_in_order_with_a_partial_last_batch();
    test_rank_shards_make_up_the_one_process_epoch();
    test_batches_do_not_depend_on_the_worker_count();
    test_resumed_epoch_gives_the_same_remaining_batches();
    test_batches_take_the_size_batch_size_gives();
    test_unreadable_sample_fails_with_its_file_name();
    test_skip_bad_replaces_with_the_next_readable_sample_and_counts();
    test_workers_stay_at_most_prefetch_batches_ahead();
    test_close_and_restart_while_workers_are_busy();
    return check_report("test_loader");
}
