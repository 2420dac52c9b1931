/* In-memory labelled image dataset: IDX (MNIST/Fashion-MNIST) and digits-style CSV readers,
   tail split for validation, and batch filling as float NCHW. */
#include "data/dataset.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "util/file.h"

enum {
    IDX_MAGIC_LABELS = 0x00000801,
    IDX_MAGIC_IMAGES = 0x00000803,
    MAX_SIDE = 16384,
};

void dataset_free(Dataset *d)
{
    if (!d) {
        return;
    }
    free(d->pixels);
    free(d->labels);
    memset(d, 0, sizeof *d);
}

static uint32_t read_be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

int dataset_peek_idx_shape(const char *path, int *c, int *h, int *w)
{
    gzFile f = gzopen(path, "rb");
    uint8_t head[16];
    const int got = f ? gzread(f, head, sizeof head) : 0;
    if (f) {
        gzclose(f);
    }
    if (got != (int)sizeof head || read_be32(head) != IDX_MAGIC_IMAGES ||
        read_be32(head + 8) > 65536 || read_be32(head + 12) > 65536) {
        return 0;
    }
    *c = 1;
    *h = (int)read_be32(head + 8);
    *w = (int)read_be32(head + 12);
    return 1;
}

/* Checks an IDX header (magic, dimension sizes) and that the file holds exactly the data it
   announces. dims receives ndim sizes; returns the payload offset via *data_offset. */
static int idx_check(const char *path, const uint8_t *buf, size_t bytes, uint32_t magic, int ndim,
                     uint32_t *dims, size_t *data_offset, Error *e)
{
    size_t header = 4 + 4 * (size_t)ndim;
    if (bytes < 4) {
        return error_set(e, CDL_ERUNTIME, "%s: truncated: %zu bytes, no IDX header", path, bytes);
    }
    uint32_t got = read_be32(buf);
    if (got != magic) {
        return error_set(e, CDL_ERUNTIME, "%s: IDX magic 0x%08x, expected 0x%08x (%s)", path,
                         (unsigned)got, (unsigned)magic,
                         magic == IDX_MAGIC_IMAGES ? "ubyte images" : "ubyte labels");
    }
    if (bytes < header) {
        return error_set(e, CDL_ERUNTIME, "%s: truncated: %zu bytes, header needs %zu", path, bytes,
                         header);
    }
    uint64_t payload = 1;
    for (int i = 0; i < ndim; i++) {
        dims[i] = read_be32(buf + 4 + 4 * i);
        uint32_t limit = i == 0 ? (uint32_t)INT32_MAX : MAX_SIDE;
        if (dims[i] == 0 || dims[i] > limit) {
            return error_set(e, CDL_ERUNTIME, "%s: IDX dimension %d is %u (expected 1..%u)", path,
                             i, (unsigned)dims[i], (unsigned)limit);
        }
        payload *= dims[i];
    }
    if (bytes - header < payload) {
        return error_set(e, CDL_ERUNTIME,
                         "%s: truncated: the header announces %llu data bytes, the file "
                         "holds %zu",
                         path, (unsigned long long)payload, bytes - header);
    }
    if (bytes - header > payload) {
        return error_set(e, CDL_ERUNTIME,
                         "%s: %llu unexpected bytes after the %llu data bytes its header "
                         "announces",
                         path, (unsigned long long)(bytes - header - payload),
                         (unsigned long long)payload);
    }
    *data_offset = header;
    return CDL_OK;
}

static int load_idx(const char *images_path, const uint8_t *buf, size_t bytes,
                    const char *labels_path, Dataset *d, Error *e)
{
    uint32_t dims[3];
    size_t offset;
    int rc = idx_check(images_path, buf, bytes, IDX_MAGIC_IMAGES, 3, dims, &offset, e);
    if (rc) {
        return rc;
    }
    if (!labels_path) {
        return error_set(e, CDL_EUSAGE, "%s: holds IDX images: give its IDX labels file too",
                         images_path);
    }
    uint8_t *lbuf;
    size_t lbytes;
    rc = file_read_path_gz(labels_path, FILE_MAX_DATASET_BYTES, "dataset", (char **)&lbuf, &lbytes,
                           e);
    if (rc) {
        return rc;
    }
    uint32_t n_labels = 0;
    size_t loffset;
    rc = idx_check(labels_path, lbuf, lbytes, IDX_MAGIC_LABELS, 1, &n_labels, &loffset, e);
    if (!rc && n_labels != dims[0]) {
        rc = error_set(e, CDL_ERUNTIME, "%s: holds %u labels but '%s' holds %u images", labels_path,
                       (unsigned)n_labels, images_path, (unsigned)dims[0]);
    }
    size_t plane = (size_t)dims[1] * dims[2];
    if (!rc) {
        d->n = (int)dims[0];
        d->c = 1;
        d->h = (int)dims[1];
        d->w = (int)dims[2];
        d->max_value = 255.0f;
        d->pixels = malloc((size_t)d->n * plane);
        d->labels = malloc((size_t)d->n * sizeof *d->labels);
        if (!d->pixels || !d->labels) {
            rc = error_set(e, CDL_ERUNTIME, "%s: out of memory for %d images", images_path, d->n);
        }
    }
    if (!rc) {
        memcpy(d->pixels, buf + offset, (size_t)d->n * plane);
        int max_label = 0;
        for (int i = 0; i < d->n; i++) {
            d->labels[i] = lbuf[loffset + i];
            if (d->labels[i] > max_label) {
                max_label = d->labels[i];
            }
        }
        d->classes = max_label + 1;
    }
    free(lbuf);
    return rc;
}

