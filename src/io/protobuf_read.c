/* Protocol Buffers wire format, read side (see protobuf_read.h). */
#include "io/protobuf_read.h"

#include <string.h>

void pb_reader_init(PbReader *r, const void *data, size_t len)
{
    r->p = data;
    r->end = r->p + len;
}

/* *v = the varint at *p (advanced past it); -1 when it is cut off by end or overlong. */
static int read_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
    uint64_t x = 0;
    for (int shift = 0; shift < 70; shift += 7) {
        if (*p >= end)
            return -1;
        const uint8_t b = *(*p)++;
        x |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *v = x;
            return 0;
        }
    }
    return -1;
}

static uint64_t read_le(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int k = n - 1; k >= 0; k--)
        v = v << 8 | p[k];
    return v;
}

int pb_next(PbReader *r, PbField *f, Error *e)
{
    if (r->p == r->end)
        return 0;
    uint64_t key;
    if (read_varint(&r->p, r->end, &key))
        return error_set(e, CDL_ERUNTIME, "malformed protobuf: a field key is cut off"), -1;
    memset(f, 0, sizeof *f);
    f->wire = (PbWire)(key & 7);
    if (key >> 3 == 0 || key >> 3 > 0x1fffffff)
        return error_set(e, CDL_ERUNTIME, "malformed protobuf: field number %llu",
                         (unsigned long long)(key >> 3)),
               -1;
    f->field = (int)(key >> 3);
    const size_t left = (size_t)(r->end - r->p);
    switch (f->wire) {
    case PB_VARINT:
        if (read_varint(&r->p, r->end, &f->u))
            break;
        return 1;
    case PB_FIXED64:
    case PB_FIXED32: {
        const int n = f->wire == PB_FIXED64 ? 8 : 4;
        if (left < (size_t)n)
            break;
        f->u = read_le(r->p, n);
        r->p += n;
        return 1;
    }
    case PB_BYTES: {
        uint64_t len;
        if (read_varint(&r->p, r->end, &len) || len > (uint64_t)(r->end - r->p))
            break;
        f->data = r->p;
        f->len = (size_t)len;
        r->p += len;
        return 1;
    }
    default:
        return error_set(e, CDL_ERUNTIME, "malformed protobuf: field %d has wire type %d", f->field,
                         (int)f->wire),
               -1;
    }
    return error_set(e, CDL_ERUNTIME,
                     "malformed protobuf: field %d runs past the end of its message", f->field),
           -1;
}

int64_t pb_field_int(const PbField *f)
{
    return (int64_t)f->u;
}

float pb_field_float(const PbField *f)
{
    if (f->wire == PB_FIXED64) {
        double d;
        memcpy(&d, &f->u, sizeof d);
        return (float)d;
    }
    const uint32_t bits = (uint32_t)f->u;
    float v;
    memcpy(&v, &bits, sizeof v);
    return v;
}

long pb_count_ints(const PbField *f)
{
    if (f->wire == PB_VARINT)
        return 1;
    if (f->wire != PB_BYTES)
        return -1;
    const uint8_t *p = f->data, *end = f->data + f->len;
    long n = 0;
    uint64_t v;
    while (p < end) {
        if (read_varint(&p, end, &v))
            return -1;
        n++;
    }
    return n;
}

void pb_read_ints(const PbField *f, int64_t *out)
{
    if (f->wire == PB_VARINT) {
        out[0] = pb_field_int(f);
        return;
    }
    const uint8_t *p = f->data, *end = f->data + f->len;
    uint64_t v;
    while (p < end && !read_varint(&p, end, &v))
        *out++ = (int64_t)v;
}

long pb_count_floats(const PbField *f)
{
    if (f->wire == PB_FIXED32)
        return 1;
    if (f->wire != PB_BYTES || f->len % 4)
        return -1;
    return (long)(f->len / 4);
}

void pb_read_floats(const PbField *f, float *out)
{
    if (f->wire == PB_FIXED32) {
        out[0] = pb_field_float(f);
        return;
    }
    for (size_t k = 0; k < f->len / 4; k++) {
        const uint32_t bits = (uint32_t)read_le(f->data + 4 * k, 4);
        memcpy(&out[k], &bits, sizeof bits);
    }
}
