/* The sample source shared by the image-file formats (folder, darknet list, CSV): a table of
   resolved paths and labels decoded on read, its seeded, class-stratified validation split, and the
   path and class-name helpers their readers share. */
#include "data/source_files.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "data/boxes.h"
#include "util/rng.h"

char *path_resolve(const char *base_file, const char *path, int *found)
{
    *found = access(path, F_OK) == 0;
    const char *slash = strrchr(base_file, '/');
    if (!*found && path[0] != '/' && slash) {
        size_t dir_len = (size_t)(slash - base_file) + 1;
        char *joined = malloc(dir_len + strlen(path) + 1);
        if (!joined) {
            return NULL;
        }
        memcpy(joined, base_file, dir_len);
        strcpy(joined + dir_len, path);
        if (access(joined, F_OK) == 0) {
            *found = 1;
            return joined;
        }
        free(joined);
    }
    return strdup(path);
}

char *text_trim(char *s)
{
    while (*s == ' ' || *s == '\t') {
        s++;
    }
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r' || s[n - 1] == '\n')) {
        s[--n] = 0;
    }
    return s;
}

/* ---- the path and label table ---- */

int file_list_add(FileList *l, char *path, int label, Error *e)
{
    if (!path) {
        return error_set(e, CDL_ERUNTIME, "out of memory for file names");
    }
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 256;
        char **paths = cap < INT32_MAX / 2 ? realloc(l->paths, (size_t)cap * sizeof *paths) : NULL;
        if (paths) {
            l->paths = paths;
        }
        int *labels = paths ? realloc(l->labels, (size_t)cap * sizeof *labels) : NULL;
        if (!labels) {
            free(path);
            return error_set(e, CDL_ERUNTIME, "out of memory for %d file names", l->n);
        }
        l->labels = labels;
        l->cap = cap;
    }
    l->paths[l->n] = path;
    l->labels[l->n] = label;
    l->n++;
    return CDL_OK;
}

void file_list_free(FileList *l)
{
    for (int i = 0; i < l->n; i++) {
        free(l->paths[i]);
    }
    free(l->paths);
    free(l->labels);
    free(l->first_ambiguous);
    memset(l, 0, sizeof *l);
}

static int files_read(const SampleSource *s, int i, Image *img, int *label, Error *e)
{
    const FileList *l = s->impl;
    *label = l->labels[i];
    return image_load(l->paths[i], img, e);
}

static int files_read_boxes(const SampleSource *s, int i, float *truth, int max_boxes, Error *e)
{
    const FileList *l = s->impl;
    int found, n;
    char *label_path = boxes_label_path(l->paths[i], &found);
    int st = !label_path ? error_set(e, CDL_ERUNTIME, "out of memory for a label file's name")
             : !found    ? error_set(e, CDL_ERUNTIME,
                                     "%s: its label file %s does not exist (darknet's rule: the "
                                        "image's path with /images/ or /JPEGImages/ made /labels/, "
                                        "else beside the image, with the extension .txt)",
                                     l->paths[i], label_path)
                         : boxes_read(label_path, s->classes, truth, max_boxes, &n, e);
    free(label_path);
    return st;
}

static const char *files_path(const SampleSource *s, int i)
{
    const FileList *l = s->impl;
    return l->paths[i];
}

static void files_destroy(SampleSource *s)
{
    file_list_free(s->impl);
    free(s->impl);
}

int source_from_file_list(SampleSource *s, FileList *l, int classes, const char *where, Error *e)
{
    memset(s, 0, sizeof *s);
    if (l->n == 0) {
        file_list_free(l);
        return error_set(e, CDL_ERUNTIME, "%s: no images", where);
    }
    FileList *owned = malloc(sizeof *owned);
    if (!owned) {
        file_list_free(l);
        return error_set(e, CDL_ERUNTIME, "%s: out of memory", where);
    }
    *owned = *l;
    memset(l, 0, sizeof *l);
    s->n = owned->n;
    s->classes = classes;
    s->read = files_read;
    s->read_boxes = files_read_boxes;
    s->path = files_path;
    s->destroy = files_destroy;
    s->impl = owned;
    return CDL_OK;
}

int source_is_files(const SampleSource *s)
{
    return s->read == files_read;
}

int source_ambiguous_labels(const SampleSource *s, const char **first_path)
{
    const FileList *l = source_is_files(s) ? s->impl : NULL;
    if (first_path) {
        *first_path = l ? l->first_ambiguous : NULL;
    }
    return l ? l->ambiguous : 0;
}

/* ---- validation split ---- */

/* The stream of the split's draws (util/rng.h), apart from the loader's and augmentation's. */
#define SPLIT_STREAM 0x5b1170000000ull

/* The class bucket of a label: labels outside [0, classes) share the last one. */
static int bucket(int label, int classes)
{
    return label >= 0 && label < classes ? label : classes;
}

/* Marks held[i] for the samples of all that validate: per class, as many as the evenly spread
   rule (i held when floor((i + 1) * m / n) > floor(i * m / n)) puts among that class's
   samples, picked by a shuffle seeded with seed. Scratch: order [n], start [2 * (classes + 2)]
   zeroed. */
