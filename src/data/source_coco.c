/* A detection sample source over a COCO-style JSON file: the images' paths and sizes and, image by
 * image, their annotations converted to darknet's truth boxes once, when the file is opened. */
#include "data/source_coco.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "data/boxes.h"
#include "data/source_files.h"
#include "util/file.h"

/* The JSON file bigger than this is refused (COCO 2017's train annotations are about 450 MB). */
#define COCO_MAX_BYTES ((size_t)1 << 30)

/* One image's id with its index in `images` (or a category's with its class), sorted by id for
 * lookup. */
typedef struct IdIndex {
    double id;
    int index;
} IdIndex;

static int compare_ids(const void *a, const void *b)
{
    const double x = ((const IdIndex *)a)->id, y = ((const IdIndex *)b)->id;
    return x < y ? -1 : x > y;
}

/* The index of id in sorted [n], or -1. */
static int find_id(const IdIndex *sorted, int n, double id)
{
    const IdIndex key = {id, 0};
    const IdIndex *hit = bsearch(&key, sorted, (size_t)n, sizeof *sorted, compare_ids);
    return hit ? hit->index : -1;
}

/* Reads and parses json_path; a syntax error names FILE:LINE. */
static int parse_file(const char *json_path, cJSON **root, Error *e)
{
    char *text;
    size_t bytes;
    int st = file_read_path(json_path, COCO_MAX_BYTES, "COCO JSON", &text, &bytes, e);
    if (st)
        return st;
    *root = cJSON_ParseWithLength(text, bytes);
    if (!*root) {
        const char *at = cJSON_GetErrorPtr();
        int line = 1;
        for (const char *p = text; at && p < at && p < text + bytes; p++)
            line += *p == '\n';
        st = error_set(e, CDL_EUSAGE, "%s:%d: not valid JSON", json_path, line);
    } else if (!cJSON_IsObject(*root)) {
        st = error_set(e, CDL_EUSAGE,
                       "%s: not a JSON object (COCO's images, annotations, "
                       "categories)",
                       json_path);
    }
    free(text);
    if (st)
        cJSON_Delete(*root);
    return st;
}

/* The array root[key], or CDL_EUSAGE naming it. */
static int get_array(const cJSON *root, const char *key, const char *json_path, const cJSON **out,
                     Error *e)
{
    *out = cJSON_GetObjectItemCaseSensitive(root, key);
    return cJSON_IsArray(*out)
               ? CDL_OK
               : error_set(e, CDL_EUSAGE, "%s: no \"%s\" array (COCO's layout)", json_path, key);
}

/* 1 when item holds an integer number (a COCO id or size). */
static int is_integer(const cJSON *item)
{
    return cJSON_IsNumber(item) && isfinite(item->valuedouble) &&
           item->valuedouble == floor(item->valuedouble);
}

/* Sorts ids [n] and fails naming key[i] on the first id given twice. */
static int sort_unique(IdIndex *ids, int n, const char *json_path, const char *key, Error *e)
{
    qsort(ids, (size_t)n, sizeof *ids, compare_ids);
    for (int i = 1; i < n; i++)
        if (ids[i].id == ids[i - 1].id)
            return error_set(e, CDL_EUSAGE, "%s: %s[%d]: id %.0f is also %s[%d]'s", json_path, key,
                             ids[i].index, ids[i].id, key, ids[i - 1].index);
    return CDL_OK;
}

/* The categories' ids sorted with their classes into *ids, their names (given names) in order. */
static int read_categories(const cJSON *root, const char *json_path, IdIndex **ids, char ***names,
                           int *n, Error *e)
{
    const cJSON *list;
    int st = get_array(root, "categories", json_path, &list, e);
    *n = st ? 0 : cJSON_GetArraySize(list);
    if (!st && *n == 0)
        st = error_set(e, CDL_EUSAGE, "%s: \"categories\" is empty", json_path);
    *ids = st ? NULL : malloc((size_t)*n * sizeof **ids);
    if (!st && !*ids)
        st = error_set(e, CDL_ERUNTIME, "%s: out of memory", json_path);
    if (!st && names && !(*names = calloc((size_t)*n, sizeof **names)))
        st = error_set(e, CDL_ERUNTIME, "%s: out of memory", json_path);
    int i = 0;
    for (const cJSON *c = st ? NULL : list->child; c; c = c->next, i++) {
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(c, "id");
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(c, "name");
        if (!is_integer(id) || !cJSON_IsString(name)) {
            st = error_set(e, CDL_EUSAGE,
                           "%s: categories[%d]: needs an integer \"id\" and a "
                           "string \"name\"",
                           json_path, i);
            break;
        }
        (*ids)[i] = (IdIndex){id->valuedouble, i};
        if (names && !((*names)[i] = strdup(name->valuestring))) {
            st = error_set(e, CDL_ERUNTIME, "%s: out of memory", json_path);
            break;
        }
    }
    return st ? st : sort_unique(*ids, *n, json_path, "categories", e);
}

