/* ONNX export driver: builds the graph layer by layer and wraps it in a ModelProto.
 *
 * The protobuf bytes are written by hand (io/protobuf.h) rather than with protobuf-c and a
 * generated onnx.pb-c.c: the messages needed are few (ModelProto, GraphProto, NodeProto,
 * AttributeProto, TensorProto, ValueInfoProto and the type/shape messages) and write-only,
 * so the wire format takes ~130 lines and the ONNX builder and this driver ~500, against
 * a new build dependency and thousands of lines of generated code to keep in step with
 * onnx.proto. */
#include "model/onnx_export.h"
#include "model/onnx_detector.h"
#include "train/net_keys.h"

#include "util/atomic_file.h"

enum { MODEL_IR_VERSION = 1, MODEL_PRODUCER_NAME = 2, MODEL_GRAPH = 7, MODEL_OPSET_IMPORT = 8 };
enum { OPSET_DOMAIN = 1, OPSET_VERSION = 2 };

int onnx_ir_version(int opset)
{
    return opset <= 14 ? 7 : 8;
}

int onnx_build_graph(const Net *net, OnnxGraph *g, Error *e)
{
    for (int i = 0; i < net->n_layers; i++) {
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
    PbBuf graph, opset_id;
    pb_init(&graph);
    pb_init(&opset_id);
    st = onnx_graph_init(&g, net, normalised ? a.mean : NULL, normalised ? a.std : NULL, e);
    st = st ? st : onnx_build_graph(net, &g, e);
    st = st ? st : onnx_detector_outputs(net, &g, o->decode_boxes, e);
    st = st ? st : onnx_graph_finish(&g, graph_name, o->batch, &graph, e);
    if (!st) {
        pb_string(&opset_id, OPSET_DOMAIN, ""); /* the default ai.onnx domain */
        pb_int(&opset_id, OPSET_VERSION, o->opset);
        pb_int(model, MODEL_IR_VERSION, onnx_ir_version(o->opset));
        pb_string(model, MODEL_PRODUCER_NAME, "cdl");
        pb_message(model, MODEL_OPSET_IMPORT, &opset_id);
        pb_message(model, MODEL_GRAPH, &graph);
        if (model->failed)
            st = error_set(e, CDL_ERUNTIME, "out of memory building the ONNX model");
    }
    onnx_graph_free(&g);
    pb_free(&graph);
    pb_free(&opset_id);
    return st;
}

int onnx_export(const Net *net, const char *graph_name, const char *path,
                const OnnxExportOptions *o, Error *e)
{
    PbBuf model;
    pb_init(&model);
    int st = build_model(net, graph_name, o, &model, e);
    AtomicFile f;
    if (!st && !(st = atomic_file_open(&f, path, FILE_KIND_ONNX, e))) {
        fwrite(model.data, 1, model.len, f.file);
        st = atomic_file_commit(&f, e);
    }
    pb_free(&model);
    return st;
}
