/* Protobuf wire format against bytes worked out from the encoding rules
 * (developers.google.com/protocol-buffers/docs/encoding examples). */
#include <string.h>

#include "check.h"
#include "io/protobuf.h"

static int bytes_equal(const PbBuf *b, const unsigned char *want, size_t n)
{
    return !b->failed && b->len == n && !memcmp(b->data, want, n);
}

static void test_varint_fields(void)
{
    PbBuf b;
    pb_init(&b);
    pb_int(&b, 1, 150); /* the encoding guide's example: 08 96 01 */
    const unsigned char want[] = {0x08, 0x96, 0x01};
    CHECK(bytes_equal(&b, want, sizeof want));
    pb_free(&b);
    pb_int(&b, 2, -1); /* int64 -1: ten bytes, all ones */
    const unsigned char minus_one[] = {0x10, 0xff, 0xff, 0xff, 0xff, 0xff,
                                       0xff, 0xff, 0xff, 0xff, 0x01};
    CHECK(bytes_equal(&b, minus_one, sizeof minus_one));
    pb_free(&b);
}

static void test_strings_and_nested_messages(void)
{
    PbBuf inner, outer;
    pb_init(&inner);
    pb_init(&outer);
    pb_string(&inner, 2, "testing"); /* 12 07 74 65 73 74 69 6e 67 */
    pb_message(&outer, 3, &inner);   /* 1a 09 + inner */
    const unsigned char want[] = {0x1a, 0x09, 0x12, 0x07, 't', 'e', 's', 't', 'i', 'n', 'g'};
    CHECK(bytes_equal(&outer, want, sizeof want));
    pb_free(&inner);
    pb_free(&outer);
}

static void test_fixed_and_packed_fields(void)
{
    PbBuf b;
    pb_init(&b);
    pb_float(&b, 1, 1.0f); /* 0d 00 00 80 3f */
    pb_double(&b, 2, 2.0); /* 11 00..00 40 */
    const int64_t dims[] = {3, 270, 86942};
    pb_packed_ints(&b, 4, dims, 3); /* 22 06 03 8e 02 9e a7 05 */
    const float two[] = {0.5f, -2.0f};
    pb_packed_floats(&b, 5, two, 2); /* 2a 08 00 00 00 3f 00 00 00 c0 */
    const unsigned char want[] = {0x0d, 0x00, 0x00, 0x80, 0x3f, 0x11, 0,    0,    0,    0,    0,
                                  0,    0,    0x40, 0x22, 0x06, 0x03, 0x8e, 0x02, 0x9e, 0xa7, 0x05,
                                  0x2a, 0x08, 0,    0,    0,    0x3f, 0,    0,    0,    0xc0};
    CHECK(bytes_equal(&b, want, sizeof want));
    pb_free(&b);
}

int main(void)
{
    test_varint_fields();
    test_strings_and_nested_messages();
    test_fixed_and_packed_fields();
    return check_report("test_protobuf");
}