static void free_names(char **names, int n)
{
    for (int i = 0; names && i < n; i++)
        free(names[i]);
    free(names);
}

int coco_category_names(const char *json_path, char ***names, int *n, Error *e)
{
    cJSON *root;
    IdIndex *ids = NULL;
    *names = NULL;
    int st = parse_file(json_path, &root, e);
    if (st)
        return st;
    st = read_categories(root, json_path, &ids, names, n, e);
    if (st) {
        free_names(*names, *n);
        *names = NULL;
        *n = 0;
    }
    free(ids);
    cJSON_Delete(root);
    return st;
}

/* The set behind a COCO source. */
typedef struct CocoSet {
    FileList files; /* the images, in the file's order */
    int *width;     /* [n] the images' sizes as the file gives them */
    int *height;    /* [n] */
    int *first;     /* [n + 1]: image i's boxes are rows first[i] .. first[i + 1] - 1 of truth */
    float *truth;   /* [first[n]][TRUTH_FLOATS] */
} CocoSet;

static void coco_free(CocoSet *c)
{
    file_list_free(&c->files);
    free(c->width);
    free(c->height);
    free(c->first);
    free(c->truth);
    memset(c, 0, sizeof *c);
}

/* Reads `images` into c (paths, sizes) and their ids sorted into *ids. */
static int read_images(const cJSON *root, const char *json_path, CocoSet *c, IdIndex **ids,
                       Error *e)
{
    const cJSON *list;
    int st = get_array(root, "images", json_path, &list, e);
    const int n = st ? 0 : cJSON_GetArraySize(list);
    *ids = st ? NULL : malloc(((size_t)n + 1) * sizeof **ids);
    c->width = st ? NULL : malloc(((size_t)n + 1) * sizeof *c->width);
    c->height = st ? NULL : malloc(((size_t)n + 1) * sizeof *c->height);
    if (!st && (!*ids || !c->width || !c->height))
        st = error_set(e, CDL_ERUNTIME, "%s: out of memory for %d images", json_path, n);
    int i = 0;
    for (const cJSON *im = st ? NULL : list->child; im && !st; im = im->next, i++) {
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(im, "id");
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(im, "file_name");
        const cJSON *w = cJSON_GetObjectItemCaseSensitive(im, "width");
        const cJSON *h = cJSON_GetObjectItemCaseSensitive(im, "height");
        if (!is_integer(id) || !cJSON_IsString(name) || !is_integer(w) || !is_integer(h) ||
            w->valuedouble < 1 || h->valuedouble < 1 || w->valuedouble > 1e6 ||
            h->valuedouble > 1e6) {
            st = error_set(e, CDL_EUSAGE,
                           "%s: images[%d]: needs an integer \"id\", a string \"file_name\" and "
                           "a positive integer \"width\" and \"height\"",
                           json_path, i);
            break;
        }
        (*ids)[i] = (IdIndex){id->valuedouble, i};
        c->width[i] = (int)w->valuedouble;
        c->height[i] = (int)h->valuedouble;
        int found;
        st = file_list_add(&c->files, path_resolve(json_path, name->valuestring, &found), 0, e);
    }
    return st ? st : sort_unique(*ids, n, json_path, "images", e);
}

/* Checks annotation a (annotations[i]) and converts it into box [TRUTH_FLOATS]; *image is its
 * image's index, or -1 for a crowd annotation (skipped). */
