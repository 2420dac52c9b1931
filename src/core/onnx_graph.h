/* ONNX graph builder: the nodes and initializers of a GraphProto, appended in order as
 * layers export themselves (LayerType.export_onnx), plus the bookkeeping layers share:
 * the ONNX value holding each layer's output and whether it is flat.
 *
 * Values are float tensors with a batch axis first. A layer's output is [N][c][h][w]
 * (its out_shape) or, when the layer says so, "flat" [N][c*h*w] (Gemm and Softmax
 * outputs); onnx_input_nchw / onnx_input_flat convert when the consumer wants the other.
 * In a sequence net ([net] seq=T) the unflattened values are [N][c*h][w] instead, rank 3,
 * [N][T][features] (c is 1 there), and the graph input is int64 token ids [N][T] when the
 * first layer reads token ids ([embedding]), else float [N][T][inputs].
 * A sequence-to-sequence net is built as two parts instead (OnnxPart), whose inputs and outputs
 * the exporter and the layers declare by name (onnx_graph_declare; model/onnx_export.h).
 * Names: the graph input is "input", layer i's output "layer<i>", its parameters
 * "layer<i>.<param name>" and its intermediate values "layer<i>.<suffix>". Each node is
 * named after its output, which is unique. */
#ifndef CDL_ONNX_GRAPH_H
#define CDL_ONNX_GRAPH_H

#include <stdint.h>

#include "core/net.h"
#include "io/protobuf.h"

#define ONNX_NAME_MAX 64

/* TensorProto.DataType values used here. */
enum { ONNX_FLOAT = 1, ONNX_INT64 = 7 };

/* AttributeProto.AttributeType values used here. */
typedef enum OnnxAttrType {
    ONNX_ATTR_FLOAT = 1,
    ONNX_ATTR_INT = 2,
    ONNX_ATTR_INTS = 7,
    ONNX_ATTR_STRINGS = 8
} OnnxAttrType;

typedef struct OnnxAttr {
    const char *name;
    OnnxAttrType type;
    float f;
    int64_t i;
    const int64_t *ints;        /* ONNX_ATTR_INTS: n_ints values */
    const char *const *strings; /* ONNX_ATTR_STRINGS: n_ints values */
    int n_ints;
} OnnxAttr;

static inline OnnxAttr onnx_attr_float(const char *name, float v)
{
    return (OnnxAttr){.name = name, .type = ONNX_ATTR_FLOAT, .f = v};
}
static inline OnnxAttr onnx_attr_int(const char *name, int64_t v)
{
    return (OnnxAttr){.name = name, .type = ONNX_ATTR_INT, .i = v};
}
static inline OnnxAttr onnx_attr_ints(const char *name, const int64_t *v, int n)
{
    return (OnnxAttr){.name = name, .type = ONNX_ATTR_INTS, .ints = v, .n_ints = n};
}
static inline OnnxAttr onnx_attr_strings(const char *name, const char *const *v, int n)
{
    return (OnnxAttr){.name = name, .type = ONNX_ATTR_STRINGS, .strings = v, .n_ints = n};
}

/* Which graph of a net is built: all of it, or a sequence-to-sequence net's encoder or one step
 * of its decoder (onnx_export.h says what they read and write). */
typedef enum OnnxPart { ONNX_WHOLE_NET, ONNX_ENCODER, ONNX_DECODER_STEP } OnnxPart;

/* The graph inputs of the parts: the source's int64 ids [N][S] (-1 padding), the int64 id [N][1]
 * of the target row a decoder step reads, and that row's position [1] (0 for the start mark). */
#define ONNX_SOURCE_IDS "source"
#define ONNX_TOKEN_ID "token"
#define ONNX_POSITION "position"

/* A graph input or output that a part declares: a tensor of data_type whose dims[k] is a size, or
 * the symbolic axis dim_names[k] where that is not NULL. */
typedef struct OnnxValue {
    char name[ONNX_NAME_MAX];
    int data_type;
    int rank;
    int64_t dims[4];
    const char *dim_names[4];
} OnnxValue;

/* What the graph knows about one layer. */
typedef struct OnnxLayer {
    char name[ONNX_NAME_MAX]; /* the value holding its output */
    Shape shape;              /* out_shape */
    int flat;                 /* the value is [N][c*h*w] rather than [N][c][h][w] */
} OnnxLayer;

typedef struct OnnxGraph {
    PbBuf body;        /* GraphProto fields 1 (node) and 5 (initializer) so far */
    OnnxLayer input;   /* what layers read as the net input: the graph input "input"
                          [N][c][h][w], or "input.normalized" when [net] sets mean/std */
    OnnxLayer *layers; /* [n_layers] */
    int n_layers;
    int sequence;  /* a sequence net: unflattened values are [N][T][features] */
    int token_ids; /* the graph input is int64 token ids [N][T] */
    OnnxPart part;
    int batch; /* the batch axis of declared values: its size, or 0 for the symbolic "N" */
    /* a part's graph inputs and outputs, or the whole net's declared outputs
       (onnx_graph_declare, onnx_graph_add_output), in order; [io_cap] each */
    OnnxValue *inputs, *outputs;
    int n_inputs, n_outputs, io_cap;
} OnnxGraph;

/* Prepares an empty graph for net's layers, whose input the [net] keys normalise by mean and std
 * (one per channel, the first 3; NULL: not normalised) before the first layer. */
