/* The public API's ONNX import (cdl.h): reads the file, maps it (model/onnx_import.h), writes
 * the cfg and the checkpoint. */
#include "cdl.h"

#include <string.h>

#include "cdl_model.h"
#include "io/onnx_read.h"
#include "model/onnx_import.h"
#include "util/atomic_file.h"

static int write_text(const char *path, const char *text, Error *e)
{
    AtomicFile f;
    int st = atomic_file_open(&f, path, FILE_KIND_CFG, e);
    if (st)
        return st;
    fputs(text, f.file);
    return atomic_file_commit(&f, e);
}

int cdl_import_onnx(const char *onnx_path, const char *cfg_path, const char *model_path,
                    cdl_import_summary *summary, char *err, size_t err_size)
{
    Error e = {0};
    OnnxModel m;
    OnnxImport imp = {0};
    const char *base = strrchr(onnx_path, '/');
    int st = onnx_model_load(onnx_path, &m, &e);
    if (!st && (st = onnx_import(&m, base ? base + 1 : onnx_path, &imp, &e)))
        error_prefix(&e, st, "%s: ", onnx_path);
    if (!st && model_path) {
        ModelMeta meta = {.valid_accuracy = -1, .valid_loss = -1};
        st = model_save(model_path, &imp.net, NULL, &meta, &e);
    }
    st = st ? st : write_text(cfg_path, imp.cfg_text, &e);
    if (!st && summary)
        *summary = (cdl_import_summary){m.n_nodes, imp.n_layers, (int)m.opset};
    onnx_import_free(&imp);
    onnx_model_free(&m);
    return st ? api_report(&e, err, err_size) : CDL_OK;
}
