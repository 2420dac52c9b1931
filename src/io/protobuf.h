/* Protocol Buffers wire format, write side only: enough to emit ONNX models and
 * TensorBoard event records without a protobuf library. A message is built in a PbBuf;
 * nested messages are built in their own PbBuf and embedded with pb_message. */
#ifndef CDL_PROTOBUF_H
#define CDL_PROTOBUF_H

#include <stddef.h>
#include <stdint.h>

typedef struct PbBuf {
    uint8_t *data;
    size_t len, cap;
    int failed; /* an allocation failed: the contents are incomplete */
} PbBuf;

void pb_init(PbBuf *b);
void pb_free(PbBuf *b);
void pb_raw(PbBuf *b, const void *bytes, size_t n);
void pb_varint(PbBuf *b, uint64_t v);

/* Fields: varint (int32/int64/uint64/bool/enum; negative values as 10-byte varints, as
 * protobuf's int64), fixed 32-bit float, fixed 64-bit double, length-delimited bytes and
 * strings, embedded messages, and packed repeated varints / floats. */
void pb_int(PbBuf *b, int field, int64_t v);
void pb_float(PbBuf *b, int field, float v);
void pb_double(PbBuf *b, int field, double v);
void pb_bytes(PbBuf *b, int field, const void *bytes, size_t n);
void pb_string(PbBuf *b, int field, const char *s);
void pb_message(PbBuf *b, int field, const PbBuf *sub);
void pb_packed_ints(PbBuf *b, int field, const int64_t *v, size_t n);
void pb_packed_floats(PbBuf *b, int field, const float *v, size_t n);

#endif
