/* The parts of `cdl import` (onnx_import.h) shared by its files: the layers being built, the
 * ONNX values they bind, and the helpers that read a node's inputs and attributes. The node
 * importers live by pattern group: onnx_import_layers.c (one node, one layer or a fold),
 * onnx_import_gates.c (activations, and the Mul patterns: x·gate(x) activations,
 * squeeze-excitation's per-channel scale), onnx_import_pools.c (pooling, Pad),
 * onnx_import_shapes.c (shape arithmetic, channel slices and shuffles), onnx_import_fold.c
 * (int64 constants computed), onnx_import_chains.c (layer norm, GELU, channels-last MatMul),
 * onnx_import_tokens.c (a vision transformer's token rows: [tokens], Linear over the rows,
 * [select_token]), onnx_import_attention.c (nn.MultiheadAttention's subgraph).
 * Every importer returns CDL_OK or an error naming the node (import_refuse). */
#ifndef CDL_ONNX_IMPORT_INTERNAL_H
#define CDL_ONNX_IMPORT_INTERNAL_H

#include "core/window2d.h"
#include "model/onnx_import.h"

/* A name from the file in a comment of the written cfg: escaped into one line (a newline in a
 * node's name would start a cfg key), cut at this many bytes. */
#define COMMENT_NAME_BYTES 256

typedef enum ImportKind {
    K_CONV,
    K_CONNECTED,
    K_BATCHNORM,
    K_MAXPOOL,
    K_AVGPOOL,
    K_ROUTE,
    K_SHORTCUT,
    K_SOFTMAX,
    K_SCALE_CHANNELS,
    K_SHUFFLE,
    K_PAD,
    K_LAYERNORM,
    K_LAYER_SCALE,
    K_TOKENS,
    K_SELECT_TOKEN,
    K_LINEAR,
    K_ATTENTION
} ImportKind;

/* A parameter of a layer: cdl's name and its values in cdl's layout, either the ONNX
 * tensor's own (borrowed: large weights are not copied) or owned, when the import changes
 * them (folded biases and means, transposed weights) or makes them (zero biases). */
typedef struct ImportParam {
    const char *name;
    const float *data;
    float *owned; /* data, when owned; else NULL */
    size_t count;
} ImportParam;

enum { IMPORT_MAX_PARAMS = 5 };

typedef struct ImportLayer {
    ImportKind kind;
    const OnnxNode *node; /* the node that made it (for messages) */
    Shape out;
    int flat; /* its value is [N][features] (a rank-2 ONNX tensor) */
    int filters, size, stride, padding, batch_normalize, outputs; /* size..padding: pools' */
    Window2d win;                /* [convolutional]'s kernel, stride and padding per axis */
    int groups, group_id;        /* [convolutional] groups; [route] groups, group_id; [shuffle] */
    int pad[4];                  /* [pad] top, left, bottom, right */
    float pad_value;             /* [pad] value */
    float eps;                   /* [layernorm] */
    int class_token, positional; /* [tokens] */
    int heads;                   /* [attention] */
    int index;                   /* [select_token] */
    ActivationKind activation;
    int refs[LAYER_MAX_INPUTS]; /* route: the layers read; shortcut: refs[0] = from */
    int n_refs;
    int open_bias;    /* a MatMul's [connected]: an Add of a constant may still give biases */
    int no_bias;      /* a Conv without its bias input: [convolutional] bias=0 */
    const char *head; /* the ONNX value the layer last wrote: folds read only this one */
    ImportParam params[IMPORT_MAX_PARAMS];
    int n_params;
} ImportLayer;

/* How a layer's output is laid out in an ONNX value (ImportValue.flat): any layout but
 * VALUE_MAP is refused where a node needs [N,C,H,W]. VALUE_ROWS is a layer of token rows, shape
 * {1, T, C}, held as [N,T,C] (torch's export), VALUE_ROWS4 as [N,1,T,C] (cdl's own). */
enum { VALUE_MAP = 0, VALUE_VECTOR = 1, VALUE_NHWC = 2, VALUE_ROWS = 3, VALUE_ROWS4 = 4 };

static inline int import_is_rows(int flat)
{
    return flat == VALUE_ROWS || flat == VALUE_ROWS4;
}

/* What an ONNX value is: a layer's output (-1: the net input) or a constant tensor. */
typedef struct ImportValue {
    const char *name;
    int layer;
    const OnnxTensor *constant;
    int flat; /* VALUE_MAP [N,C,H,W], VALUE_VECTOR [N,features], VALUE_NHWC [N,H,W,C],
                 VALUE_ROWS [N,T,C], VALUE_ROWS4 [N,1,T,C] */
} ImportValue;

typedef struct Importer {
    const OnnxModel *m;
    ImportLayer *layers;
    int n_layers, cap_layers;
    ImportValue *values;
    int n_values, cap_values;
    Shape in_shape;
    int64_t batch; /* the graph input's N: -1 when symbolic */
    int input_flat;
    float bn_eps;
    int have_bn_eps;
    float mean[3], std[3];
    int normalised;          /* 1: Sub seen, 2: Mul/Div seen too */
    unsigned char *consumed; /* [m->n_nodes]: 1 for a node a pattern before it took in */
    OnnxTensor **made;       /* constants the import computed (folded shapes), owned */
    int n_made, cap_made;
    Error *e;
} Importer;

