/* Specification tests for src/data: IDX/CSV datasets, the .data file, PNG/JPEG images and the
   bilinear resize to a net's input. Each test checks one behaviour; exit status 1 on failure. */
#include "data/data_config.h"
#include "data/dataset.h"
#include "data/image.h"

#include <dirent.h>
#include <math.h>
#include <png.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <jpeglib.h>

static int failures;
static char tmpdir[64];

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: %s: check failed: %s\n", __FILE__, __LINE__, __func__, #cond); \
            failures++;                                                                            \
            return;                                                                                \
        }                                                                                          \
    } while (0)

/* The call failed with this code and a message containing text. */
#define CHECK_ERROR(rc, err, want_code, text)                                                      \
    do {                                                                                           \
        CHECK((rc) == (want_code));                                                                \
        if (!strstr((err).msg, (text))) {                                                          \
            fprintf(stderr, "%s:%d: %s: message '%s' lacks '%s'\n", __FILE__, __LINE__, __func__,  \
                    (err).msg, (text));                                                            \
            failures++;                                                                            \
            return;                                                                                \
        }                                                                                          \
    } while (0)

#define CHECK_OK(rc, err)                                                                          \
    do {                                                                                           \
        if ((rc) != CDL_OK) {                                                                      \
            fprintf(stderr, "%s:%d: %s: unexpected error %d: %s\n", __FILE__, __LINE__, __func__,  \
                    (rc), (err).msg);                                                              \
            failures++;                                                                            \
            return;                                                                                \
        }                                                                                          \
    } while (0)

#define CHECK_NEAR(a, b, tol) CHECK(fabs((double)(a) - (double)(b)) <= (tol))

/* ---- helpers: files in the temp dir ---- */

static const char *tmp_path(char *buf, const char *name)
{
    snprintf(buf, 256, "%s/%s", tmpdir, name);
    return buf;
}

static int write_file(const char *path, const void *data, size_t bytes)
{
    FILE *f = fopen(path, "wb");
    if (!f) {
        return -1;
    }
    size_t put = fwrite(data, 1, bytes, f);
    return fclose(f) == 0 && put == bytes ? 0 : -1;
}

static int write_gz(const char *path, const void *data, size_t bytes)
{
    gzFile f = gzopen(path, "wb");
    if (!f) {
        return -1;
    }
    int put = gzwrite(f, data, (unsigned)bytes);
    return gzclose(f) == Z_OK && put == (int)bytes ? 0 : -1;
}

static long read_file(const char *path, uint8_t *buf, size_t cap)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        return -1;
    }
    size_t got = fread(buf, 1, cap, f);
    fclose(f);
    return (long)got;
}

static void put_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

/* IDX images: 3 samples of 2x4, pixel j of sample i = 7 * (8i + j) mod 256; labels 2, 0, 5. */
enum { IDX_N = 3, IDX_H = 2, IDX_W = 4, IDX_IMAGE_BYTES = 16 + IDX_N * IDX_H * IDX_W };
static const int idx_labels[IDX_N] = {2, 0, 5};

static void make_idx_images(uint8_t *buf)
{
    put_be32(buf, 0x00000803);
    put_be32(buf + 4, IDX_N);
    put_be32(buf + 8, IDX_H);
    put_be32(buf + 12, IDX_W);
    for (int j = 0; j < IDX_N * IDX_H * IDX_W; j++) {
        buf[16 + j] = (uint8_t)(7 * j);
    }
}

static void make_idx_labels(uint8_t *buf, int n)
{
    put_be32(buf, 0x00000801);
    put_be32(buf + 4, (uint32_t)n);
    for (int i = 0; i < n; i++) {
        buf[8 + i] = (uint8_t)idx_labels[i % IDX_N];
    }
}

static void check_idx_dataset(const Dataset *d)
{
    CHECK(d->n == IDX_N && d->c == 1 && d->h == IDX_H && d->w == IDX_W);
    CHECK(d->max_value == 255.0f);
    for (int j = 0; j < IDX_N * IDX_H * IDX_W; j++) {
        CHECK(d->pixels[j] == (uint8_t)(7 * j));
    }
    for (int i = 0; i < IDX_N; i++) {
        CHECK(d->labels[i] == idx_labels[i]);
    }
    CHECK(d->classes == 6);
}

/* ---- IDX ---- */

static void test_idx_raw_round_trip(void)
{
    uint8_t images[IDX_IMAGE_BYTES], labels[8 + IDX_N];
    char ip[256], lp[256];
    make_idx_images(images);
    make_idx_labels(labels, IDX_N);
    CHECK(write_file(tmp_path(ip, "raw-images-idx3-ubyte"), images, sizeof images) == 0);
    CHECK(write_file(tmp_path(lp, "raw-labels-idx1-ubyte"), labels, sizeof labels) == 0);
    Dataset d;
    Error e = {0};
    int rc = dataset_load(ip, lp, &d, &e);
    CHECK_OK(rc, e);
    check_idx_dataset(&d);
    dataset_free(&d);
}

static void test_idx_gz_round_trip(void)
{
    uint8_t images[IDX_IMAGE_BYTES], labels[8 + IDX_N];
    char ip[256], lp[256];
    make_idx_images(images);
    make_idx_labels(labels, IDX_N);
    CHECK(write_gz(tmp_path(ip, "images-idx3-ubyte.gz"), images, sizeof images) == 0);
    CHECK(write_gz(tmp_path(lp, "labels-idx1-ubyte.gz"), labels, sizeof labels) == 0);
    Dataset d;
    Error e = {0};
    int rc = dataset_load(ip, lp, &d, &e);
    CHECK_OK(rc, e);
    check_idx_dataset(&d);
    dataset_free(&d);
}

