/* CIFAR-10/100 binary batches: finding the batch files of a spec, telling the variant, and
   reading the records into an in-memory Dataset. */
#include "data/cifar.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static size_t record_bytes(int variant)
{
    return (variant == 100 ? 2 : 1) + (size_t)CIFAR_PIXELS;
}

static int is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static int has_file(const char *dir, const char *name)
{
    char path[PATH_MAX];
    return snprintf(path, sizeof path, "%s/%s", dir, name) < (int)sizeof path &&
           access(path, F_OK) == 0;
}

static int variant_by_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    if (!strncmp(base, "data_batch", 10) || !strncmp(base, "test_batch", 10)) {
        return 10;
    }
    return !strcmp(base, "train.bin") || !strcmp(base, "test.bin") ? 100 : 0;
}

int cifar_detect(const char *spec)
{
    if (is_dir(spec)) {
        if (has_file(spec, "data_batch_1.bin") || has_file(spec, "test_batch.bin")) {
            return 10;
        }
        return has_file(spec, "train.bin") || has_file(spec, "test.bin") ? 100 : 0;
    }
    char first[PATH_MAX];
    size_t len = strcspn(spec, ",");
    if (len >= sizeof first) {
        return 0;
    }
    memcpy(first, spec, len);
    first[len] = 0;
    int by_name = variant_by_name(first);
    struct stat st;
    if (by_name || stat(first, &st) != 0 || st.st_size == 0) {
        return by_name;
    }
    int whole10 = st.st_size % (off_t)record_bytes(10) == 0;
    int whole100 = st.st_size % (off_t)record_bytes(100) == 0;
    return whole10 == whole100 ? 0 : whole10 ? 10 : 100;
}

/* The batch files a spec names (malloc'd strings). */
typedef struct BatchFiles {
    char **paths;
    int n;
} BatchFiles;

static void batch_files_free(BatchFiles *b)
{
    for (int i = 0; i < b->n; i++) {
        free(b->paths[i]);
    }
    free(b->paths);
    memset(b, 0, sizeof *b);
}

static int batch_files_add(BatchFiles *b, const char *path, size_t len, Error *e)
{
    char **grown = realloc(b->paths, (size_t)(b->n + 1) * sizeof *grown);
    char *copy = grown ? strndup(path, len) : NULL;
    if (grown) {
        b->paths = grown;
    }
    if (!copy) {
        return error_set(e, CDL_ERUNTIME, "out of memory listing CIFAR batches");
    }
    b->paths[b->n++] = copy;
    return CDL_OK;
}

