/* NumPy .npy files (see npy.h). Format 1.0: the magic "\x93NUMPY", version 1.0, a
 * little-endian uint16 header length (uint32 from version 2.0), then a Python dict literal
 * ({'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }) padded with spaces and a
 * newline so that the data starts at a multiple of 64 bytes; then the values. */
#include "io/npy.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "util/atomic_file.h"
#include "util/half.h"

#define NPY_ALIGN 64

/* header = the padded dict, terminated by '\n'; returns its length. */
static size_t npy_header(char *header, size_t cap, int n_dims, const int64_t *dims)
{
    char shape[256] = "";
    size_t used = 0;
    for (int k = 0; k < n_dims; k++)
        used += (size_t)snprintf(shape + used, sizeof shape - used, "%lld,%s", (long long)dims[k],
                                 k + 1 < n_dims ? " " : "");
    if (n_dims > 1)
        shape[used - 1] = '\0'; /* "(3, 4)" but "(5,)" */
    size_t len = (size_t)snprintf(header, cap,
                                  "{'descr': '<f4', 'fortran_order': False, "
                                  "'shape': (%s), }",
                                  shape);
    const size_t preamble = 10; /* magic, version, header length */
    while ((preamble + len + 1) % NPY_ALIGN)
        header[len++] = ' ';
    header[len++] = '\n';
    return len;
}

int npy_write(const char *path, const float *data, int n_dims, const int64_t *dims, Error *e)
{
    char header[512];
    const size_t header_len = npy_header(header, sizeof header - NPY_ALIGN, n_dims, dims);
    const unsigned char preamble[10] = {0x93,
                                        'N',
                                        'U',
                                        'M',
                                        'P',
                                        'Y',
                                        1,
                                        0,
                                        (unsigned char)(header_len & 0xff),
                                        (unsigned char)(header_len >> 8)};
    size_t count = 1;
    for (int k = 0; k < n_dims; k++)
        count *= (size_t)dims[k];
    AtomicFile f;
    int st = atomic_file_open(&f, path, FILE_KIND_NPY, e);
    if (st)
        return st;
    fwrite(preamble, 1, sizeof preamble, f.file);
    fwrite(header, 1, header_len, f.file);
    for (size_t i = 0; i < count; i++) {
        uint32_t bits;
        memcpy(&bits, &data[i], sizeof bits);
        const unsigned char le[4] = {(unsigned char)bits, (unsigned char)(bits >> 8),
                                     (unsigned char)(bits >> 16), (unsigned char)(bits >> 24)};
        fwrite(le, 1, sizeof le, f.file);
    }
    return atomic_file_commit(&f, e);
}

/* ---- reading ---- */

/* The text after `'key':` in the header dict (spaces skipped), or NULL. */
static const char *dict_value(const char *dict, const char *key)
{
    char quoted[32];
    snprintf(quoted, sizeof quoted, "'%s'", key);
    const char *p = strstr(dict, quoted);
    if (!p)
        return NULL;
    p += strlen(quoted);
    while (*p == ' ')
        p++;
    if (*p++ != ':')
        return NULL;
    while (*p == ' ')
        p++;
    return p;
}

/* The header dict's descr, fortran_order and shape into a; an error message or NULL. */
static const char *parse_header(const char *dict, NpyArray *a, int *fortran)
{
    const char *descr = dict_value(dict, "descr"), *order = dict_value(dict, "fortran_order");
    const char *shape = dict_value(dict, "shape");
    if (!descr || !order || !shape || *descr != '\'' || *shape != '(')
        return "malformed header (expected 'descr', 'fortran_order' and 'shape')";
    const char *end = strchr(descr + 1, '\'');
    if (!end || end - descr - 1 >= (long)sizeof a->dtype)
        return "malformed header: descr is not a dtype string";
    memcpy(a->dtype, descr + 1, (size_t)(end - descr - 1));
    a->dtype[end - descr - 1] = '\0';
    *fortran = !strncmp(order, "True", 4);
    if (!*fortran && strncmp(order, "False", 5))
        return "malformed header: fortran_order is neither True nor False";
    a->count = 1;
    for (const char *p = shape + 1;;) {
        while (*p == ' ' || *p == ',')
            p++;
        if (*p == ')')
            return NULL;
        char *after;
        const long long d = strtoll(p, &after, 10);
        if (after == p || d < 0 || d > INT32_MAX)
            return "malformed header: shape is not a tuple of sizes";
        if (a->n_dims == NPY_MAX_DIMS)
            return "more than 8 dimensions";
        a->dims[a->n_dims++] = d;
        if (d && a->count > SIZE_MAX / 8 / (size_t)d)
            return "malformed header: the shape's size overflows";
        a->count *= (size_t)d;
        p = after;
    }
}

/* Bytes per element of a dtype cdl reads, 0 for others. */
static size_t dtype_bytes(const char *dtype)
{
    return !strcmp(dtype, "<f4") ? 4 : !strcmp(dtype, "<f8") ? 8 : !strcmp(dtype, "<f2") ? 2 : 0;
}