static void test_idx_truncated_raw_file_error_names_file(void)
{
    uint8_t images[IDX_IMAGE_BYTES], labels[8 + IDX_N];
    char ip[256], lp[256];
    make_idx_images(images);
    make_idx_labels(labels, IDX_N);
    CHECK(write_file(tmp_path(ip, "cut-images-idx3-ubyte"), images, sizeof images - 5) == 0);
    CHECK(write_file(tmp_path(lp, "cut-labels-idx1-ubyte"), labels, sizeof labels) == 0);
    Dataset d;
    Error e = {0};
    int rc = dataset_load(ip, lp, &d, &e);
    CHECK_ERROR(rc, e, CDL_ERUNTIME, ip);
    CHECK_ERROR(rc, e, CDL_ERUNTIME, "truncated");
    CHECK(d.pixels == NULL && d.labels == NULL);
}

static void test_idx_truncated_gz_file_error_names_file(void)
{
    /* Incompressible pixels so that cutting the .gz loses image data, not just the trailer. */
    enum { N = 64, SIDE = 16 };
    static uint8_t images[16 + N * SIDE * SIDE], gz[2 * sizeof images];
    put_be32(images, 0x00000803);
    put_be32(images + 4, N);
    put_be32(images + 8, SIDE);
    put_be32(images + 12, SIDE);
    uint32_t state = 12345;
    for (size_t j = 16; j < sizeof images; j++) {
        state = state * 1664525u + 1013904223u;
        images[j] = (uint8_t)(state >> 24);
    }
    char full[256], cut[256];
    CHECK(write_gz(tmp_path(full, "full-idx3.gz"), images, sizeof images) == 0);
    long bytes = read_file(full, gz, sizeof gz);
    CHECK(bytes > 1000);
    CHECK(write_file(tmp_path(cut, "cut-idx3.gz"), gz, (size_t)bytes / 2) == 0);
    Dataset d;
    Error e = {0};
    int rc = dataset_load(cut, full, &d, &e);
    CHECK_ERROR(rc, e, CDL_ERUNTIME, cut);
    CHECK_ERROR(rc, e, CDL_ERUNTIME, "truncated");
}

static void test_idx_label_count_mismatch_is_an_error(void)
{
    uint8_t images[IDX_IMAGE_BYTES], labels[8 + IDX_N - 1];
    char ip[256], lp[256];
    make_idx_images(images);
    make_idx_labels(labels, IDX_N - 1);
    CHECK(write_file(tmp_path(ip, "mm-images"), images, sizeof images) == 0);
    CHECK(write_file(tmp_path(lp, "mm-labels"), labels, sizeof labels) == 0);
    Dataset d;
    Error e = {0};
    int rc = dataset_load(ip, lp, &d, &e);
    CHECK_ERROR(rc, e, CDL_ERUNTIME, "holds 2 labels");
    CHECK_ERROR(rc, e, CDL_ERUNTIME, "holds 3 images");
    CHECK_ERROR(rc, e, CDL_ERUNTIME, lp);
}

static void test_idx_labels_given_as_images_reports_magic(void)
{
    uint8_t labels[8 + IDX_N];
    char lp[256];
    make_idx_labels(labels, IDX_N);
    CHECK(write_file(tmp_path(lp, "swapped-labels"), labels, sizeof labels) == 0);
    Dataset d;
    Error e = {0};
    int rc = dataset_load(lp, lp, &d, &e);
    CHECK_ERROR(rc, e, CDL_ERUNTIME, "magic 0x00000801, expected 0x00000803");
}

static void test_missing_dataset_file_names_it(void)
{
    char p[256];
    Dataset d;
    Error e = {0};
    int rc = dataset_load(tmp_path(p, "no-such-file.gz"), NULL, &d, &e);
    CHECK_ERROR(rc, e, CDL_ERUNTIME, p);
    CHECK_ERROR(rc, e, CDL_ERUNTIME, "No such file");
}

/* ---- CSV ---- */

static void test_csv_digits_layout_parses_values_labels_and_max_value(void)
{
    /* Row 1 in numpy.savetxt's default float format, row 2 as plain integers. */
    char text[8192];
    size_t len = 0;
    for (int j = 0; j < 64; j++) {
        len += (size_t)snprintf(text + len, sizeof text - len, "%.18e,", (double)(j % 17));
    }
    len += (size_t)snprintf(text + len, sizeof text - len, "%.18e\n", 7.0);
    for (int j = 0; j < 64; j++) {
        len += (size_t)snprintf(text + len, sizeof text - len, "%d,", (j + 3) % 17);
    }
    len += (size_t)snprintf(text + len, sizeof text - len, "3\r\n");
    char p[256];
    CHECK(write_gz(tmp_path(p, "digits.csv.gz"), text, len) == 0);
    Dataset d;
    Error e = {0};
    int rc = dataset_load(p, NULL, &d, &e);
    CHECK_OK(rc, e);
    CHECK(d.n == 2 && d.c == 1 && d.h == 8 && d.w == 8);
    CHECK(d.max_value == 16.0f);
    for (int row = 0; row < 2; row++) {
        for (int j = 0; j < 64; j++) {
            CHECK(d.pixels[row * 64 + j] == (j + 3 * row) % 17);
        }
    }
    CHECK(d.labels[0] == 7 && d.labels[1] == 3);
    CHECK(d.classes == 8);
    dataset_free(&d);
}

static void test_csv_bad_field_error_has_file_and_line(void)
{
    char p[256], want[300];
    const char *text = "1,2,3,4,0\n\n1,x2,3,4,1\n";
    CHECK(write_file(tmp_path(p, "bad.csv"), text, strlen(text)) == 0);
    Dataset d;
    Error e = {0};
    int rc = dataset_load(p, NULL, &d, &e);
    snprintf(want, sizeof want, "%s:3:", p);
    CHECK_ERROR(rc, e, CDL_ERUNTIME, want);
    CHECK_ERROR(rc, e, CDL_ERUNTIME, "'x2'");
}

