/* The ONNX graph builder: node, attribute and initializer bytes against encodings worked out
 * from onnx.proto's field numbers, the layout bookkeeping between layers (rank 3 in a sequence
 * net), and the refusal of a layer type that cannot export. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "model/onnx_export.h"

static int body_equals(const OnnxGraph *g, const unsigned char *want, size_t n)
{
    return !g->body.failed && g->body.len == n && !memcmp(g->body.data, want, n);
}

static void body_clear(OnnxGraph *g)
{
    pb_free(&g->body);
    pb_init(&g->body);
}

/* Two layers: 0 reads the input [1][2][2], 1 reads layer 0 (out_shape [3][1][1]). */
static void two_layer_net(Net *net, Layer layers[2], const LayerType *type)
{
    memset(net, 0, sizeof *net);
    memset(layers, 0, 2 * sizeof *layers);
    net->layers = layers;
    net->n_layers = 2;
    net->in_shape = (Shape){1, 2, 2};
    for (int i = 0; i < 2; i++) {
        layers[i].type = type;
        layers[i].index = i;
        layers[i].inputs[0] = i - 1;
        layers[i].n_inputs = 1;
        layers[i].out_shape = (Shape){3, 1, 1};
    }
}

static void test_node_is_named_after_its_output(void)
{
    Net net;
    Layer layers[2];
    OnnxGraph g;
    two_layer_net(&net, layers, NULL);
    CHECK(onnx_graph_init(&g, &net, NULL, NULL, NULL) == CDL_OK);
    onnx_node(&g, "Relu", 1, (const char *[]){"x"}, "y", 0, NULL);
    /* GraphProto.node (1) { input (1) "x", output (2) "y", name (3) "y", op_type (4) "Relu" } */
    const unsigned char want[] = {0x0a, 0x0f, 0x0a, 0x01, 'x', 0x12, 0x01, 'y', 0x1a,
                                  0x01, 'y',  0x22, 0x04, 'R', 'e',  'l',  'u'};
    CHECK(body_equals(&g, want, sizeof want));
    onnx_graph_free(&g);
}

static void test_attributes_carry_their_type(void)
{
    Net net;
    Layer layers[2];
    OnnxGraph g;
    two_layer_net(&net, layers, NULL);
    CHECK(onnx_graph_init(&g, &net, NULL, NULL, NULL) == CDL_OK);
    const int64_t pads[] = {1, 2};
    const OnnxAttr attrs[] = {onnx_attr_int("axis", 1), onnx_attr_float("alpha", 0.5f),
                              onnx_attr_ints("pads", pads, 2)};
    onnx_node(&g, "Op", 0, NULL, "o", 3, attrs);
    /* NodeProto.attribute (5) { name (1), type (20: INT 2, FLOAT 1, INTS 7), then i (3),
     * f (2, fixed32) or one ints (8) field per value } */
    const unsigned char want[] = {
        0x0a, 0x37, 0x12, 0x01, 'o',  0x1a, 0x01, 'o',  0x22, 0x02, 'O',  'p',  0x2a, 0x0b, 0x0a,
        0x04, 'a',  'x',  'i',  's',  0xa0, 0x01, 0x02, 0x18, 0x01, 0x2a, 0x0f, 0x0a, 0x05, 'a',
        'l',  'p',  'h',  'a',  0xa0, 0x01, 0x01, 0x15, 0x00, 0x00, 0x00, 0x3f, 0x2a, 0x0d, 0x0a,
        0x04, 'p',  'a',  'd',  's',  0xa0, 0x01, 0x07, 0x40, 0x01, 0x40, 0x02};
    CHECK(body_equals(&g, want, sizeof want));
    onnx_graph_free(&g);
}

static void test_strings_attribute_has_one_field_per_value(void)
{
    Net net;
    Layer layers[2];
    OnnxGraph g;
    two_layer_net(&net, layers, NULL);
    CHECK(onnx_graph_init(&g, &net, NULL, NULL, NULL) == CDL_OK);
    const char *const names[] = {"Tanh"};
    const OnnxAttr attr = onnx_attr_strings("activations", names, 1);
    onnx_node(&g, "Op", 0, NULL, "o", 1, &attr);
    /* attribute (5) { name (1) "activations", type (20) STRINGS 8, strings (9) "Tanh" } */
    const unsigned char want[] = {0x0a, 0x22, 0x12, 0x01, 'o',  0x1a, 0x01, 'o', 0x22,
                                  0x02, 'O',  'p',  0x2a, 0x16, 0x0a, 0x0b, 'a', 'c',
                                  't',  'i',  'v',  'a',  't',  'i',  'o',  'n', 's',
                                  0xa0, 0x01, 0x08, 0x4a, 0x04, 'T',  'a',  'n', 'h'};
    CHECK(body_equals(&g, want, sizeof want));
    onnx_graph_free(&g);
}

static void test_initializer_holds_dims_type_name_and_data(void)
{
    Net net;
    Layer layers[2];
    OnnxGraph g;
    two_layer_net(&net, layers, NULL);
    CHECK(onnx_graph_init(&g, &net, NULL, NULL, NULL) == CDL_OK);
    const int64_t dims[] = {2, 1};
    const float data[] = {1.0f, -2.0f};
    onnx_initializer(&g, "w", ONNX_FLOAT, 2, dims, data);
    /* GraphProto.initializer (5) { dims (1) 2, 1, data_type (2) FLOAT, name (8) "w",
     * float_data (4, packed) 1.0 -2.0 } */
    const unsigned char want[] = {0x2a, 0x13, 0x08, 0x02, 0x08, 0x01, 0x10, 0x01, 0x42, 0x01, 'w',
                                  0x22, 0x08, 0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x00, 0xc0};
    CHECK(body_equals(&g, want, sizeof want));
    body_clear(&g);
    const int64_t shape[] = {0, 300};
    onnx_int64s(&g, "s", 2, shape); /* int64_data (7, packed varints): 00 ac 02 */
    const unsigned char want_ints[] = {0x2a, 0x0c, 0x08, 0x02, 0x10, 0x07, 0x42,
                                       0x01, 's',  0x3a, 0x03, 0x00, 0xac, 0x02};
    CHECK(body_equals(&g, want_ints, sizeof want_ints));
    onnx_graph_free(&g);
}