static int read_annotation(const cJSON *a, int i, const char *json_path, const CocoSet *c,
                           const IdIndex *image_ids, const IdIndex *category_ids, int classes,
                           float *box, int *image, Error *e)
{
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(a, "id");
    char where[64];
    if (is_integer(id))
        snprintf(where, sizeof where, "annotations[%d] (id %.0f)", i, id->valuedouble);
    else
        snprintf(where, sizeof where, "annotations[%d]", i);
    const cJSON *crowd = cJSON_GetObjectItemCaseSensitive(a, "iscrowd");
    *image = -1;
    if (cJSON_IsNumber(crowd) && crowd->valuedouble == 1)
        return CDL_OK;
    const cJSON *image_id = cJSON_GetObjectItemCaseSensitive(a, "image_id");
    const cJSON *category_id = cJSON_GetObjectItemCaseSensitive(a, "category_id");
    const cJSON *bbox = cJSON_GetObjectItemCaseSensitive(a, "bbox");
    const int at =
        is_integer(image_id) ? find_id(image_ids, c->files.n, image_id->valuedouble) : -1;
    const int cls =
        is_integer(category_id) ? find_id(category_ids, classes, category_id->valuedouble) : -1;
    if (at < 0)
        return error_set(e, CDL_EUSAGE, "%s: %s: image_id is no image's id", json_path, where);
    if (cls < 0)
        return error_set(e, CDL_EUSAGE, "%s: %s: category_id is no category's id", json_path,
                         where);
    double v[4];
    int k = 0;
    for (const cJSON *x = cJSON_IsArray(bbox) ? bbox->child : NULL; x; x = x->next, k++)
        if (k < 4 && cJSON_IsNumber(x) && isfinite(x->valuedouble))
            v[k] = x->valuedouble;
        else
            k = 5;
    if (k != 4)
        return error_set(e, CDL_EUSAGE, "%s: %s: bbox must be [x, y, w, h], four finite numbers",
                         json_path, where);
    if (!(v[2] > 0) || !(v[3] > 0))
        return error_set(e, CDL_EUSAGE, "%s: %s: bbox w = %g, h = %g: both must be > 0", json_path,
                         where, v[2], v[3]);
    const double width = c->width[at], height = c->height[at];
    const double cx = (v[0] + v[2] / 2) / width, cy = (v[1] + v[3] / 2) / height;
    const double w = v[2] / width, h = v[3] / height;
    if (!(cx > 0 && cx < 1 && cy > 0 && cy < 1))
        return error_set(e, CDL_EUSAGE,
                         "%s: %s: bbox centre (%g, %g) is outside the %dx%d image (its box must "
                         "have its centre inside)",
                         json_path, where, v[0] + v[2] / 2, v[1] + v[3] / 2, c->width[at],
                         c->height[at]);
    if (w > 1 || h > 1)
        return error_set(e, CDL_EUSAGE, "%s: %s: bbox %gx%g is larger than the %dx%d image",
                         json_path, where, v[2], v[3], c->width[at], c->height[at]);
    box[TRUTH_X] = (float)cx;
    box[TRUTH_Y] = (float)cy;
    box[TRUTH_W] = (float)w;
    box[TRUTH_H] = (float)h;
    box[TRUTH_CLASS] = (float)cls;
    *image = at;
    return CDL_OK;
}

