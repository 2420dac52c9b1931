/* ONNX graph builder: GraphProto nodes, initializers and value bookkeeping (see onnx_graph.h).
 * Field numbers are those of onnx/onnx.proto (stable since IR version 3). */
#include "core/onnx_graph.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { GRAPH_NODE = 1, GRAPH_NAME = 2, GRAPH_INITIALIZER = 5, GRAPH_INPUT = 11, GRAPH_OUTPUT = 12 };
enum { NODE_INPUT = 1, NODE_OUTPUT = 2, NODE_NAME = 3, NODE_OP_TYPE = 4, NODE_ATTRIBUTE = 5 };
enum { ATTR_NAME = 1, ATTR_F = 2, ATTR_I = 3, ATTR_INTS = 8, ATTR_STRINGS = 9, ATTR_TYPE = 20 };
enum { TENSOR_DIMS = 1, TENSOR_DATA_TYPE = 2, TENSOR_FLOAT_DATA = 4, TENSOR_INT64_DATA = 7 };
enum { TENSOR_NAME = 8 };
enum { VALUE_NAME = 1, VALUE_TYPE = 2, TYPE_TENSOR = 1, TENSOR_TYPE_ELEM = 1 };
enum { TENSOR_TYPE_SHAPE = 2, SHAPE_DIM = 1, DIM_VALUE = 1, DIM_PARAM = 2 };

/* The [net] mean/std normalisation that cdl applies before the first layer, as graph nodes:
 * the graph input stays the image in [0,1] at the net's size, as `cdl predict` reads it. */
static void add_normalization(OnnxGraph *g, const Net *net, const float *in_mean,
                              const float *in_std)
{
    const int c = net->in_shape.c;
    float mean[3], inv_std[3];
    int identity = 1;
    for (int k = 0; in_mean && k < c && k < 3; k++) {
        mean[k] = in_mean[k];
        inv_std[k] = 1.0f / in_std[k];
        identity &= mean[k] == 0.0f && in_std[k] == 1.0f;
    }
    if (identity || c > 3 || net->seq > 0) /* sequence nets take no image normalisation */
        return;
    const int64_t dims[] = {1, c, 1, 1};
    onnx_initializer(g, "input.mean", ONNX_FLOAT, 4, dims, mean);
    onnx_initializer(g, "input.inv_std", ONNX_FLOAT, 4, dims, inv_std);
    const char *sub[] = {"input", "input.mean"}, *mul[] = {"input.centered", "input.inv_std"};
    onnx_node(g, "Sub", 2, sub, "input.centered", 0, NULL);
    onnx_node(g, "Mul", 2, mul, "input.normalized", 0, NULL);
    snprintf(g->input.name, sizeof g->input.name, "input.normalized");
}

int onnx_graph_init(OnnxGraph *g, const Net *net, const float *mean, const float *std, Error *e)
{
    memset(g, 0, sizeof *g);
    pb_init(&g->body);
    g->layers = calloc((size_t)net->n_layers, sizeof *g->layers);
    if (!g->layers)
        return error_set(e, CDL_ERUNTIME, "out of memory");
    g->n_layers = net->n_layers;
    g->io_cap = 2 * net->n_layers + 4;
    g->inputs = calloc((size_t)g->io_cap, sizeof *g->inputs);
    g->outputs = calloc((size_t)g->io_cap, sizeof *g->outputs);
    if (!g->inputs || !g->outputs)
        return error_set(e, CDL_ERUNTIME, "out of memory");
    snprintf(g->input.name, sizeof g->input.name, "input");
    g->input.shape = net->in_shape;
    g->sequence = net->seq > 0;
    const LayerType *first = net->n_layers > 0 ? net->layers[0].type : NULL;
    g->token_ids = first && first->reads_token_ids;
    for (int i = 0; i < net->n_layers; i++) {
        onnx_name(g->layers[i].name, &net->layers[i], NULL);
        g->layers[i].shape = net->layers[i].out_shape;
    }
    add_normalization(g, net, mean, std);
    return CDL_OK;
}

