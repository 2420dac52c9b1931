/* Reader for the tests/ref/NAME.ref fixtures; the format is described in ref_fixture.h. */
#include "ref_fixture.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REF_MAGIC "CDLREF 1\n"
#define REF_LINE_MAX 512

/* Reads one header line into buf (without the '\n'). Returns 1 on a line, 0 on a clean end
 * of file before any byte, -1 on error (message printed). */
static int read_line(FILE *fp, const char *path, char *buf, size_t cap)
{
    size_t len = 0;
    for (;;) {
        int c = fgetc(fp);
        if (c == EOF) {
            if (ferror(fp)) {
                fprintf(stderr, "%s: read error: %s\n", path, strerror(errno));
                return -1;
            }
            if (len == 0)
                return 0;
            fprintf(stderr, "%s: truncated tensor header\n", path);
            return -1;
        }
        if (c == '\n')
            break;
        if (len + 1 >= cap) {
            fprintf(stderr, "%s: tensor header longer than %zu bytes\n", path, cap - 1);
            return -1;
        }
        buf[len++] = (char)c;
    }
    buf[len] = '\0';
    return 1;
}

/* Parses a non-negative decimal integer <= max at *s, advancing *s. */
static int parse_int(const char **s, long max, long *out)
{
    const char *p = *s;
    long v = 0;
    if (*p < '0' || *p > '9')
        return -1;
    while (*p >= '0' && *p <= '9') {
        v = v * 10 + (*p - '0');
        if (v > max)
            return -1;
        p++;
    }
    *s = p;
    *out = v;
    return 0;
}

/* Parses "NAME NDIM D0 ... Dn-1" into t (name, ndim, dims, count). */
static int parse_header(const char *line, const char *path, RefTensor *t)
{
    const char *sp = strchr(line, ' ');
    size_t name_len = sp ? (size_t)(sp - line) : strlen(line);
    if (!sp || name_len == 0 || name_len >= sizeof t->name) {
        fprintf(stderr, "%s: bad tensor header '%s'\n", path, line);
        return -1;
    }
    memcpy(t->name, line, name_len);
    t->name[name_len] = '\0';
    const char *p = sp + 1;
    long ndim;
    if (parse_int(&p, 8, &ndim) != 0 || ndim < 1) {
        fprintf(stderr, "%s: tensor '%s': bad NDIM in '%s'\n", path, t->name, line);
        return -1;
    }
    t->ndim = (int)ndim;
    size_t count = 1;
    for (int d = 0; d < t->ndim; d++) {
        long dim;
        if (*p != ' ' || (p++, parse_int(&p, 1L << 30, &dim)) != 0 || dim < 1) {
            fprintf(stderr, "%s: tensor '%s': bad dimension %d in '%s'\n", path, t->name, d, line);
            return -1;
        }
        if (count > ((size_t)1 << 31) / (size_t)dim) {
            fprintf(stderr, "%s: tensor '%s' too large\n", path, t->name);
            return -1;
        }
        t->dims[d] = (int)dim;
        count *= (size_t)dim;
    }
    if (*p != '\0') {
        fprintf(stderr, "%s: tensor '%s': trailing text in header '%s'\n", path, t->name, line);
        return -1;
    }
    for (int d = t->ndim; d < 8; d++)
        t->dims[d] = 0;
    t->count = count;
    return 0;
}

/* Reads t->count little-endian float32 values into a new t->data. */
static int read_data(FILE *fp, const char *path, RefTensor *t)
{
    unsigned char *raw = malloc(t->count * 4);
    t->data = malloc(t->count * sizeof(float));
    if (!raw || !t->data) {
        fprintf(stderr, "%s: out of memory for tensor '%s'\n", path, t->name);
        free(raw);
        return -1;
    }
    if (fread(raw, 4, t->count, fp) != t->count) {
        fprintf(stderr, "%s: tensor '%s': truncated data (%zu values expected)\n", path, t->name,
                t->count);
        free(raw);
        return -1;
    }
    for (size_t i = 0; i < t->count; i++) {
        const unsigned char *b = raw + 4 * i;
        uint32_t u =
            (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
        memcpy(&t->data[i], &u, sizeof u);
    }
    free(raw);
    return 0;
}

int ref_fixture_load(const char *path, RefFixture *f)
{
    f->tensors = NULL;
    f->n = 0;
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        fprintf(stderr, "%s: cannot open reference fixture: %s\n", path, strerror(errno));
        return -1;
    }
    char line[REF_LINE_MAX];
    int cap = 0;
    int rc = read_line(fp, path, line, sizeof line);
    if (rc != 1 || strcmp(line, "CDLREF 1") != 0) {
        if (rc != -1)
            fprintf(stderr, "%s: not a CDLREF 1 file\n", path);
        goto fail;
    }
    while ((rc = read_line(fp, path, line, sizeof line)) == 1) {
        if (f->n == cap) {
            int ncap = cap ? 2 * cap : 16;
            RefTensor *nt = realloc(f->tensors, (size_t)ncap * sizeof *nt);
            if (!nt) {
                fprintf(stderr, "%s: out of memory\n", path);
                goto fail;
            }
            f->tensors = nt;
            cap = ncap;
        }
        RefTensor *t = &f->tensors[f->n];
        memset(t, 0, sizeof *t);
        if (parse_header(line, path, t) != 0)
            goto fail;
        if (ref_fixture_get(f, t->name)) {
            fprintf(stderr, "%s: duplicate tensor '%s'\n", path, t->name);
            goto fail;
        }
        if (read_data(fp, path, t) != 0) {
            free(t->data);
            goto fail;
        }
        f->n++;
    }
    if (rc != 0)
        goto fail;
    fclose(fp);
    return 0;
fail:
    fclose(fp);
    ref_fixture_free(f);
    return -1;
}

const RefTensor *ref_fixture_get(const RefFixture *f, const char *name)
{
    for (int i = 0; i < f->n; i++)
        if (strcmp(f->tensors[i].name, name) == 0)
            return &f->tensors[i];
    return NULL;
}

void ref_fixture_free(RefFixture *f)
{
    for (int i = 0; i < f->n; i++)
        free(f->tensors[i].data);
    free(f->tensors);
    f->tensors = NULL;
    f->n = 0;
}

double ref_max_rel_error(const float *a, const float *b, size_t n)
{
    double scale = 0.0;
    for (size_t i = 0; i < n; i++) {
        double x = a[i], y = b[i];
        if (!isfinite(x) || !isfinite(y))
            return INFINITY;
        scale = fmax(scale, fmax(fabs(x), fabs(y)));
    }
    double floor_ = REF_REL_FLOOR * scale;
    double err = 0.0;
    for (size_t i = 0; i < n; i++) {
        double x = a[i], y = b[i];
        double den = fmax(fmax(fabs(x), fabs(y)), floor_);
        if (den > 0.0)
            err = fmax(err, fabs(x - y) / den);
    }
    return err;
}
