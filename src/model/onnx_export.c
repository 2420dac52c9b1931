/* ONNX export driver: builds the graph layer by layer and wraps it in a ModelProto.
 *
 * The protobuf bytes are written by hand (io/protobuf.h) rather than with protobuf-c and a
 * generated onnx.pb-c.c: the messages needed are few (ModelProto, GraphProto, NodeProto,
 * AttributeProto, TensorProto, ValueInfoProto and the type/shape messages) and write-only,
 * so the wire format takes ~130 lines and the ONNX builder and this driver ~500, against
 * a new build dependency and thousands of lines of generated code to keep in step with
 * onnx.proto. */
#include "model/onnx_export.h"

#include <stdio.h>
#include <string.h>

#include "layers/families.h"
#include "model/onnx_detector.h"
#include "train/decode.h"
#include "train/net_keys.h"

#include "util/atomic_file.h"

enum { MODEL_IR_VERSION = 1, MODEL_PRODUCER_NAME = 2, MODEL_GRAPH = 7, MODEL_OPSET_IMPORT = 8 };
enum { MODEL_METADATA_PROPS = 14, ENTRY_KEY = 1, ENTRY_VALUE = 2 };
enum { OPSET_DOMAIN = 1, OPSET_VERSION = 2 };

int onnx_ir_version(int opset)
{
    return opset <= 14 ? 7 : 8;
}

/* g's nodes of layers [begin, end). */
static int build_layers(const Net *net, int begin, int end, OnnxGraph *g, Error *e)
{
    for (int i = begin; i < end; i++) {
        const Layer *l = &net->layers[i];
        if (!layer_type_exportable(l->type))
            return error_set(e, CDL_EUSAGE, "layer %d [%s]: not exportable to ONNX", i,
                             l->type->name);
        /* The image families' graphs read [N][c][h][w] values; a sequence net's are [N][T][F]. */
        if (net->seq > 0 && !l->kernels->forward_at)
            return error_set(e, CDL_EUSAGE,
                             "layer %d [%s]: not exportable to ONNX in a sequence net (only the "
                             "layers with a per-token step are)",
                             i, l->type->name);
        int st = l->type->export_onnx(l, net, g, e);
        if (st)
            return st;
    }
    return CDL_OK;
}

int onnx_build_graph(const Net *net, OnnxGraph *g, Error *e)
{
    return build_layers(net, 0, net->n_layers, g, e);
}

/* model = the ModelProto of the finished graph g named graph_name (and frees g). */
static int wrap_graph(OnnxGraph *g, const char *graph_name, int batch, int opset, PbBuf *model,
                      Error *e)
{
    PbBuf graph, opset_id;
    pb_init(&graph);
    pb_init(&opset_id);
    int st = onnx_graph_finish(g, graph_name, batch, &graph, e);
    if (!st) {
        pb_string(&opset_id, OPSET_DOMAIN, ""); /* the default ai.onnx domain */
        pb_int(&opset_id, OPSET_VERSION, opset);
        pb_int(model, MODEL_IR_VERSION, onnx_ir_version(opset));
        pb_string(model, MODEL_PRODUCER_NAME, "cdl");
        pb_message(model, MODEL_OPSET_IMPORT, &opset_id);
        pb_message(model, MODEL_GRAPH, &graph);
        if (model->failed)
            st = error_set(e, CDL_ERUNTIME, "out of memory building the ONNX model");
    }
    onnx_graph_free(g);
    pb_free(&graph);
    pb_free(&opset_id);
    return st;
}

/* model = the ModelProto of net's graph. */
static int build_model(const Net *net, const char *graph_name, const OnnxExportOptions *o,
                       PbBuf *model, Error *e)
{
    /* the input's normalisation; none in a net put together without a cfg (tests) */
    AugmentConfig a;
    const int normalised = net->cfg.n_sections > 0;
    int st = normalised ? net_augment(net, &a, e) : CDL_OK;
    if (st)
        return st;
    OnnxGraph g;
    st = onnx_graph_init(&g, net, normalised ? a.mean : NULL, normalised ? a.std : NULL, e);
    if (st) {
        onnx_graph_free(&g);
        return st;
    }
    g.batch = o->batch;
    st = onnx_build_graph(net, &g, e);
    st = st ? st : onnx_detector_outputs(net, &g, o->decode_boxes, e);
    if (st) {
        onnx_graph_free(&g);
        return st;
    }
    return wrap_graph(&g, graph_name, o->batch, o->opset, model, e);
}