void onnx_graph_free(OnnxGraph *g)
{
    pb_free(&g->body);
    free(g->layers);
    free(g->inputs);
    free(g->outputs);
    g->layers = NULL;
    g->inputs = g->outputs = NULL;
    g->n_layers = 0;
}

void onnx_graph_declare(OnnxGraph *g, const OnnxValue *v, int output)
{
    int *n = output ? &g->n_outputs : &g->n_inputs;
    if (*n == g->io_cap) {
        g->body.failed = 1;
        return;
    }
    (output ? g->outputs : g->inputs)[(*n)++] = *v;
}

void onnx_graph_add_output(OnnxGraph *g, const char *name, int rank, const int64_t *dims)
{
    OnnxValue v = onnx_value_batch(name, ONNX_FLOAT, g->batch);
    v.rank = rank;
    for (int k = 1; k < rank; k++)
        v.dims[k] = dims[k];
    onnx_graph_declare(g, &v, 1);
}

OnnxValue onnx_value_batch(const char *name, int data_type, int batch)
{
    OnnxValue v = {.data_type = data_type, .rank = 1, .dims = {batch}};
    v.dim_names[0] = batch ? NULL : "N";
    snprintf(v.name, sizeof v.name, "%s", name);
    return v;
}

static void put_attr(PbBuf *node, const OnnxAttr *a)
{
    PbBuf m;
    pb_init(&m);
    pb_string(&m, ATTR_NAME, a->name);
    pb_int(&m, ATTR_TYPE, a->type);
    switch (a->type) {
    case ONNX_ATTR_FLOAT:
        pb_float(&m, ATTR_F, a->f);
        break;
    case ONNX_ATTR_INT:
        pb_int(&m, ATTR_I, a->i);
        break;
    case ONNX_ATTR_INTS:
        for (int k = 0; k < a->n_ints; k++)
            pb_int(&m, ATTR_INTS, a->ints[k]);
        break;
    case ONNX_ATTR_STRINGS:
        for (int k = 0; k < a->n_ints; k++)
            pb_string(&m, ATTR_STRINGS, a->strings[k]);
        break;
    }
    pb_message(node, NODE_ATTRIBUTE, &m);
    pb_free(&m);
}

void onnx_node(OnnxGraph *g, const char *op, int n_in, const char *const *in, const char *output,
               int n_attrs, const OnnxAttr *attrs)
{
    PbBuf m;
    pb_init(&m);
    for (int k = 0; k < n_in; k++)
        pb_string(&m, NODE_INPUT, in[k]);
    pb_string(&m, NODE_OUTPUT, output);
    pb_string(&m, NODE_NAME, output);
    pb_string(&m, NODE_OP_TYPE, op);
    for (int k = 0; k < n_attrs; k++)
        put_attr(&m, &attrs[k]);
    pb_message(&g->body, GRAPH_NODE, &m);
    pb_free(&m);
}

void onnx_initializer(OnnxGraph *g, const char *name, int data_type, int n_dims,
                      const int64_t *dims, const void *data)
{
    PbBuf m;
    pb_init(&m);
    size_t count = 1;
    for (int k = 0; k < n_dims; k++) {
        pb_int(&m, TENSOR_DIMS, dims[k]);
        count *= (size_t)dims[k];
    }
    pb_int(&m, TENSOR_DATA_TYPE, data_type);
    pb_string(&m, TENSOR_NAME, name);
    if (data_type == ONNX_FLOAT)
        pb_packed_floats(&m, TENSOR_FLOAT_DATA, data, count);
    else
        pb_packed_ints(&m, TENSOR_INT64_DATA, data, count);
    pb_message(&g->body, GRAPH_INITIALIZER, &m);
    pb_free(&m);
}

void onnx_scalar(OnnxGraph *g, const char *name, float v)
{
    onnx_initializer(g, name, ONNX_FLOAT, 0, NULL, &v);
}

void onnx_int64s(OnnxGraph *g, const char *name, int n, const int64_t *v)
{
    const int64_t dims[] = {n};
    onnx_initializer(g, name, ONNX_INT64, 1, dims, v);
}