static int compare_paths(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The downloaded batches of a directory, sorted (see cifar_load). */
static int list_batch_dir(const char *dir, int variant, int test, BatchFiles *b, Error *e)
{
    DIR *d = opendir(dir);
    if (!d) {
        return error_set(e, CDL_ERUNTIME, "%s: cannot open directory: %s", dir, strerror(errno));
    }
    int rc = CDL_OK;
    struct dirent *entry;
    while (!rc && (entry = readdir(d))) {
        const char *name = entry->d_name;
        size_t len = strlen(name);
        int wanted = variant == 100 ? !strcmp(name, test ? "test.bin" : "train.bin")
                     : test         ? !strcmp(name, "test_batch.bin")
                                    : !strncmp(name, "data_batch_", 11) && len > 15 &&
                                  !strcmp(name + len - 4, ".bin");
        if (wanted) {
            char path[PATH_MAX];
            int n = snprintf(path, sizeof path, "%s/%s", dir, name);
            rc = n < (int)sizeof path ? batch_files_add(b, path, (size_t)n, e)
                                      : error_set(e, CDL_ERUNTIME, "%s: path too long", dir);
        }
    }
    closedir(d);
    if (!rc && b->n == 0) {
        rc = error_set(e, CDL_ERUNTIME, "%s: holds no CIFAR-%d %s batch (%s)", dir, variant,
                       test ? "test" : "training",
                       variant == 100 ? (test ? "test.bin" : "train.bin")
                       : test         ? "test_batch.bin"
                                      : "data_batch_*.bin");
    }
    if (b->n > 1) {
        qsort(b->paths, (size_t)b->n, sizeof *b->paths, compare_paths);
    }
    return rc;
}

static int batch_files_of(const char *spec, int variant, int test, BatchFiles *b, Error *e)
{
    memset(b, 0, sizeof *b);
    if (is_dir(spec)) {
        return list_batch_dir(spec, variant, test, b, e);
    }
    int rc = CDL_OK;
    for (const char *p = spec; !rc && *p;) {
        size_t len = strcspn(p, ",");
        if (len > 0) {
            rc = batch_files_add(b, p, len, e);
        }
        p += len + (p[len] == ',');
    }
    if (!rc && b->n == 0) {
        rc = error_set(e, CDL_EUSAGE, "'%s' names no CIFAR batch file", spec);
    }
    return rc;
}

/* The record count of all batch files, each checked to hold whole records. */
static int count_records(const BatchFiles *b, int variant, size_t *records, Error *e)
{
    size_t rec = record_bytes(variant);
    *records = 0;
    for (int i = 0; i < b->n; i++) {
        struct stat st;
        if (stat(b->paths[i], &st) != 0) {
            return error_set(e, CDL_ERUNTIME, "%s: cannot open: %s", b->paths[i], strerror(errno));
        }
        if (st.st_size == 0 || st.st_size % (off_t)rec != 0) {
            return error_set(e, CDL_ERUNTIME,
                             "%s: %lld bytes is not a whole number of %zu-byte CIFAR-%d records",
                             b->paths[i], (long long)st.st_size, rec, variant);
        }
        *records += (size_t)st.st_size / rec;
    }
    if (*records > INT_MAX) {
        return error_set(e, CDL_ERUNTIME, "%s: too many CIFAR records (%zu)", b->paths[0],
                         *records);
    }
    return CDL_OK;
}

/* Reads the records of one file into d starting at sample *at. */
static int read_batch(const char *path, int variant, Dataset *d, int *at, Error *e)
{
    size_t rec = record_bytes(variant), label_bytes = rec - CIFAR_PIXELS;
    FILE *f = fopen(path, "rb");
    if (!f) {
        return error_set(e, CDL_ERUNTIME, "%s: cannot open: %s", path, strerror(errno));
    }
    int rc = CDL_OK, first = *at;
    uint8_t labels[2];
    while (!rc && *at < d->n && fread(labels, 1, label_bytes, f) == label_bytes) {
        int label = labels[label_bytes - 1];
        if (label >= variant) {
            rc = error_set(e, CDL_ERUNTIME,
                           "%s: record %d has label %d, but CIFAR-%d labels are 0..%d", path,
                           *at - first, label, variant, variant - 1);
        } else if (fread(d->pixels + (size_t)*at * CIFAR_PIXELS, 1, CIFAR_PIXELS, f) !=
                   CIFAR_PIXELS) {
            rc = error_set(e, CDL_ERUNTIME, "%s: truncated in record %d", path, *at - first);
        } else {
            d->labels[(*at)++] = label;
        }
    }
    if (!rc && (ferror(f) || fgetc(f) != EOF)) {
        rc = error_set(e, CDL_ERUNTIME, "%s: changed size while being read", path);
    }
    fclose(f);
    return rc;
}

int cifar_load(const char *spec, int variant, int test, Dataset *d, Error *e)
{
    memset(d, 0, sizeof *d);
    if (variant != 10 && variant != 100) {
        return error_set(e, CDL_EUSAGE, "%s: CIFAR variant %d (expected 10 or 100)", spec, variant);
    }
    BatchFiles b;
    size_t records;
    int rc = batch_files_of(spec, variant, test, &b, e);
    if (!rc) {
        rc = count_records(&b, variant, &records, e);
    }
    if (!rc) {
        d->n = (int)records;
        d->c = 3;
        d->h = d->w = CIFAR_SIDE;
        d->max_value = 255.0f;
        d->classes = variant;
        d->pixels = malloc(records * CIFAR_PIXELS);
        d->labels = malloc(records * sizeof *d->labels);
        if (!d->pixels || !d->labels) {
            rc = error_set(e, CDL_ERUNTIME, "%s: out of memory for %zu images", spec, records);
        }
    }
    int at = 0;
    for (int i = 0; !rc && i < b.n; i++) {
        rc = read_batch(b.paths[i], variant, d, &at, e);
    }
    if (!rc && at != d->n) {
        rc = error_set(e, CDL_ERUNTIME, "%s: changed size while being read", b.paths[b.n - 1]);
    }
    batch_files_free(&b);
    if (rc) {
        dataset_free(d);
    }
    return rc;
}