/* A sequence-to-sequence net's decoder: its first layer (decode_first_layer) and *memory, the
 * one layer before it that its layers read, which every cross-attention names. */
static int decoder_layers(const Net *net, int *first, int *memory, Error *e)
{
    int st = decode_first_layer(net, first, e);
    *memory = -1;
    for (int i = *first; !st && i < net->n_layers; i++) {
        const Layer *l = &net->layers[i];
        for (int k = 0; k < l->n_inputs; k++) {
            const int in = l->inputs[k];
            if (in < 0 || in >= *first || in == *memory)
                continue;
            if (*memory >= 0)
                return error_set(e, CDL_EUSAGE,
                                 "layer %d reads layer %d of the encoder, and another layer reads "
                                 "layer %d: a decoder step reads one memory",
                                 i, in, *memory);
            *memory = in;
        }
    }
    if (!st && *memory < 0)
        return error_set(e, CDL_EUSAGE,
                         "the decoder reads nothing of the encoder: no [attention] source=");
    return st;
}

/* The source's ids [N][S], int64, -1 padding: a graph input of both parts. */
static OnnxValue source_value(const Net *net, int batch)
{
    OnnxValue v = onnx_value_batch(ONNX_SOURCE_IDS, ONNX_INT64, batch);
    v.rank = 2;
    v.dims[1] = net->source;
    return v;
}

/* The memory, layer memory's output [N][S][C]: the encoder's output, the decoder's input. */
static OnnxValue memory_value(const Net *net, int memory, int batch)
{
    const Shape m = net->layers[memory].out_shape;
    OnnxValue v = onnx_value_batch("memory", ONNX_FLOAT, batch);
    v.rank = 3;
    v.dims[1] = (int64_t)m.c * m.h;
    v.dims[2] = m.w;
    return v;
}

/* g, onnx_graph_init'ed for net, as the encoder: layers [0, memory] from the source ids
 * "source" [N][S] (-1 padding) to "memory" [N][S][C]. */
static int build_encoder(const Net *net, int memory, OnnxGraph *g, Error *e)
{
    const OnnxValue source = source_value(net, g->batch), out = memory_value(net, memory, g->batch);
    onnx_graph_declare(g, &source, 0);
    onnx_graph_declare(g, &out, 1);
    const int st = build_layers(net, 0, memory + 1, g, e);
    onnx_node(g, "Identity", 1, (const char *[]){g->layers[memory].name}, "memory", 0, NULL);
    return st;
}

/* g, onnx_graph_init'ed for net, as one decoder step: layers [first, end) from the row's token
 * "token" [N][1], its "position" [1], "memory" [N][S][C] and "source" [N][S] (the attention
 * layers add their past keys and values), to "log_probs" [N][V] (the natural log of a last
 * [softmax], else "logits", the last layer's [N][V]) and the present keys and values. */
static int build_decoder_step(const Net *net, int first, int memory, OnnxGraph *g, Error *e)
{
    const Layer *last = &net->layers[net->n_layers - 1];
    const int64_t vocab = last->out_shape.w;
    const int log = last->type == &softmax_layer;
    OnnxValue token = onnx_value_batch(ONNX_TOKEN_ID, ONNX_INT64, g->batch);
    token.rank = 2;
    token.dims[1] = 1;
    OnnxValue position = {.name = ONNX_POSITION, .data_type = ONNX_INT64, .rank = 1, .dims = {1}};
    OnnxValue out = onnx_value_batch(log ? "log_probs" : "logits", ONNX_FLOAT, g->batch);
    out.rank = 2;
    out.dims[1] = vocab;
    const OnnxValue mem = memory_value(net, memory, g->batch), source = source_value(net, g->batch);
    onnx_graph_declare(g, &token, 0);
    onnx_graph_declare(g, &position, 0);
    onnx_graph_declare(g, &mem, 0);
    onnx_graph_declare(g, &source, 0);
    onnx_graph_declare(g, &out, 1);
    snprintf(g->layers[memory].name, sizeof g->layers[memory].name, "memory");
    g->layers[memory].flat = 0;
    const int st = build_layers(net, first, net->n_layers, g, e);
    char row[ONNX_NAME_MAX] = "output.row", shape[ONNX_NAME_MAX] = "output.shape";
    onnx_int64s(g, shape, 2, (const int64_t[]){0, vocab});
    onnx_node(g, "Reshape", 2, (const char *[]){g->layers[last->index].name, shape},
              log ? row : out.name, 0, NULL);
    if (log)
        onnx_node(g, "Log", 1, (const char *[]){row}, out.name, 0, NULL);
    return st;
}