void onnx_slice(OnnxGraph *g, const char *x, int64_t axis, int64_t start, int64_t end,
                const char *y)
{
    char bounds[3][ONNX_NAME_MAX + 8];
    const char *const bound_names[] = {"starts", "ends", "axes"};
    const int64_t values[] = {start, end, axis};
    for (int k = 0; k < 3; k++) {
        snprintf(bounds[k], sizeof bounds[k], "%s.%s", y, bound_names[k]);
        onnx_int64s(g, bounds[k], 1, &values[k]);
    }
    onnx_node(g, "Slice", 4, (const char *[]){x, bounds[0], bounds[1], bounds[2]}, y, 0, NULL);
}

void onnx_name(char name[ONNX_NAME_MAX], const Layer *l, const char *suffix)
{
    if (suffix)
        snprintf(name, ONNX_NAME_MAX, "layer%d.%s", l->index, suffix);
    else
        snprintf(name, ONNX_NAME_MAX, "layer%d", l->index);
}

void onnx_param(OnnxGraph *g, const Layer *l, int param, char name[ONNX_NAME_MAX])
{
    const Param *p = &l->params[param];
    onnx_name(name, l, p->name);
    onnx_initializer(g, name, ONNX_FLOAT, p->n_dims, p->dims, p->data);
}

void onnx_param_along(OnnxGraph *g, const Layer *l, int param, int planes, char name[ONNX_NAME_MAX])
{
    const Param *p = &l->params[param];
    if (!planes) {
        onnx_param(g, l, param, name);
        return;
    }
    onnx_name(name, l, p->name);
    const int64_t dims[] = {(int64_t)p->count, 1, 1};
    onnx_initializer(g, name, ONNX_FLOAT, 3, dims, p->data);
}

void onnx_param_name(const Net *net, const Param *p, char name[ONNX_NAME_MAX])
{
    for (int i = 0; i < net->n_layers; i++) {
        const Layer *l = &net->layers[i];
        if (l->n_params > 0 && p >= l->params && p < l->params + l->n_params) {
            onnx_name(name, l, p->name);
            return;
        }
    }
    snprintf(name, ONNX_NAME_MAX, "%s", p->name); /* a net's parameters are its layers' */
}

void onnx_padding(OnnxGraph *g, const char *ids, const char *padded)
{
    char zero[ONNX_NAME_MAX + 8];
    snprintf(zero, sizeof zero, "%s.zero", padded);
    const int64_t value = 0;
    onnx_initializer(g, zero, ONNX_INT64, 0, NULL, &value);
    onnx_node(g, "Less", 2, (const char *[]){ids, zero}, padded, 0, NULL);
}

void onnx_unsqueeze(OnnxGraph *g, const char *x, int n_axes, const int64_t *axes, const char *y)
{
    char axes_name[ONNX_NAME_MAX + 8];
    snprintf(axes_name, sizeof axes_name, "%s.axes", y);
    onnx_int64s(g, axes_name, n_axes, axes);
    onnx_node(g, "Unsqueeze", 2, (const char *[]){x, axes_name}, y, 0, NULL);
}

const OnnxLayer *onnx_input(const OnnxGraph *g, const Layer *l, int k)
{
    return l->inputs[k] < 0 ? &g->input : &g->layers[l->inputs[k]];
}

void onnx_input_nchw(OnnxGraph *g, const Layer *l, int k, char name[ONNX_NAME_MAX])
{
    const OnnxLayer *src = onnx_input(g, l, k);
    if (!src->flat) {
        snprintf(name, ONNX_NAME_MAX, "%s", src->name);
        return;
    }
    char suffix[16], shape_name[ONNX_NAME_MAX];
    snprintf(suffix, sizeof suffix, "in%d", k);
    onnx_name(name, l, suffix);
    snprintf(shape_name, sizeof shape_name, "%s.shape", name);
    /* 0 keeps the batch dimension as it is. */
    const int64_t shape[] = {0, src->shape.c, src->shape.h, src->shape.w};
    const int64_t seq_shape[] = {0, (int64_t)src->shape.c * src->shape.h, src->shape.w};
    if (g->sequence)
        onnx_int64s(g, shape_name, 3, seq_shape);
    else
        onnx_int64s(g, shape_name, 4, shape);
    const char *in[] = {src->name, shape_name};
    onnx_node(g, "Reshape", 2, in, name, 0, NULL);
}