int onnx_graph_init(OnnxGraph *g, const Net *net, const float *mean, const float *std, Error *e);
void onnx_graph_free(OnnxGraph *g);
/* Adds v to the part's graph inputs (output 0) or outputs (output 1). */
void onnx_graph_declare(OnnxGraph *g, const OnnxValue *v, int output);
/* The value of the batch axis of a part's inputs and outputs: batch, or "N" when batch is 0. */
OnnxValue onnx_value_batch(const char *name, int data_type, int batch);

/* Appends a node: op_type op reading n_in values (an empty name skips an optional input)
 * and writing output. */
void onnx_node(OnnxGraph *g, const char *op, int n_in, const char *const *in, const char *output,
               int n_attrs, const OnnxAttr *attrs);
/* Appends an initializer of data_type ONNX_FLOAT (data: float[]) or ONNX_INT64 (int64_t[])
 * with n_dims dims (0: a scalar), stored as little-endian raw_data. */
void onnx_initializer(OnnxGraph *g, const char *name, int data_type, int n_dims,
                      const int64_t *dims, const void *data);
/* Shorthands: a float scalar, and a vector of int64 (shapes, pads, slice bounds). */
void onnx_scalar(OnnxGraph *g, const char *name, float v);
void onnx_int64s(OnnxGraph *g, const char *name, int n, const int64_t *v);

/* y = x[start:end] along axis, with the bounds as initializers "<y>.starts", "<y>.ends" and
 * "<y>.axes". */
void onnx_slice(OnnxGraph *g, const char *x, int64_t axis, int64_t start, int64_t end,
                const char *y);

/* Declares name, a float value [N][dims[1]]..[dims[rank-1]] (dims[0] unused: the batch axis is
 * g->batch's), as a graph output of the whole net: declared outputs replace the last layer's. */
void onnx_graph_add_output(OnnxGraph *g, const char *name, int rank, const int64_t *dims);

/* name = "layer<i>" or "layer<i>.<suffix>" (suffix NULL for the former). */
void onnx_name(char name[ONNX_NAME_MAX], const Layer *l, const char *suffix);
/* Adds l->params[param] as the initializer "layer<i>.<param name>" with the Param's shape;
 * name receives the value name. */
void onnx_param(OnnxGraph *g, const Layer *l, int param, char name[ONNX_NAME_MAX]);
/* onnx_param, shaped [count][1][1] when planes is set: one value per channel, broadcast over the
 * planes of [N][count][h][w] (a per-channel tensor of [layer_scale], [layernorm] channels=1). */
void onnx_param_along(OnnxGraph *g, const Layer *l, int param, int planes,
                      char name[ONNX_NAME_MAX]);
/* name = parameter p's value as the layer holding it names it ("layer<i>.<param name>"): a
 * table that several layers read ([embedding] share=, [linear] tie=1) has one name. */
void onnx_param_name(const Net *net, const Param *p, char name[ONNX_NAME_MAX]);
/* padded = Less(ids, 0): which int64 token ids of ids are padding (bool, ids' shape); the zero it
 * compares with is the initializer "<padded>.zero". */
void onnx_padding(OnnxGraph *g, const char *ids, const char *padded);
/* y = Unsqueeze(x, axes) (the axes an int64 initializer "<y>.axes"). */
void onnx_unsqueeze(OnnxGraph *g, const char *x, int n_axes, const int64_t *axes, const char *y);
/* What the graph knows about l's k-th input (the graph input for -1). */
const OnnxLayer *onnx_input(const OnnxGraph *g, const Layer *l, int k);
/* name = l's k-th input as [N][c][h][w] ([N][c*h][w] in a sequence net; adding a Reshape when
 * it is flat) or as [N][c*h*w] (adding a Flatten when it is not). */
void onnx_input_nchw(OnnxGraph *g, const Layer *l, int k, char name[ONNX_NAME_MAX]);
void onnx_input_flat(OnnxGraph *g, const Layer *l, int k, char name[ONNX_NAME_MAX]);
/* Records whether l's output is flat and returns the name its last node must write. */
const char *onnx_output(OnnxGraph *g, const Layer *l, int flat);

/* l's output, a permutation of its input 0 [N][c][h][w]: a Reshape to [N][split[1..rank)],
 * a Transpose by perm (rank entries, perm[0] = 0) and a Reshape to l's [N][c][h][w] output, the
 * intermediate values "layer<i>.split" and "layer<i>.moved" ([reorg], [shuffle]). */
void onnx_permute_channels(OnnxGraph *g, const Layer *l, int rank, const int64_t *split,
                           const int64_t *perm);

/* y = x w^T (+ b) over the last axis of x, as torch.nn.Linear: w [out][in] is a weight
 * initializer (transposed by a Transpose node, which runtimes fold), b [out] or NULL. The
 * intermediate values are "<y>.weights_t" and "<y>.matmul". */
void onnx_linear(OnnxGraph *g, const char *x, const char *w, const char *b, const char *y);

/* The value an activation reads: y itself for linear (which adds no node), else
 * "<y>.pre". */
void onnx_activation_input(char x[ONNX_NAME_MAX], ActivationKind a, const char *y);
/* y = a(x) from standard operators (nothing for linear). */
void onnx_activation(OnnxGraph *g, ActivationKind a, const char *x, const char *y);

/* graph = the whole GraphProto: name, the nodes and initializers, the input "input" and the
 * outputs declared by onnx_graph_add_output (none: the last layer's output) as graph outputs, with
 * batch axis "N" when batch is 0, else batch (in a sequence net the token axis is fixed at T); a
 * part's declared inputs and outputs instead.
 * Returns CDL_ERUNTIME when memory ran out while building. */
int onnx_graph_finish(const OnnxGraph *g, const char *name, int batch, PbBuf *graph, Error *e);

#endif