static void test_param_is_named_after_layer(void)
{
    Net net;
    Layer layers[2];
    OnnxGraph g;
    float weights[6] = {0};
    two_layer_net(&net, layers, NULL);
    layers[1].params[0] =
        (Param){.name = "weights", .n_dims = 2, .dims = {3, 2}, .count = 6, .data = weights};
    layers[1].n_params = 1;
    CHECK(onnx_graph_init(&g, &net, NULL, NULL, NULL) == CDL_OK);
    char name[ONNX_NAME_MAX];
    onnx_param(&g, &layers[1], 0, name);
    CHECK(!strcmp(name, "layer1.weights"));
    onnx_graph_free(&g);
}

static void test_inputs_convert_between_flat_and_nchw(void)
{
    Net net;
    Layer layers[2];
    OnnxGraph g;
    two_layer_net(&net, layers, NULL);
    CHECK(onnx_graph_init(&g, &net, NULL, NULL, NULL) == CDL_OK);
    char name[ONNX_NAME_MAX];
    onnx_input_nchw(&g, &layers[0], 0, name); /* the graph input is NCHW: no node */
    CHECK(!strcmp(name, "input") && g.body.len == 0);
    CHECK(!strcmp(onnx_output(&g, &layers[0], 1), "layer0"));
    onnx_input_flat(&g, &layers[1], 0, name); /* layer 0 is flat already: no node */
    CHECK(!strcmp(name, "layer0") && g.body.len == 0);
    onnx_input_nchw(&g, &layers[1], 0, name); /* Reshape to [0, 3, 1, 1] */
    CHECK(!strcmp(name, "layer1.in0"));
    CHECK(g.body.len > 0 && memmem(g.body.data, g.body.len, "Reshape", 7) &&
          memmem(g.body.data, g.body.len, "layer1.in0.shape", 16));
    body_clear(&g);
    onnx_input_flat(&g, &layers[0], 0, name); /* the NCHW input needs a Flatten */
    CHECK(!strcmp(name, "layer0.in0") && memmem(g.body.data, g.body.len, "Flatten", 7));
    onnx_graph_free(&g);
}

/* In a sequence net the unflattened values are [N][T][features]: a flat value is reshaped to
 * rank 3. */
static void test_sequence_values_are_rank_3(void)
{
    Net net;
    Layer layers[2];
    OnnxGraph g;
    two_layer_net(&net, layers, NULL);
    net.seq = 4;
    net.in_shape = (Shape){1, 4, 1};
    layers[0].out_shape = (Shape){1, 4, 3};
    CHECK(onnx_graph_init(&g, &net, NULL, NULL, NULL) == CDL_OK);
    CHECK(g.sequence && !g.token_ids);
    onnx_output(&g, &layers[0], 1);
    char name[ONNX_NAME_MAX];
    onnx_input_nchw(&g, &layers[1], 0, name);
    /* the shape initializer: dims (1) 3, int64_data (7, packed) 0 4 3 */
    const unsigned char shape[] = {0x08, 0x03, 0x10, 0x07};
    const unsigned char values[] = {0x3a, 0x03, 0x00, 0x04, 0x03};
    CHECK(!strcmp(name, "layer1.in0") && memmem(g.body.data, g.body.len, "Reshape", 7) &&
          memmem(g.body.data, g.body.len, shape, sizeof shape) &&
          memmem(g.body.data, g.body.len, values, sizeof values));
    onnx_graph_free(&g);
}

static void test_layer_without_export_is_refused_and_nothing_is_written(void)
{
    static const LayerType future = {.name = "future"};
    Net net;
    Layer layers[2];
    two_layer_net(&net, layers, &future);
    char path[64];
    snprintf(path, sizeof path, "/tmp/cdl_test_onnx_%ld.onnx", (long)getpid());
    Error e = {0};
    CHECK(onnx_export(&net, "future", path, &(OnnxExportOptions){0, ONNX_OPSET_DEFAULT, 0}, &e) ==
          CDL_EUSAGE);
    CHECK_CONTAINS(e.msg, "layer 0 [future]: not exportable to ONNX");
    CHECK(access(path, F_OK) != 0);
}

static void test_ir_version_follows_the_opset(void)
{
    CHECK(onnx_ir_version(13) == 7 && onnx_ir_version(14) == 7);
    CHECK(onnx_ir_version(15) == 8 && onnx_ir_version(17) == 8);
}

int main(void)
{
    test_node_is_named_after_its_output();
    test_attributes_carry_their_type();
    test_strings_attribute_has_one_field_per_value();
    test_initializer_holds_dims_type_name_and_data();
    test_param_is_named_after_layer();
    test_inputs_convert_between_flat_and_nchw();
    test_sequence_values_are_rank_3();
    test_layer_without_export_is_refused_and_nothing_is_written();
    test_ir_version_follows_the_opset();
    return check_report("test_onnx");
}
