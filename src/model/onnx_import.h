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
 *   Concat (axis 1)       [route] (a chain past 16 inputs; of one input: no layer)
 *   Slice of channels [s, e) of a map, one of equal groups
 *                         [route] groups=C/(e-s) group_id=s/(e-s)
 *   Reshape to [N,g,C/g,H,W], Transpose [0,2,1,3,4], Reshape back
 *                         [shuffle] groups=g
 *   Shape, Gather, Add/Sub/Mul/Div, Concat, Reshape, Slice, Transpose, Cast,
 *   ConstantOfShape of int64 constants
 *                         no layer: folded to a constant (torch's x.chunk(2, dim=1),
 *                         F.pad's pads)
 *   Pad (constant, H and W)   [pad] (all zero: no layer)
 *   AveragePool of kxk windows (count_include_pad when padded)
 *                         [avgpool] size=k stride=s padding=p
 *   Transpose to channels last [0,2,3,1] and back [0,3,1,2]
 *                         no layer; on channels last only the layer norm, MatMul over the
 *                         channels ([convolutional] 1x1), activations and Add are taken
 *   LayerNormalization over channels last, or its chain ReduceMean, Sub, Pow, ReduceMean,
 *   Add, Sqrt, Div (Mul, Add)  [layernorm] channels=1
 *   Div by sqrt(2), Erf, Add 1, Mul x, Mul 0.5
 *                         activation=gelu, as the activations above
 *   Mul of a map by a per-channel constant
 *                         [layer_scale]
 *   Reshape of a map to [N,C,H*W], Transpose [0,2,1] (Concat after an Expand of a class token,
 *   Add of a position embedding, Reshape to [N,1,T,C])
 *                         [tokens] (onnx_import_tokens.c): token rows [N,T,C] or [N,1,T,C];
 *                         on them LayerNormalization or its chain [layernorm], MatMul by a
 *                         constant (+ Add, GELU) [linear], Add [shortcut], Gather or Slice of
 *                         one row [select_token]
 *   Transpose [1,0,2] of token rows ... Gemm, Reshape, Transpose (nn.MultiheadAttention), or
 *   cdl's own Reshape of a fused projection to [N,T,3,H,D] ... MatMul, Add
 *                         [attention] causal=0 (onnx_import_attention.c)
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
