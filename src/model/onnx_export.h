/* `cdl export onnx`: a whole net as an ONNX ModelProto file (inference graph: batch norm
 * with running statistics, dropout as identity). */
#ifndef CDL_ONNX_EXPORT_H
#define CDL_ONNX_EXPORT_H

#include "core/onnx_graph.h"

/* Opsets the exporter writes: every operator it uses has one definition across them, and
 * both onnx 1.12 (Debian's python3-onnx) and current onnx/onnxruntime accept them. */
#define ONNX_OPSET_MIN 13
#define ONNX_OPSET_MAX 17
#define ONNX_OPSET_DEFAULT 13

/* The IR version written with an opset: the one of the onnx release that introduced it
 * (opset 13, 14: IR 7; 15..17: IR 8), so that older runtimes load the file. */
int onnx_ir_version(int opset);

/* Fills g (onnx_graph_init'ed for net) with every layer's nodes. A layer type without
 * export_onnx fails with "layer N [type]: not exportable to ONNX". */
int onnx_build_graph(const Net *net, OnnxGraph *g, Error *e);

typedef struct OnnxExportOptions {
    int batch;        /* 0: the batch axis is symbolic ("N") */
    int opset;        /* ONNX_OPSET_MIN..ONNX_OPSET_MAX */
    int decode_boxes; /* a detector's outputs are its decoded boxes and scores, not its heads
                         (model/onnx_detector.h) */
    const int *marks; /* a sequence-to-sequence net's start and end marks' ids [2], which the
                         decoder's file names in its metadata ("bos_id", "eos_id"); NULL: none */
} OnnxExportOptions;

/* Writes net to path atomically (nothing is left at path on failure); graph_name names the
 * graph. A detector's outputs are those of onnx_detector_outputs, any other net's its last
 * layer's. A sequence-to-sequence net ([net] source=S) is two graphs instead, written to
 * onnx_part_path(path, "encoder") and (path, "decoder"):
 *   encoder: "source" int64 [N][S] (the source's ids, -1 padding) -> "memory" [N][S][C], the
 *     output of the layer the cross-attention reads;
 *   decoder: one step of the decoder for target row t: "token" int64 [N][1] (row t's id, the start
 *     mark's at t = 0), "position" int64 [1] (t), "memory", "source", and per self-attention
 *     layer i "past.<i>.key" and "past.<i>.value" [N][H][t][D] (rows 0..t-1; t = 0: empty) ->
 *     "log_probs" [N][V] (the next token's, after a last [softmax]; else "logits"), and
 *     "present.<i>.key", "present.<i>.value" [N][H][t+1][D], the next step's past. The
 *     cross-attention's keys and values are computed from the memory in each step. */
int onnx_export(const Net *net, const char *graph_name, const char *path,
                const OnnxExportOptions *o, Error *e);

/* out = path without a final ".onnx", then ".<part>.onnx" (a sequence-to-sequence net's files). */
void onnx_part_path(const char *path, const char *part, char *out, size_t size);

#endif