static void test_csv_ragged_rows_are_an_error(void)
{
    char p[256], want[300];
    const char *text = "1,2,3,4,0\n1,2,3,4,5,1\n";
    CHECK(write_file(tmp_path(p, "ragged.csv"), text, strlen(text)) == 0);
    Dataset d;
    Error e = {0};
    int rc = dataset_load(p, NULL, &d, &e);
    snprintf(want, sizeof want, "%s:2:", p);
    CHECK_ERROR(rc, e, CDL_ERUNTIME, want);
}

static void test_csv_non_square_row_is_an_error(void)
{
    char p[256];
    const char *text = "1,2,3,0\n";
    CHECK(write_file(tmp_path(p, "three.csv"), text, strlen(text)) == 0);
    Dataset d;
    Error e = {0};
    int rc = dataset_load(p, NULL, &d, &e);
    CHECK_ERROR(rc, e, CDL_ERUNTIME, "side*side");
}

static void test_empty_dataset_file_is_an_error(void)
{
    char p[256], q[256];
    CHECK(write_file(tmp_path(p, "empty.csv"), "", 0) == 0);
    CHECK(write_file(tmp_path(q, "blank.csv"), "\n \n", 3) == 0);
    Dataset d;
    Error e = {0};
    int rc = dataset_load(p, NULL, &d, &e);
    CHECK_ERROR(rc, e, CDL_ERUNTIME, p);
    rc = dataset_load(q, NULL, &d, &e);
    CHECK_ERROR(rc, e, CDL_ERUNTIME, q);
    CHECK_ERROR(rc, e, CDL_ERUNTIME, "no samples");
}

/* ---- split and batches ---- */

/* 10 samples of 1x1x2, pixels (i, 100 + i), label i % 4. */
static int make_small_dataset(Dataset *d)
{
    *d = (Dataset){.n = 10, .c = 1, .h = 1, .w = 2, .max_value = 2.0f, .classes = 4};
    d->pixels = malloc(20);
    d->labels = malloc(10 * sizeof *d->labels);
    if (!d->pixels || !d->labels) {
        return -1;
    }
    for (int i = 0; i < 10; i++) {
        d->pixels[2 * i] = (uint8_t)i;
        d->pixels[2 * i + 1] = (uint8_t)(100 + i);
        d->labels[i] = i % 4;
    }
    return 0;
}

static void test_split_tail_moves_last_fraction_in_order(void)
{
    Dataset d, held;
    Error e = {0};
    CHECK(make_small_dataset(&d) == 0);
    int rc = dataset_split_tail(&d, 0.3f, &held, &e);
    CHECK_OK(rc, e);
    CHECK(d.n == 7 && held.n == 3);
    CHECK(held.c == 1 && held.h == 1 && held.w == 2 && held.max_value == 2.0f && held.classes == 4);
    for (int i = 0; i < 7; i++) {
        CHECK(d.pixels[2 * i] == i && d.labels[i] == i % 4);
    }
    for (int i = 0; i < 3; i++) {
        CHECK(held.pixels[2 * i] == 7 + i && held.pixels[2 * i + 1] == 107 + i);
        CHECK(held.labels[i] == (7 + i) % 4);
    }
    dataset_free(&d);
    dataset_free(&held);
}

static void test_split_tail_rejects_fraction_outside_0_1(void)
{
    Dataset d, held;
    Error e = {0};
    CHECK(make_small_dataset(&d) == 0);
    int rc = dataset_split_tail(&d, 1.0f, &held, &e);
    dataset_free(&d);
    CHECK_ERROR(rc, e, CDL_EUSAGE, "valid_split");
}

static void test_fill_batch_scales_pixels_and_copies_labels(void)
{
    Dataset d;
    CHECK(make_small_dataset(&d) == 0);
    int idx[2] = {9, 2}, y[2] = {-1, -1};
    float x[4];
    dataset_fill_batch(&d, idx, 2, x, y);
    CHECK(x[0] == 4.5f && x[1] == 54.5f && x[2] == 1.0f && x[3] == 51.0f);
    CHECK(y[0] == 1 && y[1] == 2);
    dataset_fill_batch(&d, idx, 1, x, NULL);
    CHECK(x[0] == 4.5f);
    dataset_free(&d);
}

/* ---- .data files ---- */

static void test_data_config_parses_keys_names_and_relative_paths(void)
{
    char sub[256], dp[256], np[256], tp[256];
    CHECK(mkdir(tmp_path(sub, "cfgdir"), 0700) == 0);
    const char *names = "shirt\n  sneaker \r\nbag\n\n";
    const char *text = "# a comment\n"
                       "; another\n"
                       "classes = 3   # inline comment\n"
                       "train=digits-train.csv\n"
                       "labels=cfgdir.names\n"
                       "valid_split=0.25\n"
                       "backup=backup/\n";
    CHECK(write_file(tmp_path(np, "cfgdir/cfgdir.names"), names, strlen(names)) == 0);
    CHECK(write_file(tmp_path(tp, "cfgdir/digits-train.csv"), "0,0,0,0,1\n", 10) == 0);
    CHECK(write_file(tmp_path(dp, "cfgdir/x.data"), text, strlen(text)) == 0);
    DataConfig dc;
    Error e = {0};
    int rc = data_config_load(dp, &dc, &e);
    CHECK_OK(rc, e);
    CHECK(dc.classes == 3 && dc.n_names == 3);
    CHECK(!strcmp(dc.names[0], "shirt") && !strcmp(dc.names[1], "sneaker") &&
          !strcmp(dc.names[2], "bag"));
    CHECK(dc.train && !strcmp(dc.train, tp));
    CHECK(dc.names_path && !strcmp(dc.names_path, np));
    CHECK(dc.valid == NULL && dc.train_labels == NULL);
    CHECK(dc.valid_split == 0.25f);
    data_config_free(&dc);
}

