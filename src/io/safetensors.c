/* safetensors files: the header checked against the file, tensors read as float32 and written
 * as F32/I64 (layout in io/safetensors.h). */
#include "io/safetensors.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "util/atomic_file.h"
#include "util/half.h"

/* Bytes per element of a dtype; 0 when safetensors has no such dtype. */
static size_t dtype_bytes(const char *dtype)
{
    static const struct {
        const char *name;
        size_t bytes;
    } table[] = {{"F64", 8}, {"F32", 4}, {"F16", 2},  {"BF16", 2},    {"I64", 8},
                 {"U64", 8}, {"I32", 4}, {"U32", 4},  {"I16", 2},     {"U16", 2},
                 {"I8", 1},  {"U8", 1},  {"BOOL", 1}, {"F8_E4M3", 1}, {"F8_E5M2", 1}};
    for (size_t k = 0; k < sizeof table / sizeof table[0]; k++)
        if (!strcmp(dtype, table[k].name))
            return table[k].bytes;
    return 0;
}

int safetensors_is_path(const char *path)
{
    static const char ext[] = ".safetensors";
    const size_t n = strlen(path), m = sizeof ext - 1;
    return n > m && !strcmp(path + n - m, ext);
}

static uint64_t read_le64(const unsigned char *b)
{
    uint64_t v = 0;
    for (int k = 7; k >= 0; k--)
        v = v << 8 | b[k];
    return v;
}

/* *v = item as a non-negative integer no larger than max; 0 when it is not one. */
static int json_uint(const cJSON *item, double max, uint64_t *v)
{
    if (!cJSON_IsNumber(item))
        return 0;
    const double d = item->valuedouble;
    if (!(d >= 0 && d <= max) || floor(d) != d)
        return 0;
    *v = (uint64_t)d;
    return 1;
}

/* Fills t from the header entry item (named item->string), checking it against data_bytes. */
static int parse_tensor(const Safetensors *st, const cJSON *item, uint64_t data_bytes,
                        SafetensorsTensor *t, Error *e)
{
    const char *name = item->string;
    const cJSON *dtype = cJSON_GetObjectItemCaseSensitive(item, "dtype");
    const cJSON *shape = cJSON_GetObjectItemCaseSensitive(item, "shape");
    const cJSON *offsets = cJSON_GetObjectItemCaseSensitive(item, "data_offsets");
    if (!cJSON_IsObject(item) || !cJSON_IsString(dtype) || !cJSON_IsArray(shape) ||
        !cJSON_IsArray(offsets))
        return error_set(e, CDL_EUSAGE,
                         "%s: tensor '%s': not an object with dtype, shape and data_offsets",
                         st->path, name);
    const size_t elem = dtype_bytes(dtype->valuestring);
    if (!elem)
        return error_set(e, CDL_EUSAGE, "%s: tensor '%s': unknown dtype '%.16s'", st->path, name,
                         dtype->valuestring);
    snprintf(t->dtype, sizeof t->dtype, "%s", dtype->valuestring);
    t->n_dims = cJSON_GetArraySize(shape);
    if (t->n_dims > SAFETENSORS_MAX_DIMS)
        return error_set(e, CDL_EUSAGE, "%s: tensor '%s': %d dimensions (at most %d)", st->path,
                         name, t->n_dims, SAFETENSORS_MAX_DIMS);
    uint64_t count = 1;
    for (int d = 0; d < t->n_dims; d++) {
        uint64_t n;
        if (!json_uint(cJSON_GetArrayItem(shape, d), (double)INT64_MAX / 2, &n))
            return error_set(e, CDL_EUSAGE, "%s: tensor '%s': shape entry %d is not a size",
                             st->path, name, d);
        t->dims[d] = (int64_t)n;
        if (n && count > data_bytes / elem / n)
            return error_set(e, CDL_EUSAGE,
                             "%s: tensor '%s': its shape needs more than the file's %llu data "
                             "bytes (a truncated file?)",
                             st->path, name, (unsigned long long)data_bytes);
        count *= n;
    }
    t->count = count;
    if (cJSON_GetArraySize(offsets) != 2 ||
        !json_uint(cJSON_GetArrayItem(offsets, 0), (double)data_bytes, &t->begin) ||
        !json_uint(cJSON_GetArrayItem(offsets, 1), (double)data_bytes, &t->end) ||
        t->begin > t->end)
        return error_set(e, CDL_EUSAGE,
                         "%s: tensor '%s': data_offsets are not [begin, end] within the file's "
                         "%llu data bytes (a truncated file?)",
                         st->path, name, (unsigned long long)data_bytes);
    if (t->end - t->begin != count * elem)
        return error_set(e, CDL_EUSAGE,
                         "%s: tensor '%s': %llu data bytes for a %s tensor of %llu elements",
                         st->path, name, (unsigned long long)(t->end - t->begin), t->dtype,
                         (unsigned long long)count);
    if (!(t->name = strdup(name)))
        return error_set(e, CDL_ERUNTIME, "out of memory");
    return CDL_OK;
}

