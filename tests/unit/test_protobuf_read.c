/* The protobuf reader and the ONNX reader on top of it: values written by io/protobuf.h read
 * back; every bound is checked (a cut-off varint, a length past the end, overlong varints,
 * groups, field 0, malformed packed lists); every strict prefix of a real ONNX model is
 * refused (under SAN=1, AddressSanitizer proves nothing is read out of bounds); and a small
 * net exported and imported again has its cfg and parameters. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "io/onnx_read.h"
#include "io/protobuf.h"
#include "io/protobuf_read.h"
#include "model/onnx_export.h"
#include "model/onnx_import.h"

/* A copy of bytes in a heap block of exactly n bytes, so ASan catches any read past it. */
static uint8_t *exact_copy(const void *bytes, size_t n)
{
    uint8_t *p = malloc(n ? n : 1);
    memcpy(p, bytes, n);
    return p;
}

/* Reads every field of data[0..n): the number read, or -1 when the reader refused. */
static int count_fields(const void *data, size_t n)
{
    PbReader r;
    PbField f;
    Error e = {0};
    int got, fields = 0;
    pb_reader_init(&r, data, n);
    while ((got = pb_next(&r, &f, &e)) == 1)
        fields++;
    if (got < 0)
        CHECK(e.code == CDL_ERUNTIME && strstr(e.msg, "malformed protobuf"));
    return got < 0 ? -1 : fields;
}

static void test_fields_read_back_as_written(void)
{
    PbBuf b;
    pb_init(&b);
    pb_int(&b, 1, 300);
    pb_int(&b, 2, -5);
    pb_float(&b, 3, 1.5f);
    pb_double(&b, 4, -2.25);
    pb_string(&b, 5, "abc");
    pb_packed_ints(&b, 6, (const int64_t[]){1, -1, 1LL << 40}, 3);
    pb_packed_floats(&b, 7, (const float[]){0.5f, -3.0f}, 2);
    uint8_t *data = exact_copy(b.data, b.len);
    PbReader r;
    PbField f;
    Error e = {0};
    pb_reader_init(&r, data, b.len);
    CHECK(pb_next(&r, &f, &e) == 1 && f.field == 1 && f.wire == PB_VARINT &&
          pb_field_int(&f) == 300);
    CHECK(pb_next(&r, &f, &e) == 1 && f.field == 2 && pb_field_int(&f) == -5);
    CHECK(pb_next(&r, &f, &e) == 1 && f.field == 3 && f.wire == PB_FIXED32 &&
          pb_field_float(&f) == 1.5f);
    CHECK(pb_next(&r, &f, &e) == 1 && f.field == 4 && f.wire == PB_FIXED64 &&
          pb_field_float(&f) == -2.25f);
    CHECK(pb_next(&r, &f, &e) == 1 && f.field == 5 && f.len == 3 && !memcmp(f.data, "abc", 3));
    CHECK(pb_next(&r, &f, &e) == 1 && f.field == 6 && pb_count_ints(&f) == 3);
    int64_t ints[3];
    pb_read_ints(&f, ints);
    CHECK(ints[0] == 1 && ints[1] == -1 && ints[2] == 1LL << 40);
    CHECK(pb_next(&r, &f, &e) == 1 && f.field == 7 && pb_count_floats(&f) == 2);
    float floats[2];
    pb_read_floats(&f, floats);
    CHECK(floats[0] == 0.5f && floats[1] == -3.0f);
    CHECK(pb_next(&r, &f, &e) == 0);
    /* Every strict prefix either ends on a field boundary or is refused; none reads past it. */
    for (size_t n = 0; n < b.len; n++) {
        uint8_t *cut = exact_copy(b.data, n);
        const int fields = count_fields(cut, n);
        CHECK(fields < 7);
        free(cut);
    }
    free(data);
    pb_free(&b);
}