static void test_data_config_without_names_numbers_classes(void)
{
    char dp[256];
    const char *text = "classes=3\n";
    CHECK(write_file(tmp_path(dp, "nonames.data"), text, strlen(text)) == 0);
    DataConfig dc;
    Error e = {0};
    int rc = data_config_load(dp, &dc, &e);
    CHECK_OK(rc, e);
    CHECK(dc.n_names == 3);
    CHECK(!strcmp(dc.names[0], "0") && !strcmp(dc.names[1], "1") && !strcmp(dc.names[2], "2"));
    data_config_free(&dc);
}

static void test_data_config_unknown_key_names_line_and_valid_keys(void)
{
    char dp[256], want[300];
    const char *text = "classes=2\n\nepochs=3\n";
    CHECK(write_file(tmp_path(dp, "unknown.data"), text, strlen(text)) == 0);
    DataConfig dc;
    Error e = {0};
    int rc = data_config_load(dp, &dc, &e);
    snprintf(want, sizeof want, "%s:3: unknown key 'epochs'", dp);
    CHECK_ERROR(rc, e, CDL_EUSAGE, want);
    CHECK_ERROR(rc, e, CDL_EUSAGE, "train_labels");
}

static void test_data_config_names_count_must_equal_classes(void)
{
    char dp[256], np[256];
    const char *text = "classes=4\nnames=two.names\n";
    CHECK(write_file(tmp_path(np, "two.names"), "a\nb\n", 4) == 0);
    CHECK(write_file(tmp_path(dp, "count.data"), text, strlen(text)) == 0);
    DataConfig dc;
    Error e = {0};
    int rc = data_config_load(dp, &dc, &e);
    CHECK_ERROR(rc, e, CDL_EUSAGE, "holds 2 names but classes=4");
}

static void test_data_config_missing_file_is_runtime_error(void)
{
    char dp[256];
    DataConfig dc;
    Error e = {0};
    int rc = data_config_load(tmp_path(dp, "absent.data"), &dc, &e);
    CHECK_ERROR(rc, e, CDL_ERUNTIME, dp);
}

static void test_data_config_load_sets_splits_train_tail(void)
{
    char dp[256], tp[256];
    const char *csv = "0,1,2,3,0\n1,1,1,1,1\n2,2,2,2,2\n3,3,3,3,0\n";
    const char *text = "classes=3\ntrain=sets.csv\nvalid_split=0.25\n";
    CHECK(write_file(tmp_path(tp, "sets.csv"), csv, strlen(csv)) == 0);
    CHECK(write_file(tmp_path(dp, "sets.data"), text, strlen(text)) == 0);
    DataConfig dc;
    Dataset train, valid;
    Error e = {0};
    int rc = data_config_load(dp, &dc, &e);
    CHECK_OK(rc, e);
    rc = data_config_load_sets(&dc, &train, &valid, &e);
    data_config_free(&dc);
    CHECK_OK(rc, e);
    CHECK(train.n == 3 && valid.n == 1 && train.h == 2 && valid.w == 2);
    CHECK(valid.pixels[0] == 3 && valid.labels[0] == 0);
    CHECK(train.classes == 3 && valid.classes == 3);
    dataset_free(&train);
    dataset_free(&valid);
}

static void test_data_config_label_beyond_classes_is_an_error(void)
{
    char dp[256], tp[256];
    const char *csv = "0,1,2,3,0\n1,1,1,1,5\n";
    const char *text = "classes=3\ntrain=big-label.csv\n";
    CHECK(write_file(tmp_path(tp, "big-label.csv"), csv, strlen(csv)) == 0);
    CHECK(write_file(tmp_path(dp, "big-label.data"), text, strlen(text)) == 0);
    DataConfig dc;
    Dataset train, valid;
    Error e = {0};
    int rc = data_config_load(dp, &dc, &e);
    CHECK_OK(rc, e);
    rc = data_config_load_sets(&dc, &train, &valid, &e);
    data_config_free(&dc);
    CHECK_ERROR(rc, e, CDL_EUSAGE, "label 5 but classes=3");
    CHECK(train.pixels == NULL && valid.pixels == NULL);
}

/* ---- images ---- */

/* Writes img as PNG file name in the temporary folder and reads it back into back. */
static void png_round_trip(const char *name, const Image *img, Image *back)
{
    char p[256];
    Error e = {0};
    int rc = image_write_png(tmp_path(p, name), img, &e);
    CHECK_OK(rc, e);
    rc = image_load(p, back, &e);
    CHECK_OK(rc, e);
}

static void test_png_gray_round_trip_is_exact(void)
{
    float px[3 * 5];
    for (int i = 0; i < 15; i++) {
        px[i] = (float)(17 * i) / 255.0f;
    }
    Image img = {.c = 1, .h = 3, .w = 5, .data = px}, back;
    png_round_trip("gray.png", &img, &back);
    CHECK(back.c == 1 && back.h == 3 && back.w == 5);
    for (int i = 0; i < 15; i++) {
        CHECK(back.data[i] == px[i]);
    }
    image_free(&back);
}

/* Every 8-bit value becomes the same float from an in-memory dataset (IDX, CIFAR) as from a
 * PNG file, v / 255 as torchvision's ToTensor: a run from either source is bit-identical. */