/* ---- messages (onnx_import_values.c) ---- */

/* CDL_EUSAGE: "node 'NAME' (OP): why". */
int import_refuse(const Importer *im, const OnnxNode *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int import_out_of_memory(const Importer *im);
int import_refuse_channels_last(const Importer *im, const OnnxNode *n);
/* "[1,2,3]" */
const char *import_ints_text(const int64_t *v, int n, char *buf, size_t size);

/* ---- values ---- */

ImportValue *import_find_value(const Importer *im, const char *name);
int import_bind(Importer *im, const char *name, int layer, const OnnxTensor *constant, int flat);
/* The shape of the layer (or net input, -1) a value holds. */
Shape import_layer_shape(const Importer *im, int layer);
/* How many node inputs and graph outputs read name. */
int import_readers(const Importer *im, const char *name);
/* *v = the value of input k of n, which must be a layer's (or the net input). */
int import_input_layer(Importer *im, const OnnxNode *n, int k, const ImportValue **v);
/* *t = input k of n as a constant (NULL when absent and optional; optional 2: any type). */
int import_input_constant(Importer *im, const OnnxNode *n, int k, int optional,
                          const OnnxTensor **t);

/* ---- attributes ---- */

/* Refuses any attribute of n not named in allowed (NULL-terminated). */
int import_check_attrs(Importer *im, const OnnxNode *n, const char *const *allowed);
int64_t import_attr_int(const OnnxNode *n, const char *name, int64_t def);
float import_attr_float(const OnnxNode *n, const char *name, float def);
/* A Conv's or pooling's window per axis: kernel_shape (kernel_dims, a Conv's weight shape, when
 * absent), strides, pads [h_begin, w_begin, h_end, w_end] as given (win's pads the begins),
 * dilations 1. */
int import_window_attrs(Importer *im, const OnnxNode *n, const int64_t *kernel_dims, Window2d *win,
                        int64_t pads[4]);
/* A pooling's window: import_window_attrs, then a square kernel ksize, equal strides, rows padded
 * as columns. */
int import_square_window_attrs(Importer *im, const OnnxNode *n, int *ksize, int *stride,
                               int64_t pads[4]);

/* ---- layers ---- */

ImportLayer *import_add_layer(Importer *im, ImportKind kind, const OnnxNode *n);
void import_add_param(ImportLayer *l, const char *name, const float *src, size_t count);
float *import_add_owned_param(Importer *im, ImportLayer *l, const char *name, const float *src,
                              size_t count);
ImportParam *import_find_param(ImportLayer *l, const char *name);
/* Input k of n made the last layer (a [route] to it when it is not): *v, *layer. */
int import_read_input(Importer *im, const OnnxNode *n, int k, const ImportValue **v, int *layer);
int import_bind_output(Importer *im, const OnnxNode *n, int layer, int flat);
/* The layer x's producer, when x is its last output and has one reader; else NULL. */
ImportLayer *import_fold_target(Importer *im, const ImportValue *x);

/* ---- looking ahead (patterns of several nodes) ---- */

/* The index of the only node reading value, when exactly one does and its type is op; else
 * -1. */
int import_sole_reader(const Importer *im, const char *value, const char *op);
/* The constant named name wherever the graph defines it: an initializer, a Constant node or an
 * Identity of one, also one after the node being imported (a pattern reads its later nodes').
 * NULL if none. */
const OnnxTensor *import_graph_constant(const Importer *im, const char *name);
/* The input of the two-input node n that is not value; NULL when value is neither. */
const char *import_other_input(const OnnxNode *n, const char *value);
/* Whether name is a one-value float constant within tolerance of want. */
int import_is_scalar(const Importer *im, const char *name, float want, float tolerance);

/* ---- node importers (onnx_import_layers.c) ---- */

int import_conv(Importer *im, const OnnxNode *n);
int import_gemm(Importer *im, const OnnxNode *n);
int import_matmul(Importer *im, const OnnxNode *n);
int import_add(Importer *im, const OnnxNode *n);
int import_concat(Importer *im, const OnnxNode *n);
int import_batchnorm(Importer *im, const OnnxNode *n);
int import_softmax(Importer *im, const OnnxNode *n);
int import_flatten(Importer *im, const OnnxNode *n, int reshape);
int import_alias(Importer *im, const OnnxNode *n);
int import_constant(Importer *im, const OnnxNode *n);
/* Sub, Mul (div 0) or Div of per-channel constants at the graph input: [net] mean/std. */
int import_normalisation(Importer *im, const OnnxNode *n, int sub, int div);

/* ---- pooling and padding (onnx_import_pools.c) ---- */

int import_maxpool(Importer *im, const OnnxNode *n);
int import_avgpool(Importer *im, const OnnxNode *n, int global);
int import_reduce_mean(Importer *im, const OnnxNode *n);
int import_pad(Importer *im, const OnnxNode *n);

/* ---- activations and gates (onnx_import_gates.c) ---- */

/* Relu, Sigmoid, ...: the activation of the layer before. */
int import_activation(Importer *im, const OnnxNode *n, ActivationKind a);
int import_clip(Importer *im, const OnnxNode *n);
/* Activation a on the layer of x, which n_readers nodes read (the chain's own), the value of
 * node last's output now. */
int import_fold_activation(Importer *im, const OnnxNode *n, const ImportValue *x, int n_readers,
                           ActivationKind a, int last);
/* Sigmoid and HardSigmoid (torch's alpha 1/6), and with a Mul by their input, swish and
 * hardswish. */
int import_sigmoid(Importer *im, const OnnxNode *n);
int import_hard_sigmoid(Importer *im, const OnnxNode *n);
/* Mul of two layers: [scale_channels]; of constants at the input: [net] std. */
int import_mul(Importer *im, const OnnxNode *n);

/* ---- shapes and channels (onnx_import_shapes.c) ---- */

/* A new int64 constant [dims] owned by the importer, bound to n's output; *values its data. */
int import_make_ints(Importer *im, const OnnxNode *n, int n_dims, const int64_t *dims,
                     int64_t **values);
/* *t = the int64 constant input k of n (NULL when absent), or a refusal. */
int import_int_input(Importer *im, const OnnxNode *n, int k, const OnnxTensor **t);
int import_shape(Importer *im, const OnnxNode *n);
int import_gather(Importer *im, const OnnxNode *n);
/* Add, Sub, Mul, Div (op: the first letter) of int64 constants: a folded constant. */
int import_int_arithmetic(Importer *im, const OnnxNode *n, char op);
int import_slice(Importer *im, const OnnxNode *n);
/* A Reshape by shape, a 5-D constant: the channel shuffle, or refused. */
int import_channel_shuffle(Importer *im, const OnnxNode *n, const OnnxTensor *shape);

/* ---- chains of elementwise nodes (onnx_import_chains.c) ---- */

int import_transpose(Importer *im, const OnnxNode *n);
/* MatMul of a channels-last map x by the constant w. */
int import_channel_matmul(Importer *im, const OnnxNode *n, const ImportValue *x,
                          const OnnxTensor *w);
/* ReduceMean n of x over its channels. */
int import_channel_norm(Importer *im, const OnnxNode *n, const ImportValue *x);
int import_layer_normalization(Importer *im, const OnnxNode *n);
/* Div n of the layer value x. */
int import_gelu(Importer *im, const OnnxNode *n, const ImportValue *x);
/* Mul n of the layer value x by the constant t. */
int import_layer_scale(Importer *im, const OnnxNode *n, const ImportValue *x, const OnnxTensor *t);

/* ---- token rows (onnx_import_tokens.c, onnx_import_attention.c) ---- */

/* The index of the node whose output 0 is value; -1 for a graph input or initializer. */
int import_producer(const Importer *im, const char *value);
/* Reshape n of the map x by shape, 3 values [N, C, H*W]: the start of [tokens] (Transpose
 * [0,2,1], a class token Concatenated in front, a position embedding Added), or refused. */
int import_tokens(Importer *im, const OnnxNode *n, const ImportValue *x, const OnnxTensor *shape);
/* The 2-D float constant whose Transpose (perm [1,0]) is value, which MatMuls alone read (cdl's
 * own export of [linear]: its weights [O][C] transposed); NULL otherwise. */
const OnnxTensor *import_transposed_constant(const Importer *im, const char *value);
/* MatMul of token rows x by the constant w [C, O] (transposed: w is [O, C], the Transpose's
 * input): [linear] output=O (biases from an Add). */
int import_row_matmul(Importer *im, const OnnxNode *n, const ImportValue *x, const OnnxTensor *w,
                      int transposed);
/* Gather n of [N,T,C] token rows x (axis 1, one index), or Slice n of [N,1,T,C] ones (axis 2,
 * one row): [select_token]. */
int import_select_token(Importer *im, const OnnxNode *n, const ImportValue *x);
/* Transpose n of token rows x to [T,N,C], perm [1,0,2]: the start of torch's export of
 * nn.MultiheadAttention(batch_first=True) on them, [attention] causal=0; or refused. */
int import_attention(Importer *im, const OnnxNode *n, const ImportValue *x);
/* Reshape n of the [linear] output=3C that x holds to [N, T, 3, H, D] (shape): the heads of cdl's
 * own export of [attention], which turns that layer into it; or refused. */
int import_own_attention(Importer *im, const OnnxNode *n, const ImportValue *x,
                         const OnnxTensor *shape);

/* ---- int64 constants folded (onnx_import_fold.c) ---- */

/* Concat, Reshape, Slice, Transpose, Cast or ConstantOfShape of int64 constants (torch's
 * export of F.pad's pads): a new constant. */
int import_fold_ints(Importer *im, const OnnxNode *n);

#endif