/* Reads `annotations` into c's boxes, grouped by image in the file's order. */
static int read_annotations(const cJSON *root, const char *json_path, CocoSet *c,
                            const IdIndex *image_ids, const IdIndex *category_ids, int classes,
                            Error *e)
{
    const cJSON *list;
    int st = get_array(root, "annotations", json_path, &list, e);
    const int n = st ? 0 : cJSON_GetArraySize(list), images = c->files.n;
    float *boxes = st ? NULL : malloc(((size_t)n + 1) * TRUTH_FLOATS * sizeof *boxes);
    int *owner = st ? NULL : malloc(((size_t)n + 1) * sizeof *owner);
    c->first = st ? NULL : calloc((size_t)images + 1, sizeof *c->first);
    c->truth = st ? NULL : malloc(((size_t)n + 1) * TRUTH_FLOATS * sizeof *c->truth);
    if (!st && (!boxes || !owner || !c->first || !c->truth))
        st = error_set(e, CDL_ERUNTIME, "%s: out of memory for %d annotations", json_path, n);
    int i = 0;
    for (const cJSON *a = st ? NULL : list->child; a && !st; a = a->next, i++) {
        st = read_annotation(a, i, json_path, c, image_ids, category_ids, classes,
                             boxes + (size_t)i * TRUTH_FLOATS, &owner[i], e);
        if (!st && owner[i] >= 0)
            c->first[owner[i] + 1]++;
    }
    for (int k = 0; !st && k < images; k++)
        c->first[k + 1] += c->first[k];
    /* a counting sort by image, stable: each image's boxes keep the file's order */
    int *next = st ? NULL : malloc(((size_t)images + 1) * sizeof *next);
    if (!st && !next)
        st = error_set(e, CDL_ERUNTIME, "%s: out of memory", json_path);
    for (int k = 0; !st && k < images; k++)
        next[k] = c->first[k];
    for (int k = 0; !st && k < n; k++)
        if (owner[k] >= 0)
            memcpy(c->truth + (size_t)next[owner[k]]++ * TRUTH_FLOATS,
                   boxes + (size_t)k * TRUTH_FLOATS, TRUTH_FLOATS * sizeof *boxes);
    free(next);
    free(boxes);
    free(owner);
    return st;
}

static int coco_read(const SampleSource *s, int i, Image *img, int *label, Error *e)
{
    const CocoSet *c = s->impl;
    *label = 0;
    int st = image_load(c->files.paths[i], img, e);
    if (!st && (img->w != c->width[i] || img->h != c->height[i])) {
        st = error_set(e, CDL_ERUNTIME, "%s: is %dx%d, but its COCO entry images[%d] says %dx%d",
                       c->files.paths[i], img->w, img->h, i, c->width[i], c->height[i]);
        image_free(img);
    }
    return st;
}

static int coco_read_boxes(const SampleSource *s, int i, float *truth, int max_boxes, Error *e)
{
    (void)e;
    const CocoSet *c = s->impl;
    int n = c->first[i + 1] - c->first[i];
    n = n < max_boxes ? n : max_boxes;
    memcpy(truth, c->truth + (size_t)c->first[i] * TRUTH_FLOATS,
           (size_t)n * TRUTH_FLOATS * sizeof *truth);
    memset(truth + (size_t)n * TRUTH_FLOATS, 0,
           (size_t)(max_boxes - n) * TRUTH_FLOATS * sizeof *truth);
    return CDL_OK;
}

static const char *coco_path(const SampleSource *s, int i)
{
    const CocoSet *c = s->impl;
    return c->files.paths[i];
}

static void coco_destroy(SampleSource *s)
{
    coco_free(s->impl);
    free(s->impl);
}

int source_coco_open(SampleSource *s, const char *json_path, int classes, Error *e)
{
    memset(s, 0, sizeof *s);
    cJSON *root;
    int st = parse_file(json_path, &root, e);
    if (st)
        return st;
    CocoSet *c = calloc(1, sizeof *c);
    IdIndex *image_ids = NULL, *category_ids = NULL;
    int n_categories = 0;
    st = c ? read_categories(root, json_path, &category_ids, NULL, &n_categories, e)
           : error_set(e, CDL_ERUNTIME, "%s: out of memory", json_path);
    if (!st && n_categories != classes)
        st = error_set(e, CDL_EUSAGE, "%s: holds %d categories but there are %d classes", json_path,
                       n_categories, classes);
    st = st ? st : read_images(root, json_path, c, &image_ids, e);
    if (!st && c->files.n == 0)
        st = error_set(e, CDL_EUSAGE, "%s: \"images\" is empty", json_path);
    st = st ? st : read_annotations(root, json_path, c, image_ids, category_ids, n_categories, e);
    free(image_ids);
    free(category_ids);
    cJSON_Delete(root);
    if (st) {
        if (c)
            coco_free(c);
        free(c);
        return st;
    }
    s->n = c->files.n;
    s->classes = classes;
    s->read = coco_read;
    s->read_boxes = coco_read_boxes;
    s->path = coco_path;
    s->destroy = coco_destroy;
    s->impl = c;
    return CDL_OK;
}