/* qsort order of tensors by their first data byte, then their end. */
static int by_offsets(const void *a, const void *b)
{
    const SafetensorsTensor *x = *(const SafetensorsTensor *const *)a;
    const SafetensorsTensor *y = *(const SafetensorsTensor *const *)b;
    if (x->begin != y->begin)
        return x->begin < y->begin ? -1 : 1;
    return (x->end > y->end) - (x->end < y->end);
}

/* Refuses tensors whose bytes overlap, and data bytes no tensor covers (the format's rule: the
 * tensors tile the data exactly, as the reference reader checks). */
static int check_tiling(const Safetensors *st, uint64_t data_bytes, Error *e)
{
    const SafetensorsTensor **order = malloc((st->n_tensors ? st->n_tensors : 1) * sizeof *order);
    if (!order)
        return error_set(e, CDL_ERUNTIME, "out of memory");
    for (int k = 0; k < st->n_tensors; k++)
        order[k] = &st->tensors[k];
    qsort(order, st->n_tensors, sizeof *order, by_offsets);
    int code = CDL_OK;
    uint64_t covered = 0;
    for (int k = 0; k < st->n_tensors && !code; k++) {
        if (order[k]->begin < covered)
            code = error_set(
                e, CDL_EUSAGE, "%s: tensors '%s' and '%s' share data bytes %llu-%llu", st->path,
                order[k - 1]->name, order[k]->name, (unsigned long long)order[k]->begin,
                (unsigned long long)(covered < order[k]->end ? covered : order[k]->end));
        else if (order[k]->begin > covered)
            code =
                error_set(e, CDL_EUSAGE, "%s: data bytes %llu-%llu belong to no tensor", st->path,
                          (unsigned long long)covered, (unsigned long long)order[k]->begin);
        covered = order[k]->end;
    }
    if (!code && covered != data_bytes)
        code = error_set(e, CDL_EUSAGE,
                         "%s: data bytes %llu-%llu after the last tensor belong to no tensor",
                         st->path, (unsigned long long)covered, (unsigned long long)data_bytes);
    free(order);
    return code;
}

/* The header text (header_bytes of it) as tensors. */
static int parse_header(Safetensors *st, const char *text, size_t header_bytes, uint64_t data_bytes,
                        Error *e)
{
    cJSON *root = cJSON_ParseWithLength(text, header_bytes);
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return error_set(e, CDL_EUSAGE, "%s: the header is not a JSON object", st->path);
    }
    int st_code = CDL_OK;
    const int n = cJSON_GetArraySize(root);
    if (!(st->tensors = calloc(n ? (size_t)n : 1, sizeof *st->tensors)))
        st_code = error_set(e, CDL_ERUNTIME, "out of memory");
    for (const cJSON *item = root->child; item && !st_code; item = item->next) {
        if (!strcmp(item->string, "__metadata__")) {
            if (!cJSON_IsObject(item))
                st_code = error_set(e, CDL_EUSAGE, "%s: __metadata__ is not an object", st->path);
            continue;
        }
        int added;
        if (byte_set_intern(&st->names, item->string, strlen(item->string), &added) < 0)
            st_code = error_set(e, CDL_ERUNTIME, "out of memory");
        else if (!added)
            st_code =
                error_set(e, CDL_EUSAGE, "%s: tensor '%s' appears twice", st->path, item->string);
        else if (!(st_code = parse_tensor(st, item, data_bytes, &st->tensors[st->n_tensors], e)))
            st->n_tensors++;
    }
    cJSON_Delete(root);
    return st_code ? st_code : check_tiling(st, data_bytes, e);
}