static void test_malformed_bytes_are_refused(void)
{
    /* an 11-byte varint */
    const uint8_t overlong[] = {0x08, 0xff, 0xff, 0xff, 0xff, 0xff,
                                0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
    /* a length of 5 with 2 bytes left; a length of 2^63 */
    const uint8_t past_end[] = {0x0a, 0x05, 'a', 'b'};
    const uint8_t huge_len[] = {0x0a, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01};
    const uint8_t fixed_cut[] = {0x0d, 0x00, 0x00}; /* fixed32 with 2 bytes */
    const uint8_t group[] = {0x0b};                 /* wire type 3 (start group) */
    const uint8_t field0[] = {0x00, 0x01};
    const uint8_t key_cut[] = {0x80};
    const struct {
        const uint8_t *bytes;
        size_t n;
    } cases[] = {{overlong, sizeof overlong}, {past_end, sizeof past_end},
                 {huge_len, sizeof huge_len}, {fixed_cut, sizeof fixed_cut},
                 {group, sizeof group},       {field0, sizeof field0},
                 {key_cut, sizeof key_cut}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        uint8_t *data = exact_copy(cases[k].bytes, cases[k].n);
        CHECK(count_fields(data, cases[k].n) == -1);
        free(data);
    }
}

static void test_malformed_packed_lists_are_refused(void)
{
    const uint8_t cut_varint[] = {0x01, 0x80}; /* second varint cut off */
    uint8_t *data = exact_copy(cut_varint, sizeof cut_varint);
    const PbField ints = {.field = 1, .wire = PB_BYTES, .data = data, .len = sizeof cut_varint};
    CHECK(pb_count_ints(&ints) == -1);
    const PbField floats = {.field = 1, .wire = PB_BYTES, .data = data, .len = 2};
    CHECK(pb_count_floats(&floats) == -1); /* not a whole number of floats */
    const PbField fixed64 = {.field = 1, .wire = PB_FIXED64};
    CHECK(pb_count_ints(&fixed64) == -1 && pb_count_floats(&fixed64) == -1);
    free(data);
}

static const char small_cfg[] = "[net]\nwidth=6\nheight=6\nchannels=1\n"
                                "[convolutional]\nfilters=4\nsize=3\npad=1\nbatch_normalize=1\n"
                                "activation=relu\n[maxpool]\nsize=2\nstride=2\n"
                                "[connected]\noutput=3\nactivation=linear\n[softmax]\n";

/* bytes = the ONNX export of small_cfg (seeded). */
static size_t export_small(uint8_t **bytes)
{
    Net net;
    Error e = {0};
    char path[] = "/tmp/test_protobuf_read_XXXXXX";
    const int fd = mkstemp(path);
    CHECK(fd >= 0);
    close(fd);
    CHECK(net_build_from_text(&net, small_cfg, "small.cfg", 0, 3, &e) == CDL_OK);
    CHECK(onnx_export(&net, "small", path, &(OnnxExportOptions){0, 13, 0}, &e) == CDL_OK);
    net_free(&net);
    FILE *f = fopen(path, "rb");
    fseek(f, 0, SEEK_END);
    const long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    *bytes = malloc((size_t)n);
    CHECK(fread(*bytes, 1, (size_t)n, f) == (size_t)n);
    fclose(f);
    unlink(path);
    return (size_t)n;
}

static void test_every_prefix_of_a_model_is_refused(void)
{
    uint8_t *bytes;
    const size_t n = export_small(&bytes);
    OnnxModel m;
    Error e = {0};
    CHECK(onnx_model_parse(bytes, n, &m, &e) == CDL_OK);
    CHECK(m.opset == 13 && m.n_inputs == 1 && m.n_outputs == 1 && m.n_nodes > 4);
    onnx_model_free(&m);
    int refused = 0;
    for (size_t k = 0; k < n; k++) {
        uint8_t *cut = exact_copy(bytes, k);
        Error ek = {0};
        refused += onnx_model_parse(cut, k, &m, &ek) == CDL_ERUNTIME && ek.msg[0];
        onnx_model_free(&m);
        free(cut);
    }
    CHECK(refused == (int)n);
    free(bytes);
}

static void test_an_exported_net_imports_with_its_parameters(void)
{
    uint8_t *bytes;
    const size_t n = export_small(&bytes);
    OnnxModel m;
    OnnxImport imp;
    Error e = {0};
    CHECK(onnx_model_parse(bytes, n, &m, &e) == CDL_OK);
    CHECK(onnx_import(&m, "small.onnx", &imp, &e) == CDL_OK);
    CHECK(imp.n_layers == 4);
    CHECK_CONTAINS(imp.cfg_text, "[convolutional]\nfilters=4\nsize=3\nstride=1\npadding=1\n"
                                 "batch_normalize=1\nactivation=relu\n");
    CHECK_CONTAINS(imp.cfg_text,
                   "[maxpool]\nsize=2\nstride=2\npadding=1\n" /* darknet's default */);
    CHECK_CONTAINS(imp.cfg_text, "[connected]\noutput=3\nactivation=linear\n");
    Net net;
    CHECK(net_build_from_text(&net, small_cfg, "small.cfg", 0, 3, &e) == CDL_OK);
    for (int l = 0; l < net.n_layers; l++)
        for (int p = 0; p < net.layers[l].n_params; p++) {
            const Param *a = &net.layers[l].params[p];
            const Param *b = layer_param(&imp.net.layers[l], a->name);
            CHECK(b && b->count == a->count && !memcmp(a->data, b->data, a->count * sizeof(float)));
        }
    net_free(&net);
    onnx_import_free(&imp);
    onnx_model_free(&m);
    free(bytes);
}

int main(void)
{
    test_fields_read_back_as_written();
    test_malformed_bytes_are_refused();
    test_malformed_packed_lists_are_refused();
    test_every_prefix_of_a_model_is_refused();
    test_an_exported_net_imports_with_its_parameters();
    return check_report("test_protobuf_read");
}
