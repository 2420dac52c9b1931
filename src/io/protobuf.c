/* Protocol Buffers wire-format writer (little-endian fixed fields, base-128 varints). */
#include "io/protobuf.h"

#include <stdlib.h>
#include <string.h>

enum { WIRE_VARINT = 0, WIRE_FIXED64 = 1, WIRE_BYTES = 2, WIRE_FIXED32 = 5 };

void pb_init(PbBuf *b)
{
    memset(b, 0, sizeof *b);
}

void pb_free(PbBuf *b)
{
    free(b->data);
    pb_init(b);
}

void pb_raw(PbBuf *b, const void *bytes, size_t n)
{
    if (b->failed)
        return;
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < b->len + n)
            cap *= 2;
        uint8_t *grown = realloc(b->data, cap);
        if (!grown) {
            b->failed = 1;
            return;
        }
        b->data = grown;
        b->cap = cap;
    }
    if (n)
        memcpy(b->data + b->len, bytes, n);
    b->len += n;
}

void pb_varint(PbBuf *b, uint64_t v)
{
    uint8_t out[10];
    size_t n = 0;
    do {
        out[n] = (uint8_t)(v & 0x7f);
        v >>= 7;
        out[n++] |= v ? 0x80 : 0;
    } while (v);
    pb_raw(b, out, n);
}

static void tag(PbBuf *b, int field, int wire)
{
    pb_varint(b, ((uint64_t)field << 3) | (uint64_t)wire);
}

static void put_le(PbBuf *b, uint64_t v, int bytes)
{
    uint8_t out[8];
    for (int i = 0; i < bytes; i++)
        out[i] = (uint8_t)(v >> (8 * i));
    pb_raw(b, out, (size_t)bytes);
}

void pb_int(PbBuf *b, int field, int64_t v)
{
    tag(b, field, WIRE_VARINT);
    pb_varint(b, (uint64_t)v);
}

void pb_float(PbBuf *b, int field, float v)
{
    uint32_t bits;
    memcpy(&bits, &v, sizeof bits);
    tag(b, field, WIRE_FIXED32);
    put_le(b, bits, 4);
}

void pb_double(PbBuf *b, int field, double v)
{
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    tag(b, field, WIRE_FIXED64);
    put_le(b, bits, 8);
}

void pb_bytes(PbBuf *b, int field, const void *bytes, size_t n)
{
    tag(b, field, WIRE_BYTES);
    pb_varint(b, n);
    pb_raw(b, bytes, n);
}

void pb_string(PbBuf *b, int field, const char *s)
{
    pb_bytes(b, field, s, strlen(s));
}

void pb_message(PbBuf *b, int field, const PbBuf *sub)
{
    if (sub->failed)
        b->failed = 1;
    pb_bytes(b, field, sub->data, sub->len);
}

void pb_packed_ints(PbBuf *b, int field, const int64_t *v, size_t n)
{
    PbBuf packed;
    pb_init(&packed);
    for (size_t i = 0; i < n; i++)
        pb_varint(&packed, (uint64_t)v[i]);
    pb_message(b, field, &packed);
    pb_free(&packed);
}

void pb_packed_floats(PbBuf *b, int field, const float *v, size_t n)
{
    tag(b, field, WIRE_BYTES);
    pb_varint(b, n * 4);
    for (size_t i = 0; i < n; i++) {
        uint32_t bits;
        memcpy(&bits, &v[i], sizeof bits);
        put_le(b, bits, 4);
    }
}