static void test_dataset_pixels_equal_png_decoding(void)
{
    Dataset d = {.n = 1, .c = 1, .h = 16, .w = 16, .max_value = 255.0f, .classes = 1};
    uint8_t pixels[256];
    int idx = 0;
    float x[256];
    for (int v = 0; v < 256; v++)
        pixels[v] = (uint8_t)v;
    d.pixels = pixels;
    dataset_fill_batch(&d, &idx, 1, x, NULL);
    Image img = {.c = 1, .h = 16, .w = 16, .data = x}, back;
    png_round_trip("levels.png", &img, &back);
    for (int v = 0; v < 256; v++) {
        CHECK(x[v] == (float)v / 255.0f);
        CHECK(back.data[v] == x[v]);
    }
    image_free(&back);
}

static void test_png_rgb_round_trip_is_exact(void)
{
    float px[3 * 4 * 6];
    for (int i = 0; i < 72; i++) {
        px[i] = (float)((i * 37) % 256) / 255.0f;
    }
    Image img = {.c = 3, .h = 4, .w = 6, .data = px}, back;
    png_round_trip("rgb.png", &img, &back);
    CHECK(back.c == 3 && back.h == 4 && back.w == 6);
    for (int i = 0; i < 72; i++) {
        CHECK(back.data[i] == px[i]);
    }
    image_free(&back);
}

static void test_png_alpha_is_dropped(void)
{
    float px[4] = {0.2f, 0.6f, 1.0f, 0.0f}; /* gray 0.2, 0.6 with alpha 1, 0 (1x2) */
    Image img = {.c = 2, .h = 1, .w = 2, .data = px}, back;
    png_round_trip("gray-alpha.png", &img, &back);
    CHECK(back.c == 1 && back.h == 1 && back.w == 2);
    CHECK(back.data[0] == 51.0f / 255.0f && back.data[1] == 153.0f / 255.0f);
    image_free(&back);
}

/* Writes rows (already in PNG byte layout) with the given IHDR; palette may be NULL. */
static int write_png_raw(const char *path, int w, int h, int depth, int color,
                         const png_color *palette, int n_palette, uint8_t *const *rows)
{
    FILE *f = fopen(path, "wb");
    if (!f) {
        return -1;
    }
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png_create_info_struct(png);
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info);
        fclose(f);
        return -1;
    }
    png_init_io(png, f);
    png_set_IHDR(png, info, (png_uint_32)w, (png_uint_32)h, depth, color, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    if (palette) {
        png_set_PLTE(png, info, palette, n_palette);
    }
    png_write_info(png, info);
    png_write_image(png, (png_bytepp)rows);
    png_write_end(png, info);
    png_destroy_write_struct(&png, &info);
    return fclose(f);
}

static void test_png_palette_expands_to_rgb(void)
{
    const png_color palette[3] = {{255, 0, 0}, {0, 128, 0}, {10, 20, 30}};
    uint8_t row0[2] = {0, 2}, row1[2] = {1, 1};
    uint8_t *rows[2] = {row0, row1};
    char p[256];
    CHECK(write_png_raw(tmp_path(p, "palette.png"), 2, 2, 8, PNG_COLOR_TYPE_PALETTE, palette, 3,
                        rows) == 0);
    Image img;
    Error e = {0};
    int rc = image_load(p, &img, &e);
    CHECK_OK(rc, e);
    CHECK(img.c == 3 && img.h == 2 && img.w == 2);
    const int index[4] = {0, 2, 1, 1};
    for (int i = 0; i < 4; i++) {
        const png_color *col = &palette[index[i]];
        CHECK(img.data[0 * 4 + i] == col->red / 255.0f);
        CHECK(img.data[1 * 4 + i] == col->green / 255.0f);
        CHECK(img.data[2 * 4 + i] == col->blue / 255.0f);
    }
    image_free(&img);
}

static void test_png_16_bit_keeps_full_precision(void)
{
    const uint16_t values[3] = {0, 12345, 65535};
    uint8_t row[6];
    for (int i = 0; i < 3; i++) {
        row[2 * i] = (uint8_t)(values[i] >> 8); /* PNG samples are big-endian */
        row[2 * i + 1] = (uint8_t)values[i];
    }
    uint8_t *rows[1] = {row};
    char p[256];
    CHECK(write_png_raw(tmp_path(p, "gray16.png"), 3, 1, 16, PNG_COLOR_TYPE_GRAY, NULL, 0, rows) ==
          0);
    Image img;
    Error e = {0};
    int rc = image_load(p, &img, &e);
    CHECK_OK(rc, e);
    CHECK(img.c == 1 && img.h == 1 && img.w == 3);
    for (int i = 0; i < 3; i++) {
        CHECK(img.data[i] == values[i] / 65535.0f);
    }
    image_free(&img);
}

static void test_png_wider_than_limit_is_too_large(void)
{
    enum { W = IMAGE_MAX_SIDE + 1 };
    static uint8_t row[W];
    uint8_t *rows[1] = {row};
    char p[256];
    CHECK(write_png_raw(tmp_path(p, "wide.png"), W, 1, 8, PNG_COLOR_TYPE_GRAY, NULL, 0, rows) == 0);
    Image img;
    Error e = {0};
    int rc = image_load(p, &img, &e);
    CHECK_ERROR(rc, e, CDL_ERUNTIME, "image too large");
    CHECK_ERROR(rc, e, CDL_ERUNTIME, p);
}

static void test_png_truncated_is_an_error(void)
{
    float px[32 * 32];
    uint32_t state = 99;
    for (int i = 0; i < 32 * 32; i++) {
        state = state * 1664525u + 1013904223u;
        px[i] = (float)(state >> 24) / 255.0f;
    }
    Image img = {.c = 1, .h = 32, .w = 32, .data = px};
    char p[256], cut[256];
    static uint8_t bytes[1 << 16];
    Error e = {0};
    int rc = image_write_png(tmp_path(p, "whole.png"), &img, &e);
    CHECK_OK(rc, e);
    long n = read_file(p, bytes, sizeof bytes);
    CHECK(n > 200);
    CHECK(write_file(tmp_path(cut, "half.png"), bytes, (size_t)n / 2) == 0);
    Image back;
    rc = image_load(cut, &back, &e);
    CHECK_ERROR(rc, e, CDL_ERUNTIME, cut);
    CHECK_ERROR(rc, e, CDL_ERUNTIME, "corrupt or truncated PNG");
    CHECK(back.data == NULL);
}

