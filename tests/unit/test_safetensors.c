/* safetensors files (io/safetensors.h): the bytes cdl writes, F16/BF16 widening, and a set of
 * broken files (truncated, bad lengths, bad JSON, offsets and shapes past the data, wrong byte
 * counts, unknown dtypes, repeated names), each refused with one line naming the file. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "io/safetensors.h"

static char path[64];

static void write_bytes(const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (!f)
        return;
    CHECK(fwrite(data, 1, n, f) == n);
    fclose(f);
}

/* A file of header text (its length prefixed) and then data_bytes bytes of data. */
static void write_file(const char *header, const void *data, size_t data_bytes)
{
    const size_t n = strlen(header);
    unsigned char *b = malloc(8 + n + data_bytes);
    for (int k = 0; k < 8; k++)
        b[k] = (unsigned char)((uint64_t)n >> (8 * k));
    memcpy(b + 8, header, n);
    if (data_bytes)
        memcpy(b + 8 + n, data, data_bytes);
    write_bytes(b, 8 + n + data_bytes);
    free(b);
}

static void test_write_layout_and_read_back(void)
{
    const float w[6] = {1, -2, 3.5f, 0, 1e-30f, -7};
    const int64_t tracked = 0;
    SafetensorsTensor t[2] = {
        {.name = "a.weight", .dtype = "F32", .n_dims = 2, .dims = {2, 3}, .count = 6, .data = w},
        {.name = "bn.num_batches_tracked", .dtype = "I64", .count = 1, .data = &tracked}};
    const char *keys[] = {"format"}, *values[] = {"pt"};
    Error e = {0};
    CHECK(safetensors_write(path, t, 2, keys, values, 1, &e) == CDL_OK);
    FILE *f = fopen(path, "rb");
    unsigned char bytes[512];
    const size_t n = fread(bytes, 1, sizeof bytes, f);
    fclose(f);
    const char header[] = "{\"__metadata__\":{\"format\":\"pt\"},\"a.weight\":{\"dtype\":\"F32\","
                          "\"shape\":[2,3],\"data_offsets\":[0,24]},\"bn.num_batches_tracked\":"
                          "{\"dtype\":\"I64\",\"shape\":[],\"data_offsets\":[24,32]}}";
    const size_t padded = (sizeof header - 1 + 7) / 8 * 8;
    CHECK(n == 8 + padded + 32);
    CHECK(bytes[0] == padded && !bytes[1] && !bytes[7]);
    CHECK(!memcmp(bytes + 8, header, sizeof header - 1));
    CHECK(bytes[8 + padded - 1] == ' ');
    CHECK(bytes[8 + padded] == 0x00 && bytes[8 + padded + 3] == 0x3f); /* 1.0f little-endian */

    Safetensors st;
    CHECK(safetensors_open(&st, path, &e) == CDL_OK);
    CHECK(st.n_tensors == 2);
    const SafetensorsTensor *a = safetensors_find(&st, "a.weight");
    float back[6] = {0};
    CHECK(a && a->n_dims == 2 && a->dims[0] == 2 && a->dims[1] == 3 && a->count == 6);
    CHECK(a && safetensors_read_f32(&st, a, back, &e) == CDL_OK);
    CHECK(!memcmp(back, w, sizeof w));
    const SafetensorsTensor *b = safetensors_find(&st, "bn.num_batches_tracked");
    CHECK(b && b->n_dims == 0 && b->count == 1 && !safetensors_is_float(b));
    CHECK(b && safetensors_read_f32(&st, b, back, &e) == CDL_EUSAGE);
    safetensors_close(&st);
}

static void test_half_and_bfloat16_widen_exactly(void)
{
    /* F16: 1, -2, 65504 (max), 2^-24 (smallest subnormal), inf; BF16: 1, -0.5, 3.140625 */
    const unsigned char data[] = {0x00, 0x3c, 0x00, 0xc0, 0xff, 0x7b, 0x01, 0x00,
                                  0x00, 0x7c, 0x80, 0x3f, 0x00, 0xbf, 0x49, 0x40};
    write_file("{\"h\":{\"dtype\":\"F16\",\"shape\":[5],\"data_offsets\":[0,10]},"
               "\"b\":{\"dtype\":\"BF16\",\"shape\":[3],\"data_offsets\":[10,16]}}",
               data, sizeof data);
    Safetensors st;
    Error e = {0};
    float h[5], b[3];
    CHECK(safetensors_open(&st, path, &e) == CDL_OK);
    CHECK(safetensors_read_f32(&st, safetensors_find(&st, "h"), h, &e) == CDL_OK);
    CHECK(safetensors_read_f32(&st, safetensors_find(&st, "b"), b, &e) == CDL_OK);
    safetensors_close(&st);
    CHECK(h[0] == 1.0f && h[1] == -2.0f && h[2] == 65504.0f && h[3] == 0x1p-24f);
    CHECK(h[4] > 3e38f);
    CHECK(b[0] == 1.0f && b[1] == -0.5f && b[2] == 3.140625f);
}

