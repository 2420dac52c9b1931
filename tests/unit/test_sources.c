/* Specification tests for the dataset formats behind SampleSource: image folders, darknet lists
 * (substring labels, ambiguity), CSV of path,label lines, CIFAR binary batches, the deterministic
 * validation split, and the .data file choosing among them. Every dataset is written here, in a
 * fresh temp dir per test. */
#include "data/cifar.h"
#include "data/data_config.h"
#include "data/source_files.h"

#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"

static char root[64];
static char dir[256]; /* this test's directory */

/* ---- helpers ---- */

static void fresh_dir(const char *test_name)
{
    snprintf(dir, sizeof dir, "%s/%s", root, test_name);
    CHECK(mkdir(dir, 0700) == 0);
}

/* dir/NAME, formatted. */
static const char *at(char *buf, const char *fmt, ...)
{
    char name[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, sizeof name, fmt, ap);
    va_end(ap);
    snprintf(buf, PATH_MAX, "%s/%s", dir, name);
    return buf;
}

static void make_dirs(const char *name)
{
    char p[PATH_MAX];
    CHECK(mkdir(at(p, "%s", name), 0700) == 0);
}

static void write_text(const char *name, const char *text)
{
    char p[PATH_MAX];
    FILE *f = fopen(at(p, "%s", name), "w");
    CHECK(f != NULL);
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

/* A 2x3 gray PNG whose pixels are value/255 (value + 0..5 across the image). */
static void write_png(const char *name, int value)
{
    char p[PATH_MAX];
    float px[6];
    for (int i = 0; i < 6; i++) {
        px[i] = (float)(value + i) / 255.0f;
    }
    Image img = {.c = 1, .h = 2, .w = 3, .data = px};
    Error e = {0};
    CHECK(image_write_png(at(p, "%s", name), &img, &e) == CDL_OK);
}

/* The file name (after the last '/') of sample i. */
static const char *base_name(const SampleSource *s, int i)
{
    const char *p = s->path(s, i), *slash = strrchr(p, '/');
    return slash ? slash + 1 : p;
}

static int label_of(const SampleSource *s, int i)
{
    Image img;
    int label = -1;
    Error e = {0};
    CHECK(s->read(s, i, &img, &label, &e) == CDL_OK);
    image_free(&img);
    return label;
}

/* ---- image folders ---- */

static void make_animal_folder(void)
{
    make_dirs("animals");
    make_dirs("animals/dog");
    make_dirs("animals/cat");
    make_dirs("animals/cat/nested");
    write_png("animals/cat/2.PNG", 20);
    write_png("animals/cat/1.jpg.png", 10);
    write_png("animals/cat/nested/9.png", 90);
    write_png("animals/cat/.hidden.png", 0);
    write_text("animals/cat/notes.txt", "not an image\n");
    write_png("animals/dog/a.png", 30);
    write_png("animals/top-level.png", 40);
}

static void test_folder_sorts_classes_then_files_and_skips_non_images(void)
{
    fresh_dir("folder_order");
    make_animal_folder();
    char p[PATH_MAX];
    SampleSource s;
    Error e = {0};
    CHECK(source_folder_open(&s, at(p, "animals"), NULL, 0, &e) == CDL_OK);
    CHECK(s.n == 3 && s.classes == 2 && s.c == 0);
    if (s.n == 3) {
        CHECK(!strcmp(base_name(&s, 0), "1.jpg.png") && label_of(&s, 0) == 0);
        CHECK(!strcmp(base_name(&s, 1), "2.PNG") && label_of(&s, 1) == 0);
        CHECK(!strcmp(base_name(&s, 2), "a.png") && label_of(&s, 2) == 1);
        CHECK(!strcmp(s.path(&s, 2), at(p, "animals/dog/a.png")));
    }
    source_free(&s);
}

static void test_folder_read_decodes_the_file(void)
{
    fresh_dir("folder_read");
    make_animal_folder();
    char p[PATH_MAX];
    SampleSource s;
    Image img;
    int label;
    Error e = {0};
    CHECK(source_folder_open(&s, at(p, "animals"), NULL, 0, &e) == CDL_OK);
    CHECK(s.read(&s, 1, &img, &label, &e) == CDL_OK);
    CHECK(img.c == 1 && img.h == 2 && img.w == 3 && label == 0);
    CHECK_NEAR(img.data[5], 25.0 / 255.0, 1e-6);
    image_free(&img);
    source_free(&s);
}

static void test_folder_lists_class_folders_sorted(void)
{
    fresh_dir("folder_classes");
    make_animal_folder();
    char p[PATH_MAX], **names;
    int n;
    Error e = {0};
    CHECK(folder_list_classes(at(p, "animals"), &names, &n, &e) == CDL_OK);
    CHECK(n == 2 && !strcmp(names[0], "cat") && !strcmp(names[1], "dog"));
    for (int i = 0; i < n; i++) {
        free(names[i]);
    }
    free(names);
}

static void test_folder_labels_follow_given_classes_by_name(void)
{
    fresh_dir("folder_given");
    make_dirs("valid");
    make_dirs("valid/dog");
    write_png("valid/dog/x.png", 1);
    char *classes[] = {"bird", "cat", "dog"};
    char p[PATH_MAX];
    SampleSource s;
    Error e = {0};
    CHECK(source_folder_open(&s, at(p, "valid"), classes, 3, &e) == CDL_OK);
    CHECK(s.n == 1 && s.classes == 3 && label_of(&s, 0) == 2);
    source_free(&s);
}

static void test_folder_class_not_among_given_classes_is_an_error(void)
{
    fresh_dir("folder_unknown");
    make_dirs("valid");
    make_dirs("valid/fox");
    write_png("valid/fox/x.png", 1);
    char *classes[] = {"cat", "dog"};
    char p[PATH_MAX];
    SampleSource s;
    Error e = {0};
    CHECK(source_folder_open(&s, at(p, "valid"), classes, 2, &e) == CDL_EUSAGE);
    CHECK_CONTAINS(e.msg, "class folder 'fox' is not one of the 2 classes");
    CHECK(s.n == 0 && s.impl == NULL);
}

static void test_folder_without_images_or_class_folders_is_an_error(void)
{
    fresh_dir("folder_empty");
    make_dirs("flat");
    write_png("flat/a.png", 1);
    make_dirs("hollow");
    make_dirs("hollow/cat");
    char p[PATH_MAX];
    SampleSource s;
    Error e = {0};
    CHECK(source_folder_open(&s, at(p, "flat"), NULL, 0, &e) == CDL_ERUNTIME);
    CHECK_CONTAINS(e.msg, "no class folders");
    CHECK(source_folder_open(&s, at(p, "hollow"), NULL, 0, &e) == CDL_ERUNTIME);
    CHECK_CONTAINS(e.msg, "hollow: no images");
    CHECK(source_folder_open(&s, at(p, "absent"), NULL, 0, &e) == CDL_ERUNTIME);
    CHECK_CONTAINS(e.msg, "absent: cannot open directory");
}

/* ---- darknet lists ---- */

static void test_list_label_is_the_class_name_in_the_path(void)
{
    fresh_dir("list_labels");
    make_dirs("imgs");
    write_png("imgs/cat_1.png", 1);
    write_png("imgs/dog_2.png", 2);
    write_text("train.list", "imgs/dog_2.png\n\n  imgs/cat_1.png  \r\n");
    char *names[] = {"cat", "dog"};
    char p[PATH_MAX];
    SampleSource s;
    Error e = {0};
    CHECK(source_list_open(&s, at(p, "train.list"), names, 2, &e) == CDL_OK);
    CHECK(s.n == 2 && s.classes == 2);
    if (s.n == 2) {
        CHECK(label_of(&s, 0) == 1 && label_of(&s, 1) == 0);
        CHECK(!strcmp(base_name(&s, 1), "cat_1.png"));
    }
    CHECK(source_ambiguous_labels(&s, NULL) == 0);
    source_free(&s);
}

/* darknet's substring rule: "rain" occurs in "train/"; the name ending last wins and the path
   is reported as ambiguous. */
static void test_list_substring_match_picks_last_name_and_counts_ambiguity(void)
{
    fresh_dir("list_ambiguous");
    write_text("x.list", "data/train/cat/1.png\ndata/rain/9.png\ndata/train/dog/3.png\n");
    char *names[] = {"cat", "rain", "dog"};
    char p[PATH_MAX];
    const char *first = NULL;
    SampleSource s;
    Error e = {0};
    CHECK(source_list_open(&s, at(p, "x.list"), names, 3, &e) == CDL_OK);
    CHECK(s.n == 3);
    if (s.n == 3) {
        const FileList *l = s.impl;
        CHECK(l->labels[0] == 0 && l->labels[1] == 1 && l->labels[2] == 2);
    }
    CHECK(source_ambiguous_labels(&s, &first) == 2);
    CHECK(first && !strcmp(first, "data/train/cat/1.png"));
    source_free(&s);
}

static void test_list_equal_ends_prefer_the_longer_name(void)
{
    fresh_dir("list_longest");
    write_text("x.list", "img/bobcat/1.png\nimg/cat/2.png\n");
    char *names[] = {"cat", "bobcat"};
    char p[PATH_MAX];
    SampleSource s;
    Error e = {0};
    CHECK(source_list_open(&s, at(p, "x.list"), names, 2, &e) == CDL_OK);
    if (s.n == 2) {
        const FileList *l = s.impl;
        CHECK(l->labels[0] == 1 && l->labels[1] == 0);
    }
    CHECK(source_ambiguous_labels(&s, NULL) == 1);
    source_free(&s);
}

/* A relative path is tried from the current directory first (darknet), then from the list's. */
static void test_list_relative_paths_try_cwd_then_list_directory(void)
{
    fresh_dir("list_paths");
    make_dirs("lists");
    make_dirs("lists/cat");
    make_dirs("cat");
    write_png("lists/cat/near.png", 1);
    write_png("cat/both.png", 2);
    write_png("lists/cat/both.png", 3);
    write_text("lists/x.list", "cat/near.png\ncat/both.png\ncat/nowhere.png\n");
    char *names[] = {"cat"};
    char p[PATH_MAX], cwd[PATH_MAX], want[PATH_MAX];
    SampleSource s;
    Error e = {0};
    CHECK(getcwd(cwd, sizeof cwd) != NULL);
    CHECK(chdir(dir) == 0);
    CHECK(source_list_open(&s, at(p, "lists/x.list"), names, 1, &e) == CDL_OK);
    CHECK(chdir(cwd) == 0);
    CHECK(s.n == 3);
    if (s.n == 3) {
        CHECK(!strcmp(s.path(&s, 0), at(want, "lists/cat/near.png")));
        CHECK(!strcmp(s.path(&s, 1), "cat/both.png"));
        CHECK(!strcmp(s.path(&s, 2), "cat/nowhere.png"));
    }
    source_free(&s);
}

static void test_list_path_without_class_name_names_list_and_line(void)
{
    fresh_dir("list_no_class");
    write_text("x.list", "a/cat/1.png\n\na/horse/2.png\n");
    char *names[] = {"cat", "dog"};
    char p[PATH_MAX], want[PATH_MAX + 128];
    SampleSource s;
    Error e = {0};
    CHECK(source_list_open(&s, at(p, "x.list"), names, 2, &e) == CDL_EUSAGE);
    snprintf(want, sizeof want, "%s:3: no class name occurs in the path 'a/horse/2.png'", p);
    CHECK_CONTAINS(e.msg, want);
    CHECK(s.impl == NULL);
}

static void test_unreadable_image_error_names_the_file(void)
{
    fresh_dir("list_bad_image");
    write_text("cat.png", "not a png");
    write_text("x.list", "cat.png\n");
    char *names[] = {"cat"};
    char p[PATH_MAX];
    SampleSource s;
    Image img;
    int label;
    Error e = {0};
    CHECK(source_list_open(&s, at(p, "x.list"), names, 1, &e) == CDL_OK);
    CHECK(s.read(&s, 0, &img, &label, &e) == CDL_ERUNTIME);
    CHECK_CONTAINS(e.msg, at(p, "cat.png: not a PNG or JPEG image"));
    source_free(&s);
}

/* ---- CSV of path,label ---- */

static void test_csv_skips_header_and_takes_indices_or_names(void)
{
    fresh_dir("csv_labels");
    write_text("set.csv", "path,label\na,b.png , 1\nc.png,cat\n\nd.png,0\n");
    char *names[] = {"cat", "dog"};
    char p[PATH_MAX];
    SampleSource s;
    Error e = {0};
    CHECK(source_csv_open(&s, at(p, "set.csv"), names, 2, &e) == CDL_OK);
    CHECK(s.n == 3 && s.classes == 2);
    if (s.n == 3) {
        const FileList *l = s.impl;
        CHECK(!strcmp(l->paths[0], "a,b.png") && l->labels[0] == 1);
        CHECK(!strcmp(l->paths[1], "c.png") && l->labels[1] == 0);
        CHECK(!strcmp(l->paths[2], "d.png") && l->labels[2] == 0);
    }
    source_free(&s);
}

static void check_csv_error(const char *text, const char *want_at_line)
{
    char p[PATH_MAX], want[PATH_MAX + 128];
    char *names[] = {"cat", "dog"};
    SampleSource s;
    Error e = {0};
    write_text("bad.csv", text);
    CHECK(source_csv_open(&s, at(p, "bad.csv"), names, 2, &e) == CDL_EUSAGE);
    snprintf(want, sizeof want, "%s:%s", p, want_at_line);
    CHECK_CONTAINS(e.msg, want);
    CHECK(s.impl == NULL);
}

static void test_csv_bad_lines_name_file_and_line(void)
{
    fresh_dir("csv_errors");
    check_csv_error("a.png,1\nb.png\n", "2: expected path,label, got 'b.png'");
    check_csv_error("a.png,1\nb.png,2\n", "2: label '2' is not a class index in 0..1");
    check_csv_error("a.png,1\n\nb.png,-1\n", "3: label '-1' is not a class index");
    check_csv_error("path,label\nb.png,fox\n", "2: label 'fox' is neither a class index nor");
    check_csv_error(" ,1\n", "1: empty path");
}

/* ---- CIFAR ---- */

/* Writes records of variant 10 or 100: record r has label labels[r] (CIFAR-100: coarse 99,
   then fine labels[r]) and pixel byte k = (r * 7 + k) % 256. */
static void write_cifar(const char *name, int variant, const int *labels, int n)
{
    char p[PATH_MAX];
    FILE *f = fopen(at(p, "%s", name), "wb");
    CHECK(f != NULL);
    for (int r = 0; f && r < n; r++) {
        if (variant == 100) {
            fputc(99, f);
        }
        fputc(labels[r], f);
        for (int k = 0; k < CIFAR_PIXELS; k++) {
            fputc((r * 7 + k) % 256, f);
        }
    }
    if (f) {
        fclose(f);
    }
}

static void test_cifar10_records_become_planes_and_labels(void)
{
    fresh_dir("cifar10");
    const int labels[] = {3, 0, 9};
    write_cifar("batch.bin", 10, labels, 3);
    char p[PATH_MAX];
    Dataset d;
    Error e = {0};
    CHECK(cifar_load(at(p, "batch.bin"), 10, 0, &d, &e) == CDL_OK);
    CHECK(d.n == 3 && d.c == 3 && d.h == 32 && d.w == 32 && d.classes == 10);
    CHECK(d.max_value == 255.0f);
    if (d.n == 3) {
        CHECK(d.labels[0] == 3 && d.labels[1] == 0 && d.labels[2] == 9);
        /* record 2, green plane (k = 1024 + y * 32 + x) at y = 1, x = 2 */
        CHECK(d.pixels[2 * CIFAR_PIXELS + 1024 + 32 + 2] == (2 * 7 + 1024 + 32 + 2) % 256);
    }
    SampleSource s;
    Image img;
    int label;
    CHECK(source_from_dataset(&s, &d, &e) == CDL_OK);
    CHECK(s.read(&s, 1, &img, &label, &e) == CDL_OK);
    CHECK(img.c == 3 && label == 0);
    CHECK_NEAR(img.data[2048 + 5], ((7 + 2048 + 5) % 256) / 255.0, 1e-6);
    image_free(&img);
    source_free(&s);
}

static void test_cifar100_uses_the_fine_label(void)
{
    fresh_dir("cifar100");
    const int labels[] = {42, 7};
    write_cifar("train.bin", 100, labels, 2);
    char p[PATH_MAX];
    Dataset d;
    Error e = {0};
    CHECK(cifar_load(at(p, "train.bin"), 100, 0, &d, &e) == CDL_OK);
    CHECK(d.n == 2 && d.classes == 100);
    if (d.n == 2) {
        CHECK(d.labels[0] == 42 && d.labels[1] == 7);
        CHECK(d.pixels[CIFAR_PIXELS] == 7);
    }
    dataset_free(&d);
}

static void test_cifar_directory_reads_data_batches_in_order_or_the_test_batch(void)
{
    fresh_dir("cifar_dir");
    make_dirs("cifar-10-batches-bin");
    const int first[] = {1, 2}, second[] = {3}, test[] = {4, 5, 6};
    write_cifar("cifar-10-batches-bin/data_batch_2.bin", 10, second, 1);
    write_cifar("cifar-10-batches-bin/data_batch_1.bin", 10, first, 2);
    write_cifar("cifar-10-batches-bin/test_batch.bin", 10, test, 3);
    write_text("cifar-10-batches-bin/batches.meta.txt", "airplane\n");
    char p[PATH_MAX];
    Dataset d;
    Error e = {0};
    CHECK(cifar_detect(at(p, "cifar-10-batches-bin")) == 10);
    CHECK(cifar_load(p, 10, 0, &d, &e) == CDL_OK);
    CHECK(d.n == 3 && d.labels[0] == 1 && d.labels[1] == 2 && d.labels[2] == 3);
    dataset_free(&d);
    CHECK(cifar_load(p, 10, 1, &d, &e) == CDL_OK);
    CHECK(d.n == 3 && d.labels[0] == 4 && d.labels[2] == 6);
    dataset_free(&d);
}

static void test_cifar_comma_list_concatenates_files(void)
{
    fresh_dir("cifar_list");
    const int a[] = {1}, b[] = {2, 3};
    write_cifar("a.bin", 10, a, 1);
    write_cifar("b.bin", 10, b, 2);
    char pa[PATH_MAX], pb[PATH_MAX], spec[2 * PATH_MAX + 2];
    snprintf(spec, sizeof spec, "%s,%s", at(pb, "b.bin"), at(pa, "a.bin"));
    Dataset d;
    Error e = {0};
    CHECK(cifar_load(spec, 10, 0, &d, &e) == CDL_OK);
    CHECK(d.n == 3 && d.labels[0] == 2 && d.labels[1] == 3 && d.labels[2] == 1);
    dataset_free(&d);
}

static void test_cifar_variant_is_detected_by_name_or_size(void)
{
    fresh_dir("cifar_detect");
    const int labels[] = {1, 2, 3};
    write_cifar("ten.bin", 10, labels, 3);
    write_cifar("hundred.bin", 100, labels, 3);
    write_text("test.bin", "x");
    char p[PATH_MAX];
    CHECK(cifar_detect(at(p, "ten.bin")) == 10);
    CHECK(cifar_detect(at(p, "hundred.bin")) == 100);
    CHECK(cifar_detect(at(p, "test.bin")) == 100);
    CHECK(cifar_detect(at(p, "absent.bin")) == 0);
}

static void test_cifar_bad_size_or_label_names_the_file(void)
{
    fresh_dir("cifar_errors");
    const int labels[] = {1, 10};
    write_cifar("labels.bin", 10, labels, 2);
    write_text("short.bin", "abc");
    char p[PATH_MAX];
    Dataset d;
    Error e = {0};
    CHECK(cifar_load(at(p, "labels.bin"), 10, 0, &d, &e) == CDL_ERUNTIME);
    CHECK_CONTAINS(e.msg, "labels.bin: record 1 has label 10, but CIFAR-10 labels are 0..9");
    CHECK(d.pixels == NULL && d.n == 0);
    CHECK(cifar_load(at(p, "short.bin"), 10, 0, &d, &e) == CDL_ERUNTIME);
    CHECK_CONTAINS(e.msg, "short.bin: 3 bytes is not a whole number of 3073-byte CIFAR-10 records");
    CHECK(cifar_load(at(p, "absent.bin"), 10, 0, &d, &e) == CDL_ERUNTIME);
    CHECK_CONTAINS(e.msg, "absent.bin: cannot open");
}

/* ---- validation split ---- */

/* A darknet list of n_cat "cat/i" then n_dog "dog/i" samples (file names: their indices). */
static void open_numbered_list(SampleSource *s, int n_cat, int n_dog)
{
    char p[PATH_MAX], line[32];
    FILE *f = fopen(at(p, "numbered.list"), "w");
    CHECK(f != NULL);
    for (int i = 0; f && i < n_cat + n_dog; i++) {
        snprintf(line, sizeof line, "%s/%d\n", i < n_cat ? "cat" : "dog", i);
        fputs(line, f);
    }
    if (f) {
        fclose(f);
    }
    char *names[] = {"cat", "dog"};
    Error e = {0};
    CHECK(source_list_open(s, p, names, 2, &e) == CDL_OK);
}

/* Sample i's label, from the file list (the numbered lists name no real image). */
static int listed_label(const SampleSource *s, int i)
{
    return ((const FileList *)s->impl)->labels[i];
}

/* seen[index] counts the samples of s whose file name is that index; returns s's cats. */
static int tally(const SampleSource *s, int *seen, int n)
{
    int cats = 0;
    for (int i = 0; i < s->n; i++) {
        const int index = atoi(base_name(s, i));
        if (index >= 0 && index < n) {
            seen[index]++;
        }
        cats += listed_label(s, i) == 0;
    }
    return cats;
}

/* round(n * f) held out, each class's share of them, every sample on exactly one side, both
   sides in the list's order. */
static void test_split_is_stratified_disjoint_and_covering(void)
{
    fresh_dir("split_strata");
    SampleSource train, valid;
    Error e = {0};
    open_numbered_list(&train, 10, 20);
    CHECK(source_files_split(&train, 0.2f, 1, &valid, &e) == CDL_OK);
    CHECK(train.n == 24 && valid.n == 6 && valid.classes == 2);
    int seen[30] = {0};
    CHECK(tally(&valid, seen, 30) == 2); /* 2 of the 10 cats, 4 of the 20 dogs */
    CHECK(tally(&train, seen, 30) == 8);
    for (int i = 0; i < 30; i++) {
        CHECK(seen[i] == 1);
    }
    for (int i = 1; i < valid.n; i++) {
        CHECK(atoi(base_name(&valid, i - 1)) < atoi(base_name(&valid, i)));
    }
    source_free(&train);
    source_free(&valid);
}

/* The held-out names of a split of 37 samples (30%) with seed, as "a,b,c,". */
static void split_names(uint64_t seed, char *out, size_t size)
{
    SampleSource s, valid;
    Error e = {0};
    open_numbered_list(&s, 17, 20);
    CHECK(source_files_split(&s, 0.3f, seed, &valid, &e) == CDL_OK);
    CHECK(valid.n == 11 && s.n == 26); /* round(37 * 0.3) = round(11.1) */
    out[0] = 0;
    for (int i = 0; i < valid.n; i++) {
        snprintf(out + strlen(out), size - strlen(out), "%s,", base_name(&valid, i));
    }
    source_free(&s);
    source_free(&valid);
}

/* The same seed holds out the same samples; another seed others. */
static void test_split_follows_the_seed(void)
{
    fresh_dir("split_seed");
    char a[256], b[256], c[256];
    split_names(1, a, sizeof a);
    split_names(1, b, sizeof b);
    split_names(2, c, sizeof c);
    CHECK(!strcmp(a, b));
    CHECK(strcmp(a, c) != 0);
}

static void test_split_that_empties_a_side_is_an_error(void)
{
    fresh_dir("split_empty");
    SampleSource s, valid;
    Error e = {0};
    open_numbered_list(&s, 3, 0);
    CHECK(source_files_split(&s, 0.1f, 1, &valid, &e) == CDL_EUSAGE);
    CHECK_CONTAINS(e.msg, "valid_split=0.1 of 3 samples leaves no sample on one side");
    CHECK(s.impl == NULL && valid.impl == NULL);
}

/* ---- thread safety ---- */

typedef struct ReaderJob {
    const SampleSource *s;
    int label_sum, failures;
    double pixel_sum;
} ReaderJob;

static void *read_all(void *arg)
{
    ReaderJob *job = arg;
    for (int round = 0; round < 20; round++) {
        for (int i = 0; i < job->s->n; i++) {
            Image img;
            int label;
            Error e = {0};
            if (job->s->read(job->s, i, &img, &label, &e) != CDL_OK) {
                job->failures++;
                continue;
            }
            job->label_sum += label;
            job->pixel_sum += img.data[0];
            image_free(&img);
        }
    }
    return NULL;
}

static void test_concurrent_reads_agree_with_a_single_reader(void)
{
    fresh_dir("threads");
    make_animal_folder();
    char p[PATH_MAX];
    SampleSource s;
    Error e = {0};
    CHECK(source_folder_open(&s, at(p, "animals"), NULL, 0, &e) == CDL_OK);
    ReaderJob single = {.s = &s}, jobs[4];
    pthread_t threads[4];
    read_all(&single);
    for (int t = 0; t < 4; t++) {
        jobs[t] = (ReaderJob){.s = &s};
        CHECK(pthread_create(&threads[t], NULL, read_all, &jobs[t]) == 0);
    }
    for (int t = 0; t < 4; t++) {
        pthread_join(threads[t], NULL);
        CHECK(jobs[t].failures == 0 && jobs[t].label_sum == single.label_sum);
        CHECK(jobs[t].pixel_sum == single.pixel_sum);
    }
    CHECK(single.label_sum == 20 * 1 && single.failures == 0);
    source_free(&s);
}

/* ---- the .data file ---- */

static int open_data(const char *text, DataConfig *dc, SampleSource *train, SampleSource *valid,
                     Error *e)
{
    char p[PATH_MAX];
    write_text("set.data", text);
    int rc = data_config_load(at(p, "set.data"), dc, e);
    return rc ? rc : data_config_open_sources(dc, train, valid, e);
}

static void close_data(DataConfig *dc, SampleSource *train, SampleSource *valid)
{
    data_config_free(dc);
    source_free(train);
    source_free(valid);
}

static void test_data_folder_takes_class_names_from_folders_and_splits(void)
{
    fresh_dir("data_folder");
    make_animal_folder();
    write_png("animals/dog/b.png", 31);
    write_png("animals/dog/c.png", 32);
    DataConfig dc;
    SampleSource train, valid;
    Error e = {0};
    CHECK(open_data("train=animals\nvalid_split=0.4\n", &dc, &train, &valid, &e) == CDL_OK);
    CHECK(dc.train_kind == DATA_FOLDER && dc.classes == 2 && dc.n_names == 2);
    CHECK(dc.n_names == 2 && !strcmp(dc.names[0], "cat") && !strcmp(dc.names[1], "dog"));
    CHECK(train.n == 3 && valid.n == 2 && train.classes == 2 && valid.classes == 2);
    if (valid.n == 2) { /* the evenly spread rule's share of each class: 0 of 2 cats, 2 dogs */
        CHECK(label_of(&valid, 0) == 1 && label_of(&valid, 1) == 1);
        CHECK(strcmp(base_name(&valid, 0), base_name(&valid, 1)) != 0);
    }
    close_data(&dc, &train, &valid);
}

/* names= renames the classes; labels stay the train folders' sorted positions, and a valid folder
   maps its class folders onto train's by name. */
static void test_data_valid_folder_maps_onto_train_folders(void)
{
    fresh_dir("data_valid_folder");
    make_animal_folder();
    make_dirs("val");
    make_dirs("val/dog");
    write_png("val/dog/v.png", 5);
    write_text("pets.names", "Cat\nDog\n");
    DataConfig dc;
    SampleSource train, valid;
    Error e = {0};
    CHECK(open_data("train=animals\nvalid=val\nnames=pets.names\n", &dc, &train, &valid, &e) ==
          CDL_OK);
    CHECK(dc.n_names == 2 && !strcmp(dc.names[1], "Dog") && dc.valid_kind == DATA_FOLDER);
    CHECK(valid.n == 1 && label_of(&valid, 0) == 1);
    close_data(&dc, &train, &valid);
}

static void test_data_list_needs_names(void)
{
    fresh_dir("data_list_names");
    write_text("train.txt", "cat/1.png\n");
    char p[PATH_MAX];
    DataConfig dc;
    Error e = {0};
    write_text("set.data", "classes=2\ntrain=train.txt\n");
    CHECK(data_config_load(at(p, "set.data"), &dc, &e) == CDL_EUSAGE);
    CHECK_CONTAINS(e.msg, "a darknet list");
    CHECK_CONTAINS(e.msg, "needs names=");
}

/* darknet's imagenet .data gives both: labels= (wordnet ids in the paths), names= (shown). */
static void test_data_list_matches_labels_and_shows_names(void)
{
    fresh_dir("data_labels_names");
    write_text("train.list", "img/n02/1.png\nimg/n01/2.png\n");
    write_text("ids.labels", "n01\nn02\n");
    write_text("short.names", "tench\ngoldfish\n");
    DataConfig dc;
    SampleSource train, valid;
    Error e = {0};
    CHECK(open_data("train=train.list\nlabels=ids.labels\nnames=short.names\n", &dc, &train, &valid,
                    &e) == CDL_OK);
    CHECK(dc.classes == 2 && !strcmp(dc.names[0], "tench") && dc.match_names);
    if (train.n == 2) {
        const FileList *l = train.impl;
        CHECK(l->labels[0] == 1 && l->labels[1] == 0);
    }
    CHECK(valid.n == 0 && valid.classes == 2 && valid.read == NULL);
    close_data(&dc, &train, &valid);
}

static void test_data_csv_of_paths_is_told_from_digits_csv(void)
{
    fresh_dir("data_csv");
    write_text("files.csv", "file,class\nimg/a.png,1\nimg/b.png,0\n");
    write_text("digits.csv", "0,1,2,3,1\n4,5,6,7,0\n");
    DataConfig dc;
    SampleSource train, valid;
    Error e = {0};
    CHECK(open_data("classes=2\ntrain=files.csv\nvalid=digits.csv\n", &dc, &train, &valid, &e) ==
          CDL_OK);
    CHECK(dc.train_kind == DATA_CSV && dc.valid_kind == DATA_ARRAYS);
    CHECK(train.n == 2 && train.c == 0 && valid.n == 2 && valid.c == 1 && valid.h == 2);
    close_data(&dc, &train, &valid);
}

static void test_data_cifar_directory_gives_train_and_test_batches(void)
{
    fresh_dir("data_cifar");
    make_dirs("c10");
    const int train_labels[] = {1, 2, 3, 4}, test_labels[] = {9};
    write_cifar("c10/data_batch_1.bin", 10, train_labels, 4);
    write_cifar("c10/test_batch.bin", 10, test_labels, 1);
    DataConfig dc;
    SampleSource train, valid;
    Error e = {0};
    CHECK(open_data("train=c10\nvalid=c10\n", &dc, &train, &valid, &e) == CDL_OK);
    CHECK(dc.train_kind == DATA_CIFAR10 && dc.classes == 10 && !strcmp(dc.names[9], "9"));
    CHECK(train.n == 4 && valid.n == 1 && train.c == 3 && train.h == 32);
    CHECK(valid.n == 1 && label_of(&valid, 0) == 9);
    close_data(&dc, &train, &valid);
}

/* In-memory sets keep the tail split of data_config_load_sets. */
static void test_data_cifar_split_holds_out_the_tail(void)
{
    fresh_dir("data_cifar_split");
    const int labels[] = {0, 1, 2, 3};
    write_cifar("a.bin", 10, labels, 4);
    DataConfig dc;
    SampleSource train, valid;
    Error e = {0};
    CHECK(open_data("train=a.bin\nvalid_split=0.5\n", &dc, &train, &valid, &e) == CDL_OK);
    CHECK(train.n == 2 && valid.n == 2);
    CHECK(label_of(&valid, 0) == 2 && label_of(&valid, 1) == 3);
    close_data(&dc, &train, &valid);
}

static void test_data_type_forces_the_kind(void)
{
    fresh_dir("data_type");
    const int labels[] = {5};
    write_cifar("batch.dat", 100, labels, 1);
    DataConfig dc;
    SampleSource train, valid;
    Error e = {0};
    CHECK(open_data("type=cifar100\ntrain=batch.dat\n", &dc, &train, &valid, &e) == CDL_OK);
    CHECK(dc.train_kind == DATA_CIFAR100 && dc.classes == 100 && train.n == 1);
    close_data(&dc, &train, &valid);
    char p[PATH_MAX];
    write_text("set.data", "type=jpeg\ntrain=x\n");
    CHECK(data_config_load(at(p, "set.data"), &dc, &e) == CDL_EUSAGE);
    CHECK_CONTAINS(e.msg, "set.data:1: type=jpeg: expected cifar10, cifar100, folder");
}

static void test_data_bin_of_unknown_variant_asks_for_type(void)
{
    fresh_dir("data_bin_unknown");
    write_text("odd.bin", "12345");
    char p[PATH_MAX];
    DataConfig dc;
    Error e = {0};
    write_text("set.data", "classes=10\ntrain=odd.bin\n");
    CHECK(data_config_load(at(p, "set.data"), &dc, &e) == CDL_EUSAGE);
    CHECK_CONTAINS(e.msg, "cannot tell CIFAR-10 from CIFAR-100 batches; add type=cifar10");
}

static void test_data_folder_count_must_match_classes(void)
{
    fresh_dir("data_folder_count");
    make_animal_folder();
    char p[PATH_MAX];
    DataConfig dc;
    Error e = {0};
    write_text("set.data", "classes=3\ntrain=animals\n");
    CHECK(data_config_load(at(p, "set.data"), &dc, &e) == CDL_EUSAGE);
    CHECK_CONTAINS(e.msg, "holds 2 class folders but classes=3");
}

static void test_data_load_sets_refuses_image_files(void)
{
    fresh_dir("data_load_sets");
    make_animal_folder();
    char p[PATH_MAX];
    DataConfig dc;
    Dataset train, valid;
    Error e = {0};
    write_text("set.data", "train=animals\n");
    CHECK(data_config_load(at(p, "set.data"), &dc, &e) == CDL_OK);
    CHECK(data_config_load_sets(&dc, &train, &valid, &e) == CDL_EUSAGE);
    CHECK_CONTAINS(e.msg, "is an image folder, which this command cannot read yet");
    data_config_free(&dc);
}

int main(void)
{
    snprintf(root, sizeof root, "/tmp/cdl-sources-XXXXXX");
    if (!mkdtemp(root)) {
        perror("mkdtemp");
        return 1;
    }
    test_folder_sorts_classes_then_files_and_skips_non_images();
    test_folder_read_decodes_the_file();
    test_folder_lists_class_folders_sorted();
    test_folder_labels_follow_given_classes_by_name();
    test_folder_class_not_among_given_classes_is_an_error();
    test_folder_without_images_or_class_folders_is_an_error();
    test_list_label_is_the_class_name_in_the_path();
    test_list_substring_match_picks_last_name_and_counts_ambiguity();
    test_list_equal_ends_prefer_the_longer_name();
    test_list_relative_paths_try_cwd_then_list_directory();
    test_list_path_without_class_name_names_list_and_line();
    test_unreadable_image_error_names_the_file();
    test_csv_skips_header_and_takes_indices_or_names();
    test_csv_bad_lines_name_file_and_line();
    test_cifar10_records_become_planes_and_labels();
    test_cifar100_uses_the_fine_label();
    test_cifar_directory_reads_data_batches_in_order_or_the_test_batch();
    test_cifar_comma_list_concatenates_files();
    test_cifar_variant_is_detected_by_name_or_size();
    test_cifar_bad_size_or_label_names_the_file();
    test_split_is_stratified_disjoint_and_covering();
    test_split_follows_the_seed();
    test_split_that_empties_a_side_is_an_error();
    test_concurrent_reads_agree_with_a_single_reader();
    test_data_folder_takes_class_names_from_folders_and_splits();
    test_data_valid_folder_maps_onto_train_folders();
    test_data_list_needs_names();
    test_data_list_matches_labels_and_shows_names();
    test_data_csv_of_paths_is_told_from_digits_csv();
    test_data_cifar_directory_gives_train_and_test_batches();
    test_data_cifar_split_holds_out_the_tail();
    test_data_type_forces_the_kind();
    test_data_bin_of_unknown_variant_asks_for_type();
    test_data_folder_count_must_match_classes();
    test_data_load_sets_refuses_image_files();
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    CHECK(system(cmd) == 0);
    return check_report("test_sources");
}