/* Growable byte/int arrays for the CSV reader. */
typedef struct CsvRows {
    uint8_t *pixels;
    size_t pixel_cap;
    int *labels;
    size_t label_cap;
} CsvRows;

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap) {
        return 0;
    }
    size_t cap_new = *cap ? *cap : 1024;
    while (cap_new < need) {
        cap_new *= 2;
    }
    void *q = realloc(*p, cap_new * elem);
    if (!q) {
        return -1;
    }
    *p = q;
    *cap = cap_new;
    return 0;
}

/* Parses one numeric field at *pp (spaces allowed around it) that must be an integer in
   0..255; advances *pp past the field (to the ',' or the line end). */
static int csv_field(const char *path, int line, int field, const char **pp, int *value, Error *e)
{
    const char *p = *pp;
    while (*p == ' ' || *p == '\t') {
        p++;
    }
    const char *start = p;
    char *end = (char *)p;
    double v = 0;
    if (*p != ',' && *p != '\n' && *p != '\r' && *p != 0) {
        v = strtod(p, &end);
    }
    const char *q = end;
    while (*q == ' ' || *q == '\t') {
        q++;
    }
    if (end == start || (*q != ',' && *q != '\n' && *q != '\r' && *q != 0)) {
        int shown = 0;
        while (start[shown] && start[shown] != ',' && start[shown] != '\n' &&
               start[shown] != '\r' && shown < 24) {
            shown++;
        }
        return error_set(e, CDL_ERUNTIME, "%s:%d: field %d is not a number: '%.*s'", path, line,
                         field, shown, start);
    }
    if (!isfinite(v) || v != floor(v) || v < 0 || v > 255) {
        return error_set(e, CDL_ERUNTIME, "%s:%d: field %d is %g, expected an integer in 0..255",
                         path, line, field, v);
    }
    *value = (int)v;
    *pp = q;
    return CDL_OK;
}

static int load_csv(const char *path, const char *text, size_t bytes, Dataset *d, Error *e)
{
    for (size_t i = 0; i < bytes && i < 512; i++) {
        unsigned char ch = (unsigned char)text[i];
        if (ch < 0x20 && ch != '\t' && ch != '\n' && ch != '\r') {
            return error_set(e, CDL_ERUNTIME, "%s: neither an IDX nor a CSV file", path);
        }
    }
    CsvRows rows = {0};
    int fields = 0, first_line = 0, n = 0, max_pixel = 0, max_label = 0, rc = CDL_OK;
    const char *p = text + file_bom_bytes(text), *end = text + bytes;
    for (int line = 1; p < end && !rc; line++) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol) {
            eol = end;
        }
        const char *s = p;
        while (s < eol && (*s == ' ' || *s == '\t' || *s == '\r')) {
            s++;
        }
        if (s == eol) {
            p = eol + 1;
            continue;
        }
        int count = 1;
        for (const char *c = s; c < eol; c++) {
            count += *c == ',';
        }
        if (!fields) {
            int values = count - 1, side = (int)lround(sqrt((double)values));
            if (values < 1 || side * side != values) {
                rc = error_set(e, CDL_ERUNTIME,
                               "%s:%d: %d fields: expected side*side pixel values then the label",
                               path, line, count);
                break;
            }
            fields = count;
            first_line = line;
            d->c = 1;
            d->h = d->w = side;
        } else if (count != fields) {
            rc = error_set(e, CDL_ERUNTIME, "%s:%d: %d fields, expected %d as on line %d", path,
                           line, count, fields, first_line);
            break;
        }
        if (n == INT32_MAX ||
            grow((void **)&rows.pixels, &rows.pixel_cap, ((size_t)n + 1) * (fields - 1), 1) ||
            grow((void **)&rows.labels, &rows.label_cap, (size_t)n + 1, sizeof(int))) {
            rc = error_set(e, CDL_ERUNTIME, "%s:%d: out of memory", path, line);
            break;
        }
        for (int f = 0; f < fields && !rc; f++) {
            int v = 0;
            rc = csv_field(path, line, f + 1, &s, &v, e);
            if (rc) {
                break;
            }
            s++; /* past ',' */
            if (f < fields - 1) {
                rows.pixels[(size_t)n * (fields - 1) + f] = (uint8_t)v;
                max_pixel = v > max_pixel ? v : max_pixel;
            } else {
                rows.labels[n] = v;
                max_label = v > max_label ? v : max_label;
            }
        }
        n++;
        p = eol + 1;
    }
    if (!rc && n == 0) {
        rc = error_set(e, CDL_ERUNTIME, "%s: holds no samples", path);
    }
    if (rc) {
        free(rows.pixels);
        free(rows.labels);
        memset(d, 0, sizeof *d);
        return rc;
    }
    d->n = n;
    d->pixels = rows.pixels;
    d->labels = rows.labels;
    d->classes = max_label + 1;
    d->max_value = max_pixel <= 16 ? 16.0f : 255.0f;
    return CDL_OK;
}