/* The file at path is refused (CDL_EUSAGE) with a message naming it and containing why. */
static void refused(const char *why, int line)
{
    Safetensors st;
    Error e = {0};
    const int code = safetensors_open(&st, path, &e);
    safetensors_close(&st);
    if (code != CDL_EUSAGE || strncmp(e.msg, path, strlen(path)) || !strstr(e.msg, why) ||
        strchr(e.msg, '\n')) {
        fprintf(stderr, "FAIL line %d: code %d, message '%s', expected '%s'\n", line, code, e.msg,
                why);
        check_failures++;
    }
    check_count++;
}

static void test_broken_files_are_refused(void)
{
    const unsigned char data[16] = {0};
    write_bytes("", 0);
    refused("too short", __LINE__);
    write_bytes("\x05\x00\x00", 3);
    refused("too short", __LINE__);
    write_bytes("\xff\xff\xff\xff\xff\xff\xff\xff{}", 10);
    refused("does not fit the file", __LINE__);
    write_bytes("\x40\x00\x00\x00\x00\x00\x00\x00{\"a\":", 13);
    refused("does not fit the file", __LINE__);
    write_file("[1, 2]", NULL, 0);
    refused("not a JSON object", __LINE__);
    write_file("{\"a\": {\"dtype\": \"F32\", \"shape\": [2]", NULL, 0);
    refused("not a JSON object", __LINE__);
    write_file("{\"a\": 3}", NULL, 0);
    refused("tensor 'a': not an object", __LINE__);
    write_file("{\"a\": {\"dtype\": \"F32\", \"shape\": [2]}}", data, 8);
    refused("tensor 'a': not an object", __LINE__);
    write_file("{\"a\": {\"dtype\": \"Q7\", \"shape\": [2], \"data_offsets\": [0, 8]}}", data, 8);
    refused("unknown dtype 'Q7'", __LINE__);
    write_file("{\"a\": {\"dtype\": \"F32\", \"shape\": [2, -1], \"data_offsets\": [0, 8]}}", data,
               8);
    refused("shape entry 1 is not a size", __LINE__);
    write_file("{\"a\": {\"dtype\": \"F32\", \"shape\": [2.5], \"data_offsets\": [0, 8]}}", data,
               8);
    refused("shape entry 0 is not a size", __LINE__);
    write_file("{\"a\": {\"dtype\": \"F32\", \"shape\": [1,1,1,1,1,1,1,1,1], "
               "\"data_offsets\": [0, 4]}}",
               data, 4);
    refused("9 dimensions", __LINE__);
    write_file("{\"a\": {\"dtype\": \"F32\", \"shape\": [4294967296, 4294967296], "
               "\"data_offsets\": [0, 8]}}",
               data, 8);
    refused("needs more than the file's 8 data bytes", __LINE__);
    write_file("{\"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 16]}}", data, 8);
    refused("data_offsets are not [begin, end] within the file's 8 data bytes", __LINE__);
    write_file("{\"a\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [8, 4]}}", data, 8);
    refused("data_offsets are not", __LINE__);
    write_file("{\"a\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0]}}", data, 8);
    refused("data_offsets are not", __LINE__);
    write_file("{\"a\": {\"dtype\": \"F32\", \"shape\": [3], \"data_offsets\": [0, 8]}}", data, 16);
    refused("8 data bytes for a F32 tensor of 3 elements", __LINE__);
    write_file("{\"a\": {\"dtype\": \"F16\", \"shape\": [2], \"data_offsets\": [0, 4]}, "
               "\"a\": {\"dtype\": \"F16\", \"shape\": [2], \"data_offsets\": [4, 8]}}",
               data, 8);
    refused("tensor 'a' appears twice", __LINE__);
    write_file("{\"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8]}, "
               "\"b\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [4, 12]}}",
               data, 12);
    refused("tensors 'a' and 'b' share data bytes 4-8", __LINE__);
    write_file("{\"a\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4]}, "
               "\"b\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [8, 12]}}",
               data, 12);
    refused("data bytes 4-8 belong to no tensor", __LINE__);
    write_file("{\"a\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4]}}", data, 16);
    refused("data bytes 4-16 after the last tensor belong to no tensor", __LINE__);
    write_file("{\"__metadata__\": [1]}", NULL, 0);
    refused("__metadata__ is not an object", __LINE__);
}

static void test_missing_file(void)
{
    Safetensors st;
    Error e = {0};
    CHECK(safetensors_open(&st, "/nonexistent/x.safetensors", &e) == CDL_EUSAGE);
    CHECK_CONTAINS(e.msg, "/nonexistent/x.safetensors: No such file");
    safetensors_close(&st);
    CHECK(safetensors_is_path("a/b.safetensors") && !safetensors_is_path(".safetensors") &&
          !safetensors_is_path("b.weights"));
}

int main(void)
{
    snprintf(path, sizeof path, "/tmp/cdl_test_st_%d.safetensors", (int)getpid());
    test_write_layout_and_read_back();
    test_half_and_bfloat16_widen_exactly();
    test_broken_files_are_refused();
    test_missing_file();
    unlink(path);
    return check_report("test_safetensors");
}
