/* The public API's exporters (cdl.h): ONNX, darknet .weights and npy files of a model. */
#include "cdl.h"

#include "cdl_model.h"
#include "data/text_pairs.h"
#include "model/darknet_weights.h"
#include "model/npy_export.h"
#include "model/onnx_export.h"

_Static_assert(CDL_ONNX_OPSET_MIN == ONNX_OPSET_MIN && CDL_ONNX_OPSET_MAX == ONNX_OPSET_MAX &&
                   CDL_ONNX_OPSET_DEFAULT == ONNX_OPSET_DEFAULT,
               "cdl.h's opsets are the exporter's");

int cdl_onnx_ir_version(int opset)
{
    return onnx_ir_version(opset);
}

void cdl_onnx_part_path(const char *path, const char *part, char *out, size_t size)
{
    onnx_part_path(path, part, out, size);
}

int cdl_model_export_onnx(const cdl_model *model, const char *graph_name, const char *path,
                          int batch, int opset, int decode_boxes, char *err, size_t err_size)
{
    Error e = {0};
    int marks[2];
    int st = CDL_OK;
    const int marked = cdl_model_is_seq2seq(model); /* a model trained on pairs: its vocabulary */
    if (marked) {
        st = api_mark_id(model, TEXT_PAIR_BOS, &marks[0], &e);
        st = st ? st : api_mark_id(model, TEXT_PAIR_EOS, &marks[1], &e);
    }
    const OnnxExportOptions o = {batch, opset, decode_boxes, marked ? marks : NULL};
    st = st ? st : onnx_export(&model->net, graph_name, path, &o, &e);
    return st ? api_report(&e, err, err_size) : CDL_OK;
}

int cdl_model_export_darknet(const cdl_model *model, const char *path, char *err, size_t err_size)
{
    Error e = {0};
    const uint64_t seen = model->meta.step * (uint64_t)model->net.hyper.batch;
    return darknet_weights_save(&model->net, path, seen, &e) ? api_report(&e, err, err_size)
                                                             : CDL_OK;
}

int cdl_model_export_npy(const cdl_model *model, const char *dir, char *err, size_t err_size)
{
    Error e = {0};
    return npy_export_net(&model->net, dir, &e) ? api_report(&e, err, err_size) : CDL_OK;
}