/* Writes interleaved samples as a baseline JPEG at quality 100 (all quantisers 1), 4:4:4, float
   DCT: what remains is the 8-bit rounding of RGB -> YCbCr and back, at most ~1 level each way. */
static int write_jpeg(const char *path, int w, int h, int components, J_COLOR_SPACE space,
                      const uint8_t *samples)
{
    FILE *f = fopen(path, "wb");
    if (!f) {
        return -1;
    }
    struct jpeg_compress_struct cinfo;
    struct jpeg_error_mgr err;
    cinfo.err = jpeg_std_error(&err);
    jpeg_create_compress(&cinfo);
    jpeg_stdio_dest(&cinfo, f);
    cinfo.image_width = (JDIMENSION)w;
    cinfo.image_height = (JDIMENSION)h;
    cinfo.input_components = components;
    cinfo.in_color_space = space;
    jpeg_set_defaults(&cinfo);
    jpeg_set_quality(&cinfo, 100, TRUE);
    cinfo.comp_info[0].h_samp_factor = cinfo.comp_info[0].v_samp_factor = 1; /* no 4:2:0 */
    cinfo.dct_method = JDCT_FLOAT;
    jpeg_start_compress(&cinfo, TRUE);
    while (cinfo.next_scanline < cinfo.image_height) {
        JSAMPROW row = (JSAMPROW)(samples + (size_t)cinfo.next_scanline * w * components);
        jpeg_write_scanlines(&cinfo, &row, 1);
    }
    jpeg_finish_compress(&cinfo);
    jpeg_destroy_compress(&cinfo);
    return fclose(f);
}

static void test_jpeg_rgb_reads_back_within_2_levels(void)
{
    enum { W = 16, H = 16 };
    uint8_t samples[W * H * 3];
    for (int y = 0; y < H; y++) {
        for (int x = 0; x < W; x++) {
            uint8_t *s = samples + (y * W + x) * 3;
            s[0] = (uint8_t)(16 * x);
            s[1] = (uint8_t)(16 * y);
            s[2] = 128;
        }
    }
    char p[256];
    CHECK(write_jpeg(tmp_path(p, "rgb.jpg"), W, H, 3, JCS_RGB, samples) == 0);
    Image img;
    Error e = {0};
    int rc = image_load(p, &img, &e);
    CHECK_OK(rc, e);
    CHECK(img.c == 3 && img.h == H && img.w == W);
    for (int i = 0; i < W * H; i++) {
        for (int ch = 0; ch < 3; ch++) {
            CHECK_NEAR(img.data[ch * W * H + i] * 255.0f, samples[i * 3 + ch], 2.0);
        }
    }
    image_free(&img);
}

static void test_jpeg_gray_stays_one_channel(void)
{
    enum { W = 8, H = 8 };
    uint8_t samples[W * H];
    for (int i = 0; i < W * H; i++) {
        samples[i] = (uint8_t)(4 * i);
    }
    char p[256];
    CHECK(write_jpeg(tmp_path(p, "gray.jpg"), W, H, 1, JCS_GRAYSCALE, samples) == 0);
    Image img;
    Error e = {0};
    int rc = image_load(p, &img, &e);
    CHECK_OK(rc, e);
    CHECK(img.c == 1 && img.h == H && img.w == W);
    for (int i = 0; i < W * H; i++) {
        CHECK_NEAR(img.data[i] * 255.0f, samples[i], 2.0);
    }
    image_free(&img);
}

static void test_jpeg_cmyk_converts_to_rgb(void)
{
    /* libjpeg writes CMYK with an Adobe marker, meaning inverted samples (255 = no ink):
       C=255 (no cyan), M=0 (full magenta), Y=255, K=255 (no black) is magenta, RGB (1, 0, 1). */
    enum { W = 8, H = 8 };
    uint8_t samples[W * H * 4];
    for (int i = 0; i < W * H; i++) {
        samples[4 * i] = 255;
        samples[4 * i + 1] = 0;
        samples[4 * i + 2] = 255;
        samples[4 * i + 3] = 255;
    }
    char p[256];
    CHECK(write_jpeg(tmp_path(p, "cmyk.jpg"), W, H, 4, JCS_CMYK, samples) == 0);
    Image img;
    Error e = {0};
    int rc = image_load(p, &img, &e);
    CHECK_OK(rc, e);
    CHECK(img.c == 3 && img.h == H && img.w == W);
    for (int i = 0; i < W * H; i++) {
        CHECK_NEAR(img.data[i], 1.0, 2.0 / 255);
        CHECK_NEAR(img.data[W * H + i], 0.0, 2.0 / 255);
        CHECK_NEAR(img.data[2 * W * H + i], 1.0, 2.0 / 255);
    }
    image_free(&img);
}