int dataset_load(const char *images_path, const char *labels_path, Dataset *d, Error *e)
{
    memset(d, 0, sizeof *d);
    uint8_t *buf;
    size_t bytes;
    int rc =
        file_read_path_gz(images_path, FILE_MAX_DATASET_BYTES, "dataset", (char **)&buf, &bytes, e);
    if (rc) {
        return rc;
    }
    if (bytes == 0) {
        rc = error_set(e, CDL_ERUNTIME, "%s: the file is empty", images_path);
    } else if (buf[0] == 0) {
        rc = load_idx(images_path, buf, bytes, labels_path, d, e);
    } else if (labels_path) {
        rc = error_set(e, CDL_EUSAGE,
                       "'%s' is not IDX images (CSV files carry their own labels) but a labels "
                       "file '%s' was given",
                       images_path, labels_path);
    } else {
        rc = load_csv(images_path, (const char *)buf, bytes, d, e);
    }
    free(buf);
    if (rc) {
        dataset_free(d);
    }
    return rc;
}

int dataset_split_tail(Dataset *d, float fraction, Dataset *held_out, Error *e)
{
    memset(held_out, 0, sizeof *held_out);
    if (!(fraction > 0.0f && fraction < 1.0f)) {
        return error_set(e, CDL_EUSAGE, "valid_split %g must be between 0 and 1", fraction);
    }
    int k = (int)((double)d->n * fraction + 0.5);
    if (k < 1 || k >= d->n) {
        return error_set(e, CDL_EUSAGE,
                         "valid_split %g of %d samples leaves an empty training or validation set",
                         fraction, d->n);
    }
    size_t sample = (size_t)d->c * d->h * d->w;
    int keep = d->n - k;
    *held_out = *d;
    held_out->n = k;
    held_out->pixels = malloc((size_t)k * sample);
    held_out->labels = malloc((size_t)k * sizeof *held_out->labels);
    if (!held_out->pixels || !held_out->labels) {
        dataset_free(held_out);
        return error_set(e, CDL_ERUNTIME, "out of memory splitting %d samples", k);
    }
    memcpy(held_out->pixels, d->pixels + (size_t)keep * sample, (size_t)k * sample);
    memcpy(held_out->labels, d->labels + keep, (size_t)k * sizeof *d->labels);
    d->n = keep;
    uint8_t *pixels = realloc(d->pixels, (size_t)keep * sample);
    int *labels = realloc(d->labels, (size_t)keep * sizeof *d->labels);
    d->pixels = pixels ? pixels : d->pixels;
    d->labels = labels ? labels : d->labels;
    return CDL_OK;
}

void dataset_fill_batch(const Dataset *d, const int *idx, int n, float *x, int *y)
{
    size_t sample = (size_t)d->c * d->h * d->w;
    const float max_value = d->max_value;
    for (int i = 0; i < n; i++) {
        const uint8_t *src = d->pixels + (size_t)idx[i] * sample;
        float *dst = x + (size_t)i * sample;
        for (size_t j = 0; j < sample; j++) {
            dst[j] = (float)src[j] / max_value;
        }
        if (y) {
            y[i] = d->labels[idx[i]];
        }
    }
}