void onnx_input_flat(OnnxGraph *g, const Layer *l, int k, char name[ONNX_NAME_MAX])
{
    const OnnxLayer *src = onnx_input(g, l, k);
    if (src->flat) {
        snprintf(name, ONNX_NAME_MAX, "%s", src->name);
        return;
    }
    char suffix[16];
    snprintf(suffix, sizeof suffix, "in%d", k);
    onnx_name(name, l, suffix);
    const char *in[] = {src->name};
    const OnnxAttr axis = onnx_attr_int("axis", 1);
    onnx_node(g, "Flatten", 1, in, name, 1, &axis);
}

const char *onnx_output(OnnxGraph *g, const Layer *l, int flat)
{
    g->layers[l->index].flat = flat;
    return g->layers[l->index].name;
}

void onnx_permute_channels(OnnxGraph *g, const Layer *l, int rank, const int64_t *split,
                           const int64_t *perm)
{
    const Shape os = l->out_shape;
    char x[ONNX_NAME_MAX], split_value[ONNX_NAME_MAX], moved[ONNX_NAME_MAX];
    char split_shape[ONNX_NAME_MAX + 6], out_shape[ONNX_NAME_MAX + 6];
    onnx_input_nchw(g, l, 0, x);
    const char *out = onnx_output(g, l, 0);
    onnx_name(split_value, l, "split");
    onnx_name(moved, l, "moved");
    snprintf(split_shape, sizeof split_shape, "%s.shape", split_value);
    snprintf(out_shape, sizeof out_shape, "%s.shape", out);
    const int64_t final[] = {0, os.c, os.h, os.w};
    onnx_int64s(g, split_shape, rank, split);
    onnx_int64s(g, out_shape, 4, final);
    onnx_node(g, "Reshape", 2, (const char *[]){x, split_shape}, split_value, 0, NULL);
    const OnnxAttr attr = onnx_attr_ints("perm", perm, rank);
    onnx_node(g, "Transpose", 1, (const char *[]){split_value}, moved, 1, &attr);
    onnx_node(g, "Reshape", 2, (const char *[]){moved, out_shape}, out, 0, NULL);
}

void onnx_linear(OnnxGraph *g, const char *x, const char *w, const char *b, const char *y)
{
    char wt[ONNX_NAME_MAX], product[ONNX_NAME_MAX];
    snprintf(wt, sizeof wt, "%s.weights_t", y);
    snprintf(product, sizeof product, "%s.matmul", y);
    onnx_node(g, "Transpose", 1, (const char *[]){w}, wt, 0, NULL);
    onnx_node(g, "MatMul", 2, (const char *[]){x, wt}, b ? product : y, 0, NULL);
    if (b)
        onnx_node(g, "Add", 2, (const char *[]){product, b}, y, 0, NULL);
}

void onnx_activation_input(char x[ONNX_NAME_MAX], ActivationKind a, const char *y)
{
    snprintf(x, ONNX_NAME_MAX, a == CDL_ACT_LINEAR ? "%s" : "%s.pre", y);
}

/* y = x * op(x), with op one unary operator (or two chained, for mish). */
static void times_x(OnnxGraph *g, const char *x, const char *op1, const char *op2, const char *y)
{
    char t1[ONNX_NAME_MAX], t2[ONNX_NAME_MAX];
    snprintf(t1, sizeof t1, "%s.%s", y, op1);
    onnx_node(g, op1, 1, &x, t1, 0, NULL);
    const char *last = t1;
    if (op2) {
        snprintf(t2, sizeof t2, "%s.%s", y, op2);
        onnx_node(g, op2, 1, (const char *[]){t1}, t2, 0, NULL);
        last = t2;
    }
    onnx_node(g, "Mul", 2, (const char *[]){x, last}, y, 0, NULL);
}