static void test_jpeg_truncated_is_an_error(void)
{
    enum { W = 64, H = 64 };
    static uint8_t samples[W * H * 3], bytes[1 << 17];
    uint32_t state = 7;
    for (int i = 0; i < W * H * 3; i++) {
        state = state * 1664525u + 1013904223u;
        samples[i] = (uint8_t)(state >> 24);
    }
    char p[256], cut[256];
    CHECK(write_jpeg(tmp_path(p, "whole.jpg"), W, H, 3, JCS_RGB, samples) == 0);
    long n = read_file(p, bytes, sizeof bytes);
    CHECK(n > 1000);
    CHECK(write_file(tmp_path(cut, "half.jpg"), bytes, (size_t)n / 2) == 0);
    Image img;
    Error e = {0};
    int rc = image_load(cut, &img, &e);
    CHECK_ERROR(rc, e, CDL_ERUNTIME, cut);
    CHECK_ERROR(rc, e, CDL_ERUNTIME, "corrupt or truncated JPEG");
    CHECK(img.data == NULL);
}

static void test_non_image_file_is_not_png_or_jpeg(void)
{
    char p[256];
    CHECK(write_file(tmp_path(p, "notes.png"), "hello\n", 6) == 0);
    Image img;
    Error e = {0};
    int rc = image_load(p, &img, &e);
    CHECK_ERROR(rc, e, CDL_ERUNTIME, "not a PNG or JPEG image");
    CHECK_ERROR(rc, e, CDL_ERUNTIME, p);
}

static void test_empty_or_missing_image_file_is_an_error(void)
{
    char p[256], q[256];
    CHECK(write_file(tmp_path(p, "empty.jpg"), "", 0) == 0);
    Image img;
    Error e = {0};
    int rc = image_load(p, &img, &e);
    CHECK_ERROR(rc, e, CDL_ERUNTIME, "empty");
    CHECK_ERROR(rc, e, CDL_ERUNTIME, p);
    rc = image_load(tmp_path(q, "missing.jpg"), &img, &e);
    CHECK_ERROR(rc, e, CDL_ERUNTIME, "cannot open");
    CHECK_ERROR(rc, e, CDL_ERUNTIME, q);
}

/* ---- image_to_input ---- */

static void test_resize_of_constant_image_stays_constant(void)
{
    float px[3 * 5 * 7], out[3 * 13 * 11];
    for (int i = 0; i < 3 * 5 * 7; i++) {
        px[i] = 0.25f + 0.25f * (float)(i / 35);
    }
    Image img = {.c = 3, .h = 5, .w = 7, .data = px};
    image_to_input(&img, 3, 13, 11, out); /* up */
    for (int i = 0; i < 3 * 13 * 11; i++) {
        CHECK_NEAR(out[i], 0.25f + 0.25f * (float)(i / (13 * 11)), 1e-6);
    }
    image_to_input(&img, 3, 2, 3, out); /* down */
    for (int i = 0; i < 3 * 2 * 3; i++) {
        CHECK_NEAR(out[i], 0.25f + 0.25f * (float)(i / 6), 1e-6);
    }
}

static void test_resize_2x2_to_4x4_follows_align_corners_false(void)
{
    /* src = (dst + 0.5) / 2 - 0.5 = -0.25, 0.25, 0.75, 1.25, clamped to [0, 1], gives weights
       on (in[0], in[1]) of (1, 0), (0.75, 0.25), (0.25, 0.75), (0, 1) along each axis. With
       in[y][x] = 2y + x the result is rowpart[y] + colpart[x]: (0, .5, 1.5, 2) + (0, .25, .75, 1).
     */
    float px[4] = {0, 1, 2, 3}, out[16];
    const float want[16] = {0.0f, 0.25f, 0.75f, 1.0f, 0.5f, 0.75f, 1.25f, 1.5f,
                            1.5f, 1.75f, 2.25f, 2.5f, 2.0f, 2.25f, 2.75f, 3.0f};
    Image img = {.c = 1, .h = 2, .w = 2, .data = px};
    image_to_input(&img, 1, 4, 4, out);
    for (int i = 0; i < 16; i++) {
        CHECK_NEAR(out[i], want[i], 1e-6);
    }
}

static void test_resize_same_size_is_identity(void)
{
    float px[6] = {0.1f, 0.9f, 0.3f, 0.7f, 0.5f, 0.0f}, out[6];
    Image img = {.c = 1, .h = 2, .w = 3, .data = px};
    image_to_input(&img, 1, 2, 3, out);
    for (int i = 0; i < 6; i++) {
        CHECK(out[i] == px[i]);
    }
}

static void test_resize_down_widens_triangle_filter_like_pil(void)
{
    /* 4 -> 2: scale 2, centres 1 and 3, triangle of half-width 2 over pixel centres i + 0.5:
       out[0] = (0.75 in0 + 0.75 in1 + 0.25 in2) / 1.75, out[1] = (0.25 in1 + 0.75 in2 +
       0.75 in3) / 1.75 (PIL BILINEAR; torch antialias=True). */
    float px[4] = {0, 1, 2, 3}, out[2];
    Image img = {.c = 1, .h = 1, .w = 4, .data = px};
    image_to_input(&img, 1, 1, 2, out);
    CHECK_NEAR(out[0], 1.25 / 1.75, 1e-6);
    CHECK_NEAR(out[1], 4.0 / 1.75, 1e-6);
}

/* The cubic convolution with a = -0.5: 1.5|x|^3 - 2.5|x|^2 + 1 below 1, -0.5|x|^3 + 2.5|x|^2 -
   4|x| + 2 below 2. */
static double cubic(double x)
{
    x = fabs(x);
    return x < 1 ? (1.5 * x - 2.5) * x * x + 1 : x < 2 ? ((-0.5 * x + 2.5) * x - 4) * x + 2 : 0;
}

