/* `cdl import`: an ONNX graph (io/onnx_read.h) mapped onto cdl layers, as cfg text and a net
 * holding the graph's parameters in cdl's layouts.
 *
 * Nodes are taken in file order (topological in every valid ONNX file); each becomes one cdl
 * layer, folds into the layer that produced its input, or names that layer's output again:
 *
 *   Conv                  [convolutional]: square kernel, equal strides, symmetric pads,
 *                         dilations 1, group; the ONNX bias (or zeros) as biases
 *   BatchNormalization    batch_normalize=1 on the Conv/Gemm it follows when it is that
 *                         layer's only reader and has no activation yet (the conv bias moves
 *                         into the running mean); else [batchnorm]; one epsilon for the whole
 *                         graph, as [net] bn_eps
 *   Relu LeakyRelu(0.1) Sigmoid Tanh Elu(1) Clip(0,6) HardSigmoid(1/6, 1/2) HardSwish
 *                         activation= of the [convolutional], [connected], [shortcut] or
 *                         [batchnorm] it follows (its only reader, still linear); anywhere
 *                         else refused
 *   Sigmoid or HardSigmoid of x, then Mul by x (x read by nothing else)
 *                         activation=swish or hardswish, as above
 *   Mul of a [C,1,1] layer by a [C,H,W] one
 *                         [scale_channels] from= the map (squeeze-excitation)
 *   MaxPool               [maxpool]: pads equal per side or one more after (darknet's uneven
 *                         padding); ceil_mode=1 as one more row and column of padding after,
 *                         where that gives its size
 *   GlobalAveragePool, AveragePool over the whole input, ReduceMean over axes [2,3]
 *                         [avgpool]; AveragePool 1x1/1 is an identity
 *   Gemm (transB, alpha = beta = 1), MatMul (+ Add of a constant: the biases)
 *                         [connected]
 *   Add of two layers     [shortcut] (equal shapes)
 *   Concat (axis 1)       [route]
 *   Softmax (over the features of a vector or a 1x1 map)
 *                         [softmax]
 *   Flatten(axis 1), Reshape to [N, features], Identity, Dropout, Constant
 *                         no layer: a new name for a value
 *   Sub, Mul/Div of per-channel constants right at the graph input (cdl's own export of
 *                         [net] mean/std)   [net] mean=, std=
 *
 * A node reading a layer other than the last one gets a [route] to it first. Anything else,
 * an operator outside this list or an attribute value cdl cannot express, is refused with
 * CDL_EUSAGE: "node 'NAME' (OP): attribute ATTR=VALUE: why" or "node 'NAME' (OP): ...". */
#ifndef CDL_ONNX_IMPORT_H
#define CDL_ONNX_IMPORT_H

#include "core/net.h"
#include "io/onnx_read.h"

typedef struct OnnxImport {
    char *cfg_text; /* the cfg (malloc'd) */
    Net net;        /* built from cfg_text, without gradients, holding the graph's values */
    int n_layers;
} OnnxImport;

/* Maps m onto a cfg and a net; source names the model in the cfg's first comment. On failure
 * *imp is left empty (onnx_import_free is still safe). */
int onnx_import(const OnnxModel *m, const char *source, OnnxImport *imp, Error *e);
void onnx_import_free(OnnxImport *imp);

#endif
