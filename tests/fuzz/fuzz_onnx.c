/* Fuzz target: ONNX import: a serialized ModelProto decoded (onnx_model_parse, with the
 * protobuf reader under it) and mapped onto cdl layers and a net (onnx_import). The net is
 * built without activations, and its parameters come from the file's initializers, so its size
 * is bounded by the input's. */
#include "fuzz.h"
#include "io/onnx_read.h"
#include "model/onnx_import.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_setup();
    OnnxModel m;
    Error e;
    if (onnx_model_parse(data, size, &m, &e) == CDL_OK) {
        OnnxImport imp;
        onnx_import(&m, "fuzz.onnx", &imp, &e);
        onnx_import_free(&imp);
    }
    onnx_model_free(&m);
    return 0;
}