int safetensors_open(Safetensors *st, const char *path, Error *e)
{
    memset(st, 0, sizeof *st);
    if (!(st->path = strdup(path)))
        return error_set(e, CDL_ERUNTIME, "out of memory");
    if (!(st->file = fopen(path, "rb")))
        return error_set(e, errno == ENOENT ? CDL_EUSAGE : CDL_ERUNTIME, "%s: %s", path,
                         strerror(errno));
    if (fseek(st->file, 0, SEEK_END))
        return error_set(e, CDL_ERUNTIME, "%s: cannot seek: %s", path, strerror(errno));
    const long size = ftell(st->file);
    unsigned char prefix[8];
    if (size < 0 || fseek(st->file, 0, SEEK_SET))
        return error_set(e, CDL_ERUNTIME, "%s: cannot seek: %s", path, strerror(errno));
    if (size < 8 || fread(prefix, 1, 8, st->file) != 8)
        return error_set(e, CDL_EUSAGE, "%s: %ld bytes: too short for a safetensors file", path,
                         size);
    const uint64_t header_bytes = read_le64(prefix);
    if (header_bytes < 2 || header_bytes > SAFETENSORS_MAX_HEADER_BYTES ||
        header_bytes > (uint64_t)size - 8)
        return error_set(e, CDL_EUSAGE,
                         "%s: header length %llu does not fit the file (%ld bytes): not a "
                         "safetensors file, or a truncated one",
                         path, (unsigned long long)header_bytes, size);
    char *text = malloc(header_bytes);
    if (!text)
        return error_set(e, CDL_ERUNTIME, "out of memory");
    int st_code = CDL_OK;
    if (fread(text, 1, header_bytes, st->file) != header_bytes)
        st_code = error_set(e, CDL_ERUNTIME, "%s: cannot read the header", path);
    st->data_start = 8 + header_bytes;
    if (!st_code)
        st_code = parse_header(st, text, header_bytes, (uint64_t)size - st->data_start, e);
    free(text);
    return st_code;
}

void safetensors_close(Safetensors *st)
{
    if (st->file)
        fclose(st->file);
    for (int k = 0; k < st->n_tensors; k++)
        free(st->tensors[k].name);
    free(st->tensors);
    byte_set_free(&st->names);
    free(st->path);
    memset(st, 0, sizeof *st);
}

const SafetensorsTensor *safetensors_find(const Safetensors *st, const char *name)
{
    const int32_t k = byte_set_find(&st->names, name, strlen(name));
    return k >= 0 && k < st->n_tensors ? &st->tensors[k] : NULL;
}

int safetensors_is_float(const SafetensorsTensor *t)
{
    return !strcmp(t->dtype, "F32") || !strcmp(t->dtype, "F16") || !strcmp(t->dtype, "BF16");
}

/* One element of a little-endian float tensor as float32. */
static float element_f32(const unsigned char *b, size_t elem, int bf16)
{
    uint32_t bits;
    if (elem == 4)
        bits = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
    else if (bf16)
        bits = ((uint32_t)b[0] | (uint32_t)b[1] << 8) << 16;
    else
        return half_to_float((uint16_t)(b[0] | b[1] << 8));
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

int safetensors_read_f32(const Safetensors *st, const SafetensorsTensor *t, float *out, Error *e)
{
    if (!safetensors_is_float(t))
        return error_set(e, CDL_EUSAGE, "%s: tensor '%s' is %s, not F32, F16 or BF16", st->path,
                         t->name, t->dtype);
    const size_t elem = dtype_bytes(t->dtype);
    const int bf16 = !strcmp(t->dtype, "BF16");
    if (fseeko(st->file, (off_t)(st->data_start + t->begin), SEEK_SET))
        return error_set(e, CDL_ERUNTIME, "%s: cannot seek: %s", st->path, strerror(errno));
    unsigned char buf[4096];
    const size_t per_buf = sizeof buf / elem;
    for (uint64_t done = 0; done < t->count;) {
        const size_t n = t->count - done < per_buf ? (size_t)(t->count - done) : per_buf;
        if (fread(buf, elem, n, st->file) != n)
            return error_set(e, CDL_ERUNTIME, "%s: tensor '%s': read failed", st->path, t->name);
        for (size_t k = 0; k < n; k++)
            out[done + k] = element_f32(buf + k * elem, elem, bf16);
        done += n;
    }
    return CDL_OK;
}

/* The header JSON of the tensors, laid out back to back. */
static cJSON *build_header(const SafetensorsTensor *tensors, int n_tensors, const char *const *keys,
                           const char *const *values, int n_metadata)
{
    cJSON *root = cJSON_CreateObject();
    int ok = root != NULL;
    if (ok && n_metadata) {
        cJSON *meta = cJSON_AddObjectToObject(root, "__metadata__");
        ok = meta != NULL;
        for (int k = 0; ok && k < n_metadata; k++)
            ok = cJSON_AddStringToObject(meta, keys[k], values[k]) != NULL;
    }
    uint64_t offset = 0;
    for (int k = 0; ok && k < n_tensors; k++) {
        const SafetensorsTensor *t = &tensors[k];
        cJSON *item = cJSON_AddObjectToObject(root, t->name);
        ok = item && cJSON_AddStringToObject(item, "dtype", t->dtype);
        cJSON *shape = ok ? cJSON_AddArrayToObject(item, "shape") : NULL;
        cJSON *offsets = shape ? cJSON_AddArrayToObject(item, "data_offsets") : NULL;
        ok = offsets != NULL;
        for (int d = 0; ok && d < t->n_dims; d++)
            ok = cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)t->dims[d]));
        const uint64_t end = offset + t->count * dtype_bytes(t->dtype);
        ok = ok && cJSON_AddItemToArray(offsets, cJSON_CreateNumber((double)offset)) &&
             cJSON_AddItemToArray(offsets, cJSON_CreateNumber((double)end));
        offset = end;
    }
    if (!ok) {
        cJSON_Delete(root);
        return NULL;
    }
    return root;
}