/* y = 0.5 * x * (1 + erf(x / sqrt(2))), the exact GELU (Gelu is an operator only from
 * opset 20). */
static void gelu(OnnxGraph *g, const char *x, const char *y)
{
    char sqrt2[ONNX_NAME_MAX], one[ONNX_NAME_MAX], half[ONNX_NAME_MAX];
    char scaled[ONNX_NAME_MAX], erf[ONNX_NAME_MAX], plus1[ONNX_NAME_MAX], xhalf[ONNX_NAME_MAX];
    snprintf(sqrt2, sizeof sqrt2, "%s.sqrt2", y);
    snprintf(one, sizeof one, "%s.one", y);
    snprintf(half, sizeof half, "%s.half", y);
    snprintf(scaled, sizeof scaled, "%s.scaled", y);
    snprintf(erf, sizeof erf, "%s.erf", y);
    snprintf(plus1, sizeof plus1, "%s.erf_plus_one", y);
    snprintf(xhalf, sizeof xhalf, "%s.half_x", y);
    onnx_scalar(g, sqrt2, (float)M_SQRT2);
    onnx_scalar(g, one, 1.0f);
    onnx_scalar(g, half, 0.5f);
    onnx_node(g, "Div", 2, (const char *[]){x, sqrt2}, scaled, 0, NULL);
    onnx_node(g, "Erf", 1, (const char *[]){scaled}, erf, 0, NULL);
    onnx_node(g, "Add", 2, (const char *[]){erf, one}, plus1, 0, NULL);
    onnx_node(g, "Mul", 2, (const char *[]){x, half}, xhalf, 0, NULL);
    onnx_node(g, "Mul", 2, (const char *[]){xhalf, plus1}, y, 0, NULL);
}

/* y = min(max(x, 0), 6): Clip takes its bounds as inputs since opset 11. */
static void relu6(OnnxGraph *g, const char *x, const char *y)
{
    char lo[ONNX_NAME_MAX], hi[ONNX_NAME_MAX];
    snprintf(lo, sizeof lo, "%s.min", y);
    snprintf(hi, sizeof hi, "%s.max", y);
    onnx_scalar(g, lo, 0.0f);
    onnx_scalar(g, hi, 6.0f);
    onnx_node(g, "Clip", 3, (const char *[]){x, lo, hi}, y, 0, NULL);
}

/* y = HardSigmoid(x) with torch's alpha 1/6 and beta 1/2 (HardSwish is an operator only from
 * opset 14: hardswish is x times it). */
static void hardsigmoid(OnnxGraph *g, const char *x, const char *y)
{
    const OnnxAttr attrs[] = {onnx_attr_float("alpha", 1.0f / 6.0f), onnx_attr_float("beta", 0.5f)};
    onnx_node(g, "HardSigmoid", 1, &x, y, 2, attrs);
}

void onnx_activation(OnnxGraph *g, ActivationKind a, const char *x, const char *y)
{
    const OnnxAttr leaky = onnx_attr_float("alpha", 0.1f), elu = onnx_attr_float("alpha", 1.0f);
    switch (a) {
    case CDL_ACT_LINEAR:
    case CDL_ACT_COUNT:
        break;
    case CDL_ACT_RELU:
        onnx_node(g, "Relu", 1, &x, y, 0, NULL);
        break;
    case CDL_ACT_LEAKY:
        onnx_node(g, "LeakyRelu", 1, &x, y, 1, &leaky);
        break;
    case CDL_ACT_LOGISTIC:
        onnx_node(g, "Sigmoid", 1, &x, y, 0, NULL);
        break;
    case CDL_ACT_TANH:
        onnx_node(g, "Tanh", 1, &x, y, 0, NULL);
        break;
    case CDL_ACT_ELU:
        onnx_node(g, "Elu", 1, &x, y, 1, &elu);
        break;
    case CDL_ACT_RELU6:
        relu6(g, x, y);
        break;
    case CDL_ACT_GELU:
        gelu(g, x, y);
        break;
    case CDL_ACT_SWISH:
        times_x(g, x, "Sigmoid", NULL, y);
        break;
    case CDL_ACT_MISH:
        times_x(g, x, "Softplus", "Tanh", y);
        break;
    case CDL_ACT_HARDSWISH: {
        char t[ONNX_NAME_MAX];
        snprintf(t, sizeof t, "%s.HardSigmoid", y);
        hardsigmoid(g, x, t);
        onnx_node(g, "Mul", 2, (const char *[]){x, t}, y, 0, NULL);
        break;
    }
    case CDL_ACT_HARDSIGMOID:
        hardsigmoid(g, x, y);
        break;
    }
}

