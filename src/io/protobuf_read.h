/* Protocol Buffers wire format, read side: walks the fields of one serialized message with
 * every length checked against the buffer, so that a truncated or corrupted file is refused
 * with an error instead of being read out of bounds.
 *
 * The project's own reader rather than protobuf-c: ONNX import reads a handful of messages
 * (ModelProto, GraphProto, NodeProto, AttributeProto, TensorProto, ValueInfoProto and the
 * type/shape messages) and needs only the four wire types below, which take ~150 lines; protobuf-c
 * would add a build dependency and generated onnx.pb-c.c code to keep in step with onnx.proto,
 * for the same result. The write side is io/protobuf.h.
 *
 * Usage: pb_reader_init over a message's bytes, then while pb_next(r, &f, e) returns 1 look at
 * f.field and f.wire; a length-delimited field's bytes (f.data, f.len) are a nested message
 * (pb_reader_init over them), a string, raw bytes or a packed repeated field. */
#ifndef CDL_PROTOBUF_READ_H
#define CDL_PROTOBUF_READ_H

#include <stddef.h>
#include <stdint.h>

#include "util/error.h"

typedef enum PbWire { PB_VARINT = 0, PB_FIXED64 = 1, PB_BYTES = 2, PB_FIXED32 = 5 } PbWire;

typedef struct PbReader {
    const uint8_t *p, *end;
} PbReader;

/* One field: its number, wire type and value. */
typedef struct PbField {
    int field;
    PbWire wire;
    uint64_t u;          /* PB_VARINT: the value; PB_FIXED32/PB_FIXED64: the little-endian bits */
    const uint8_t *data; /* PB_BYTES: len bytes inside the reader's buffer */
    size_t len;
} PbField;

void pb_reader_init(PbReader *r, const void *data, size_t len);

/* Reads the next field into f: 1 when one was read, 0 at the end of the message, -1 (e set,
 * CDL_ERUNTIME) when the bytes are malformed: a varint longer than 10 bytes or cut off, a
 * length or fixed value past the end, field number 0, a group or an unknown wire type. */
int pb_next(PbReader *r, PbField *f, Error *e);

/* f's value as a signed int64 (varint: two's complement, as protobuf's int32/int64) and as a
 * float (fixed32) or double (fixed64). */
int64_t pb_field_int(const PbField *f);
float pb_field_float(const PbField *f);

/* Repeated int64 / float fields come either packed (one PB_BYTES field) or one value per field.
 * pb_count_* returns how many values f holds (-1 when a packed payload is malformed);
 * pb_read_* stores them at out (room for that count). */
long pb_count_ints(const PbField *f);
void pb_read_ints(const PbField *f, int64_t *out);
long pb_count_floats(const PbField *f);
void pb_read_floats(const PbField *f, float *out);

#endif