/* model's bytes at path, atomically (nothing is left at path on failure). */
static int write_model(const PbBuf *model, const char *path, Error *e)
{
    AtomicFile f;
    int st = atomic_file_open(&f, path, FILE_KIND_ONNX, e);
    if (!st) {
        fwrite(model->data, 1, model->len, f.file);
        st = atomic_file_commit(&f, e);
    }
    return st;
}

void onnx_part_path(const char *path, const char *part, char *out, size_t size)
{
    size_t n = strlen(path);
    if (n > 5 && !strcmp(path + n - 5, ".onnx"))
        n -= 5;
    snprintf(out, size, "%.*s.%s.onnx", (int)n, path, part);
}

/* Adds the metadata entry key = value (an int) to model. */
static void put_metadata(PbBuf *model, const char *key, int value)
{
    char text[16];
    snprintf(text, sizeof text, "%d", value);
    PbBuf entry;
    pb_init(&entry);
    pb_string(&entry, ENTRY_KEY, key);
    pb_string(&entry, ENTRY_VALUE, text);
    pb_message(model, MODEL_METADATA_PROPS, &entry);
    pb_free(&entry);
}

/* A sequence-to-sequence net's encoder and decoder step (the latter with the marks' ids in its
 * metadata unless marks is NULL), both built before either is written. */
static int export_seq2seq(const Net *net, const char *graph_name, const char *path,
                          const OnnxExportOptions *o, Error *e)
{
    static const char *const parts[] = {"encoder", "decoder"};
    int first, memory;
    int st = decoder_layers(net, &first, &memory, e);
    PbBuf models[2];
    pb_init(&models[0]);
    pb_init(&models[1]);
    for (int k = 0; k < 2 && !st; k++) {
        OnnxGraph g;
        st = onnx_graph_init(&g, net, NULL, NULL, e);
        g.part = k ? ONNX_DECODER_STEP : ONNX_ENCODER;
        g.batch = o->batch;
        st = st  ? st
             : k ? build_decoder_step(net, first, memory, &g, e)
                 : build_encoder(net, memory, &g, e);
        char name[256];
        snprintf(name, sizeof name, "%s.%s", graph_name, parts[k]);
        if (st)
            onnx_graph_free(&g);
        else
            st = wrap_graph(&g, name, o->batch, o->opset, &models[k], e);
    }
    if (!st && o->marks) {
        put_metadata(&models[1], "bos_id", o->marks[0]);
        put_metadata(&models[1], "eos_id", o->marks[1]);
    }
    for (int k = 0; k < 2 && !st; k++) {
        char part_path[4096];
        onnx_part_path(path, parts[k], part_path, sizeof part_path);
        st = write_model(&models[k], part_path, e);
    }
    pb_free(&models[0]);
    pb_free(&models[1]);
    return st;
}

int onnx_export(const Net *net, const char *graph_name, const char *path,
                const OnnxExportOptions *o, Error *e)
{
    if (net->source && o->decode_boxes)
        return error_set(e, CDL_EUSAGE, "decoding boxes needs a detector ([yolo] or [region])");
    if (net->source)
        return export_seq2seq(net, graph_name, path, o, e);
    PbBuf model;
    pb_init(&model);
    int st = build_model(net, graph_name, o, &model, e);
    st = st ? st : write_model(&model, path, e);
    pb_free(&model);
    return st;
}