/* A ValueInfoProto of v. */
static void put_declared(PbBuf *graph, int field, const OnnxValue *v)
{
    PbBuf shape, tensor, type, info;
    pb_init(&shape);
    pb_init(&tensor);
    pb_init(&type);
    pb_init(&info);
    for (int k = 0; k < v->rank; k++) {
        PbBuf dim;
        pb_init(&dim);
        if (v->dim_names[k])
            pb_string(&dim, DIM_PARAM, v->dim_names[k]);
        else
            pb_int(&dim, DIM_VALUE, v->dims[k]);
        pb_message(&shape, SHAPE_DIM, &dim);
        pb_free(&dim);
    }
    pb_int(&tensor, TENSOR_TYPE_ELEM, v->data_type);
    pb_message(&tensor, TENSOR_TYPE_SHAPE, &shape);
    pb_message(&type, TYPE_TENSOR, &tensor);
    pb_string(&info, VALUE_NAME, v->name);
    pb_message(&info, VALUE_TYPE, &type);
    pb_message(graph, field, &info);
    pb_free(&shape);
    pb_free(&tensor);
    pb_free(&type);
    pb_free(&info);
}

/* A ValueInfoProto: a float tensor named name of rank 2 ([batch][c*h*w], flat), 3 (a sequence
 * net's [batch][c*h][w]) or 4, or the int64 token ids [batch][T] of a sequence net. */
static void put_value_info(PbBuf *graph, int field, const OnnxLayer *v, int batch, int sequence,
                           int token_ids)
{
    const int64_t dims[] = {batch, v->shape.c, v->shape.h, v->shape.w};
    const int64_t flat_dims[] = {batch, (int64_t)shape_size(v->shape)};
    const int64_t seq_dims[] = {batch, (int64_t)v->shape.c * v->shape.h, v->shape.w};
    const int64_t *d = v->flat || token_ids ? flat_dims : sequence ? seq_dims : dims;
    OnnxValue value = onnx_value_batch(v->name, token_ids ? ONNX_INT64 : ONNX_FLOAT, batch);
    value.rank = v->flat || token_ids ? 2 : sequence ? 3 : 4;
    memcpy(value.dims + 1, d + 1, (size_t)(value.rank - 1) * sizeof *d);
    put_declared(graph, field, &value);
}

int onnx_graph_finish(const OnnxGraph *g, const char *name, int batch, PbBuf *graph, Error *e)
{
    pb_string(graph, GRAPH_NAME, name);
    /* body already holds tagged node and initializer fields: it is spliced in as is. */
    if (g->body.failed)
        graph->failed = 1;
    pb_raw(graph, g->body.data, g->body.len);
    if (g->part != ONNX_WHOLE_NET) {
        for (int k = 0; k < g->n_inputs; k++)
            put_declared(graph, GRAPH_INPUT, &g->inputs[k]);
    } else {
        OnnxLayer input = g->input; /* layers may read the normalised input; the graph takes it */
        snprintf(input.name, sizeof input.name, "input");
        put_value_info(graph, GRAPH_INPUT, &input, batch, g->sequence, g->token_ids);
    }
    for (int k = 0; k < g->n_outputs; k++)
        put_declared(graph, GRAPH_OUTPUT, &g->outputs[k]);
    if (g->part == ONNX_WHOLE_NET && !g->n_outputs)
        put_value_info(graph, GRAPH_OUTPUT, &g->layers[g->n_layers - 1], batch, g->sequence, 0);
    if (graph->failed)
        return error_set(e, CDL_ERUNTIME, "out of memory building the ONNX graph");
    return CDL_OK;
}