static void write_le64(unsigned char *b, uint64_t v)
{
    for (int k = 0; k < 8; k++)
        b[k] = (unsigned char)(v >> (8 * k));
}

/* Writes the tensor's elements little-endian. */
static int write_tensor(FILE *f, const SafetensorsTensor *t)
{
    const size_t elem = dtype_bytes(t->dtype);
    const unsigned char *src = t->data;
    unsigned char buf[4096];
    const size_t per_buf = sizeof buf / elem;
    for (uint64_t done = 0; done < t->count;) {
        const size_t n = t->count - done < per_buf ? (size_t)(t->count - done) : per_buf;
        for (size_t k = 0; k < n; k++) {
            uint64_t bits = 0;
            if (elem == 4) {
                uint32_t v;
                memcpy(&v, src + (done + k) * elem, 4);
                bits = v;
            } else
                memcpy(&bits, src + (done + k) * elem, 8);
            for (size_t b = 0; b < elem; b++)
                buf[k * elem + b] = (unsigned char)(bits >> (8 * b));
        }
        if (fwrite(buf, elem, n, f) != n)
            return 0;
        done += n;
    }
    return 1;
}

int safetensors_write(const char *path, const SafetensorsTensor *tensors, int n_tensors,
                      const char *const *metadata_keys, const char *const *metadata_values,
                      int n_metadata, Error *e)
{
    for (int k = 0; k < n_tensors; k++)
        if (strcmp(tensors[k].dtype, "F32") && strcmp(tensors[k].dtype, "I64"))
            return error_set(e, CDL_ERUNTIME, "%s: tensor '%s': cdl writes F32 and I64, not %s",
                             path, tensors[k].name, tensors[k].dtype);
    cJSON *header = build_header(tensors, n_tensors, metadata_keys, metadata_values, n_metadata);
    char *text = header ? cJSON_PrintUnformatted(header) : NULL;
    cJSON_Delete(header);
    if (!text)
        return error_set(e, CDL_ERUNTIME, "out of memory");
    const size_t len = strlen(text), padded = (len + 7) / 8 * 8;
    AtomicFile f;
    int st = atomic_file_open(&f, path, FILE_KIND_SAFETENSORS, e);
    if (st) {
        free(text);
        return st;
    }
    unsigned char prefix[8];
    write_le64(prefix, padded);
    int ok = fwrite(prefix, 1, 8, f.file) == 8 && fwrite(text, 1, len, f.file) == len;
    for (size_t k = len; ok && k < padded; k++)
        ok = fputc(' ', f.file) != EOF;
    free(text);
    for (int k = 0; ok && k < n_tensors; k++)
        ok = write_tensor(f.file, &tensors[k]);
    if (!ok) {
        atomic_file_abort(&f);
        return error_set(e, CDL_ERUNTIME, "%s: write failed: %s", path, strerror(errno));
    }
    return atomic_file_commit(&f, e);
}