/* One little-endian element of elem bytes as float32. */
static float element_f32(const unsigned char *b, size_t elem)
{
    uint64_t bits = 0;
    for (size_t k = elem; k-- > 0;)
        bits = bits << 8 | b[k];
    if (elem == 2)
        return half_to_float((uint16_t)bits);
    if (elem == 8) {
        double d;
        memcpy(&d, &bits, sizeof d);
        return (float)d;
    }
    const uint32_t bits32 = (uint32_t)bits;
    float f;
    memcpy(&f, &bits32, sizeof f);
    return f;
}

/* The preamble and header dict of f into *dict (malloc'd, NUL-terminated). */
static int read_header(FILE *f, const char *path, char **dict, Error *e)
{
    unsigned char pre[12];
    *dict = NULL;
    if (fread(pre, 1, 8, f) != 8 || memcmp(pre, "\x93NUMPY", 6))
        return error_set(e, CDL_ERUNTIME, "%s: not a NumPy .npy file (no \\x93NUMPY magic)", path);
    const int major = pre[6], wide = major >= 2;
    if (major < 1 || major > 3 || fread(pre + 8, 1, wide ? 4 : 2, f) != (wide ? 4u : 2u))
        return error_set(e, CDL_ERUNTIME, "%s: .npy format version %d.%d is not supported", path,
                         pre[6], pre[7]);
    size_t len = (size_t)pre[8] | (size_t)pre[9] << 8;
    if (wide)
        len |= (size_t)pre[10] << 16 | (size_t)pre[11] << 24;
    if (len > 1 << 20)
        return error_set(e, CDL_ERUNTIME, "%s: .npy header of %zu bytes is too long", path, len);
    *dict = malloc(len + 1);
    if (!*dict)
        return error_set(e, CDL_ERUNTIME, "%s: out of memory", path);
    if (fread(*dict, 1, len, f) != len)
        return error_set(e, CDL_ERUNTIME, "%s: truncated .npy header", path);
    (*dict)[len] = '\0';
    return CDL_OK;
}

/* The header and data of the open file f into a. */
static int read_array(FILE *f, const char *path, NpyArray *a, Error *e)
{
    char *dict;
    int fortran = 0;
    int st = read_header(f, path, &dict, e);
    const char *why = st ? NULL : parse_header(dict, a, &fortran);
    free(dict);
    if (st || why)
        return st ? st : error_set(e, CDL_ERUNTIME, "%s: %s", path, why);
    const size_t elem = dtype_bytes(a->dtype);
    if (!elem)
        return error_set(e, CDL_EUSAGE,
                         "%s: dtype '%s': cdl reads little-endian float32 ('<f4'), float64 or "
                         "float16 arrays",
                         path, a->dtype);
    if (fortran && a->n_dims > 1)
        return error_set(e, CDL_EUSAGE,
                         "%s: a Fortran-order array: cdl reads C order (np.ascontiguousarray)",
                         path);
    /* a regular file must hold the shape's values exactly: checked before allocating for them */
    struct stat sb;
    const long at = ftell(f);
    const int regular = fstat(fileno(f), &sb) == 0 && S_ISREG(sb.st_mode) && at >= 0;
    const size_t left = regular ? (size_t)(sb.st_size - at) : 0;
    if (regular && left / elem < a->count)
        return error_set(e, CDL_ERUNTIME, "%s: truncated: its shape needs %zu values of %zu bytes",
                         path, a->count, elem);
    if (regular && left > a->count * elem)
        return error_set(e, CDL_ERUNTIME, "%s: bytes after the %zu values of the shape", path,
                         a->count);
    if (!(a->data = malloc(a->count ? a->count * sizeof *a->data : 1)))
        return error_set(e, CDL_ERUNTIME, "%s: out of memory for %zu values", path, a->count);
    unsigned char buf[4096];
    const size_t per_buf = sizeof buf / elem;
    for (size_t done = 0; done < a->count;) {
        const size_t n = a->count - done < per_buf ? a->count - done : per_buf;
        if (fread(buf, elem, n, f) != n)
            return error_set(e, CDL_ERUNTIME,
                             "%s: truncated: its shape needs %zu values of %zu bytes", path,
                             a->count, elem);
        for (size_t k = 0; k < n; k++)
            a->data[done + k] = element_f32(buf + k * elem, elem);
        done += n;
    }
    if (fgetc(f) != EOF)
        return error_set(e, CDL_ERUNTIME, "%s: bytes after the %zu values of the shape", path,
                         a->count);
    return CDL_OK;
}

int npy_read(const char *path, NpyArray *a, Error *e)
{
    memset(a, 0, sizeof *a);
    FILE *f = fopen(path, "rb");
    if (!f)
        return error_set(e, CDL_ERUNTIME, "%s: %s", path, strerror(errno));
    const int st = read_array(f, path, a, e);
    fclose(f);
    if (st)
        npy_array_free(a);
    return st;
}

void npy_array_free(NpyArray *a)
{
    free(a->data);
    memset(a, 0, sizeof *a);
}