static void test_bicubic_down_widens_the_cubic_like_pil(void)
{
    /* 4 -> 2: scale 2, centres 1 and 3, the cubic stretched to half-width 4 over pixel centres
       i + 0.5, all four pixels in reach of each output, weights normalised to sum 1 (PIL
       BICUBIC; torch antialias=True): out[0] = sum_i in_i cubic((i + 0.5 - 1) / 2) / norm. */
    float px[4] = {0, 0, 1, 1}, out[2];
    Image img = {.c = 1, .h = 1, .w = 4, .data = px};
    ImageScratch s = {0};
    CHECK(image_resize_with(&img, NULL, 1, 1, 2, RESIZE_BICUBIC, &s, out) == CDL_OK);
    image_scratch_free(&s);
    for (int o = 0; o < 2; o++) {
        double sum = 0, norm = 0;
        for (int i = 0; i < 4; i++) {
            const double w = cubic((i + 0.5 - (2 * o + 1)) / 2.0);
            sum += w * px[i];
            norm += w;
        }
        CHECK_NEAR(out[o], sum / norm, 1e-6);
    }
    CHECK_NEAR(out[0], 0.15625 / 1.890625, 1e-6); /* the same numbers, worked by hand */
}

static void test_rgb_to_gray_uses_itu_601_luma(void)
{
    float px[3] = {1.0f, 0.5f, 0.25f}, out[1];
    Image img = {.c = 3, .h = 1, .w = 1, .data = px};
    image_to_input(&img, 1, 1, 1, out);
    CHECK_NEAR(out[0], 0.299 * 1.0 + 0.587 * 0.5 + 0.114 * 0.25, 1e-6);
}

static void test_gray_to_rgb_replicates(void)
{
    float px[2] = {0.2f, 0.8f}, out[6];
    Image img = {.c = 1, .h = 1, .w = 2, .data = px};
    image_to_input(&img, 3, 1, 2, out);
    for (int ch = 0; ch < 3; ch++) {
        CHECK(out[2 * ch] == 0.2f && out[2 * ch + 1] == 0.8f);
    }
}

/* ---- the real Fashion-MNIST, when installed ---- */

static void test_fashion_mnist_train_loads(void)
{
    const char *images = "/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz";
    const char *labels = "/usr/share/datasets/fashion-mnist/train-labels-idx1-ubyte.gz";
    if (access(images, R_OK) != 0 || access(labels, R_OK) != 0) {
        printf("skip: %s absent (package dataset-fashion-mnist)\n", images);
        return;
    }
    Dataset d;
    Error e = {0};
    int rc = dataset_load(images, labels, &d, &e);
    CHECK_OK(rc, e);
    CHECK(d.n == 60000 && d.c == 1 && d.h == 28 && d.w == 28);
    CHECK(d.classes == 10);
    int count[10] = {0};
    for (int i = 0; i < d.n; i++) {
        CHECK(d.labels[i] >= 0 && d.labels[i] < 10);
        count[d.labels[i]]++;
    }
    dataset_free(&d);
    for (int k = 0; k < 10; k++) {
        CHECK(count[k] == 6000); /* Fashion-MNIST train is balanced */
    }
}

static void remove_tree(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) {
        return;
    }
    struct dirent *ent;
    char path[512];
    while ((ent = readdir(d))) {
        if (!strcmp(ent->d_name, ".") || !strcmp(ent->d_name, "..")) {
            continue;
        }
        snprintf(path, sizeof path, "%s/%s", dir, ent->d_name);
        if (unlink(path) != 0) {
            remove_tree(path);
            rmdir(path);
        }
    }
    closedir(d);
    rmdir(dir);
}

int main(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/cdl-test-data-XXXXXX");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    test_idx_raw_round_trip();
    test_idx_gz_round_trip();
    test_idx_truncated_raw_file_error_names_file();
    test_idx_truncated_gz_file_error_names_file();
    test_idx_label_count_mismatch_is_an_error();
    test_idx_labels_given_as_images_reports_magic();
    test_missing_dataset_file_names_it();
    test_csv_digits_layout_parses_values_labels_and_max_value();
    test_csv_bad_field_error_has_file_and_line();
    test_csv_ragged_rows_are_an_error();
    test_csv_non_square_row_is_an_error();
    test_empty_dataset_file_is_an_error();
    test_split_tail_moves_last_fraction_in_order();
    test_split_tail_rejects_fraction_outside_0_1();
    test_fill_batch_scales_pixels_and_copies_labels();
    test_data_config_parses_keys_names_and_relative_paths();
    test_data_config_without_names_numbers_classes();
    test_data_config_unknown_key_names_line_and_valid_keys();
    test_data_config_names_count_must_equal_classes();
    test_data_config_missing_file_is_runtime_error();
    test_data_config_load_sets_splits_train_tail();
    test_data_config_label_beyond_classes_is_an_error();
    test_png_gray_round_trip_is_exact();
    test_dataset_pixels_equal_png_decoding();
    test_png_rgb_round_trip_is_exact();
    test_png_alpha_is_dropped();
    test_png_palette_expands_to_rgb();
    test_png_16_bit_keeps_full_precision();
    test_png_wider_than_limit_is_too_large();
    test_png_truncated_is_an_error();
    test_jpeg_rgb_reads_back_within_2_levels();
    test_jpeg_gray_stays_one_channel();
    test_jpeg_cmyk_converts_to_rgb();
    test_jpeg_truncated_is_an_error();
    test_non_image_file_is_not_png_or_jpeg();
    test_empty_or_missing_image_file_is_an_error();
    test_resize_of_constant_image_stays_constant();
    test_resize_2x2_to_4x4_follows_align_corners_false();
    test_resize_same_size_is_identity();
    test_resize_down_widens_triangle_filter_like_pil();
    test_bicubic_down_widens_the_cubic_like_pil();
    test_rgb_to_gray_uses_itu_601_luma();
    test_gray_to_rgb_replicates();
    test_fashion_mnist_train_loads();
    remove_tree(tmpdir);
    if (failures) {
        fprintf(stderr, "test_data: %d check(s) failed\n", failures);
        return 1;
    }
    printf("test_data: all passed\n");
    return 0;
}