static void mark_held(const FileList *all, int classes, int64_t m, uint64_t seed, char *held,
                      int *order, int *start)
{
    const int64_t n = all->n;
    int *fill = start + classes + 2;
    for (int64_t i = 0; i < n; i++) { /* order: the samples grouped by class (counting sort) */
        start[bucket(all->labels[i], classes) + 1]++;
    }
    for (int c = 0; c <= classes; c++) {
        start[c + 1] += start[c];
        fill[c] = start[c];
    }
    for (int64_t i = 0; i < n; i++) {
        order[fill[bucket(all->labels[i], classes)]++] = (int)i;
    }
    Rng rng;
    rng_seed(&rng, seed, SPLIT_STREAM);
    for (int c = 0; c <= classes; c++) {
        int *members = order + start[c];
        const int count = start[c + 1] - start[c];
        int k = 0;
        for (int j = 0; j < count; j++) {
            const int64_t i = members[j];
            k += (i + 1) * m / n > i * m / n;
        }
        rng_shuffle(&rng, members, count);
        for (int j = 0; j < count; j++) {
            held[members[j]] = j < k;
        }
    }
}

int source_files_split(SampleSource *s, float fraction, uint64_t seed, SampleSource *held_out,
                       Error *e)
{
    memset(held_out, 0, sizeof *held_out);
    if (!source_is_files(s)) {
        return error_set(e, CDL_EUSAGE, "source_files_split: not a file source");
    }
    FileList *all = s->impl;
    int64_t n = all->n, m = (int64_t)((double)n * fraction + 0.5);
    if (!(fraction > 0.0f && fraction < 1.0f) || m < 1 || m >= n) {
        source_free(s);
        return error_set(e, CDL_EUSAGE,
                         "valid_split=%g of %lld samples leaves no sample on one side",
                         (double)fraction, (long long)n);
    }
    const int n_classes = s->classes > 0 ? s->classes : 0;
    char *held_flag = malloc((size_t)n);
    int *order = malloc((size_t)n * sizeof *order);
    int *start = calloc(2 * ((size_t)n_classes + 2), sizeof *start);
    const int allocated = held_flag && order && start;
    if (allocated) {
        mark_held(all, n_classes, m, seed, held_flag, order, start);
    }
    free(order);
    free(start);
    if (!allocated) {
        free(held_flag);
        source_free(s);
        return error_set(e, CDL_ERUNTIME, "out of memory splitting %lld samples", (long long)n);
    }
    FileList kept = {0}, held = {0};
    int rc = CDL_OK;
    for (int64_t i = 0; i < n && !rc; i++) {
        rc = file_list_add(held_flag[i] ? &held : &kept, all->paths[i], all->labels[i], e);
        all->paths[i] = NULL; /* owned by kept or held now (or freed by file_list_add) */
    }
    free(held_flag);
    if (rc) {
        file_list_free(&kept);
        file_list_free(&held);
        source_free(s);
        return rc;
    }
    kept.ambiguous = all->ambiguous;
    kept.first_ambiguous = all->first_ambiguous;
    all->first_ambiguous = NULL;
    int classes = s->classes;
    source_free(s);
    if ((rc = source_from_file_list(s, &kept, classes, "train", e))) {
        file_list_free(&held);
        return rc;
    }
    if ((rc = source_from_file_list(held_out, &held, classes, "valid", e))) {
        source_free(s);
    }
    return rc;
}

/* ---- class-name lookup ---- */

static int compare_entries(const void *a, const void *b)
{
    const NameEntry *x = a, *y = b;
    if (x->len != y->len) {
        return x->len < y->len ? -1 : 1;
    }
    return memcmp(x->name, y->name, x->len);
}

int name_index_build(NameIndex *ix, char *const *names, int n, Error *e)
{
    memset(ix, 0, sizeof *ix);
    ix->sorted = malloc((size_t)(n > 0 ? n : 1) * sizeof *ix->sorted);
    ix->widths = malloc((size_t)(n > 0 ? n : 1) * sizeof *ix->widths);
    if (!ix->sorted || !ix->widths) {
        name_index_free(ix);
        return error_set(e, CDL_ERUNTIME, "out of memory for %d class names", n);
    }
    for (int k = 0; k < n; k++) {
        ix->sorted[k] = (NameEntry){names[k], strlen(names[k]), k};
        ix->starts[(unsigned char)names[k][0]] = 1;
    }
    qsort(ix->sorted, (size_t)n, sizeof *ix->sorted, compare_entries);
    ix->n = n;
    for (int k = 0; k < n; k++) {
        if (ix->n_widths == 0 || ix->widths[ix->n_widths - 1] != ix->sorted[k].len) {
            ix->widths[ix->n_widths++] = ix->sorted[k].len;
        }
    }
    return CDL_OK;
}

void name_index_free(NameIndex *ix)
{
    free(ix->sorted);
    free(ix->widths);
    memset(ix, 0, sizeof *ix);
}

int name_index_find(const NameIndex *ix, const char *s, size_t len)
{
    NameEntry key = {s, len, -1};
    const NameEntry *hit = bsearch(&key, ix->sorted, (size_t)ix->n, sizeof key, compare_entries);
    return hit ? hit->cls : -1;
}
