/* `cdl import`: ONNX graph to cfg text and parameters (see onnx_import.h).
 *
 * Two passes: the nodes are walked once into ImportLayers (structured, so that a later
 * BatchNormalization or activation can still fold into the layer before it), then the layers
 * are written as cfg text, the net is built from it by cdl's own parser and every parameter
 * is copied in, its size checked against the Param the layer declared. */
#include "model/onnx_import.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/onnx_graph.h"
#include "util/utf8.h"

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
    K_SOFTMAX
} ImportKind;

static const char *const kind_section[] = {"convolutional", "connected", "batchnorm", "maxpool",
                                           "avgpool",       "route",     "shortcut",  "softmax"};

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
    int filters, size, stride, padding, groups, batch_normalize, outputs;
    ActivationKind activation;
    int refs[LAYER_MAX_INPUTS]; /* route: the layers read; shortcut: refs[0] = from */
    int n_refs;
    int open_bias;    /* a MatMul's [connected]: an Add of a constant may still give biases */
    const char *head; /* the ONNX value the layer last wrote: folds read only this one */
    ImportParam params[IMPORT_MAX_PARAMS];
    int n_params;
} ImportLayer;

/* What an ONNX value is: a layer's output (-1: the net input) or a constant tensor. */
typedef struct ImportValue {
    const char *name;
    int layer;
    const OnnxTensor *constant;
    int flat;
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
    int normalised; /* 1: Sub seen, 2: Mul/Div seen too */
    Error *e;
} Importer;

/* ---- messages ---- */

static int refuse(const Importer *im, const OnnxNode *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int refuse(const Importer *im, const OnnxNode *n, const char *fmt, ...)
{
    char why[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    return error_set(im->e, CDL_EUSAGE, "node '%s' (%s): %s", n->name, n->op_type, why);
}

static int out_of_memory(const Importer *im)
{
    return error_set(im->e, CDL_ERUNTIME, "out of memory importing the ONNX model");
}

/* "[1,2,3]" */
static const char *ints_text(const int64_t *v, int n, char *buf, size_t size)
{
    size_t used = (size_t)snprintf(buf, size, "[");
    for (int k = 0; k < n && used < size; k++)
        used += (size_t)snprintf(buf + used, size - used, "%s%lld", k ? "," : "", (long long)v[k]);
    if (used < size)
        snprintf(buf + used, size - used, "]");
    return buf;
}

/* ---- values ---- */

static ImportValue *find_value(const Importer *im, const char *name)
{
    for (int k = im->n_values - 1; k >= 0; k--)
        if (!strcmp(im->values[k].name, name))
            return &im->values[k];
    return NULL;
}

static int bind(Importer *im, const char *name, int layer, const OnnxTensor *constant, int flat)
{
    if (im->n_values == im->cap_values) {
        const int cap = im->cap_values ? 2 * im->cap_values : 64;
        ImportValue *grown = realloc(im->values, (size_t)cap * sizeof *grown);
        if (!grown)
            return out_of_memory(im);
        im->values = grown;
        im->cap_values = cap;
    }
    im->values[im->n_values++] = (ImportValue){name, layer, constant, flat};
    return CDL_OK;
}

/* The shape and layout of the layer (or net input, -1) a value holds. */
static Shape layer_shape(const Importer *im, int layer)
{
    return layer < 0 ? im->in_shape : im->layers[layer].out;
}

/* How many node inputs and graph outputs read name. */
static int readers(const Importer *im, const char *name)
{
    int n = 0;
    for (int k = 0; k < im->m->n_nodes; k++)
        for (int i = 0; i < im->m->nodes[k].n_inputs; i++)
            n += !strcmp(im->m->nodes[k].inputs[i], name);
    for (int k = 0; k < im->m->n_outputs; k++)
        n += !strcmp(im->m->outputs[k].name, name);
    return n;
}

/* *v = the value of input k of node n, which must be a layer's (or the net input). */
static int input_layer(Importer *im, const OnnxNode *n, int k, const ImportValue **v)
{
    if (k >= n->n_inputs || !n->inputs[k][0])
        return refuse(im, n, "input %d is missing", k);
    *v = find_value(im, n->inputs[k]);
    if (!*v)
        return refuse(im, n, "input '%s' is not produced by any earlier node", n->inputs[k]);
    if ((*v)->constant)
        return refuse(im, n, "input '%s' is a constant: cdl layers read computed values",
                      n->inputs[k]);
    return CDL_OK;
}

/* *t = input k of node n as a constant (NULL when the input is absent and optional). */
static int input_constant(Importer *im, const OnnxNode *n, int k, int optional,
                          const OnnxTensor **t)
{
    *t = NULL;
    if (k >= n->n_inputs || !n->inputs[k][0])
        return optional ? CDL_OK : refuse(im, n, "input %d is missing", k);
    const ImportValue *v = find_value(im, n->inputs[k]);
    if (!v || !v->constant)
        return refuse(im, n, "input '%s' must be a constant (an initializer or a Constant node)",
                      n->inputs[k]);
    if (v->constant->data_type != ONNX_READ_FLOAT && optional != 2)
        return refuse(im, n, "input '%s' must be float32", n->inputs[k]);
    *t = v->constant;
    return CDL_OK;
}

/* ---- attributes ---- */

/* Refuses any attribute of n not named in allowed (NULL-terminated). */
static int check_attrs(Importer *im, const OnnxNode *n, const char *const *allowed)
{
    for (int k = 0; k < n->n_attrs; k++) {
        int known = 0;
        for (const char *const *a = allowed; *a && !known; a++)
            known = !strcmp(*a, n->attrs[k].name);
        if (!known)
            return refuse(im, n, "attribute '%s' is not supported", n->attrs[k].name);
    }
    return CDL_OK;
}

static int64_t attr_int(const OnnxNode *n, const char *name, int64_t def)
{
    const OnnxAttribute *a = onnx_node_attr(n, name);
    return a ? a->i : def;
}

static float attr_float(const OnnxNode *n, const char *name, float def)
{
    const OnnxAttribute *a = onnx_node_attr(n, name);
    return a ? a->f : def;
}

/* The INTS attribute name as n values (def for each when absent); refuses another count. */
static int attr_ints(Importer *im, const OnnxNode *n, const char *name, int count, int64_t def,
                     int64_t *out)
{
    const OnnxAttribute *a = onnx_node_attr(n, name);
    for (int k = 0; k < count; k++)
        out[k] = a ? 0 : def;
    if (!a)
        return CDL_OK;
    if (a->n_ints != count) {
        char buf[128];
        return refuse(im, n, "attribute %s=%s: expected %d values (2-D only)", name,
                      ints_text(a->ints, a->n_ints, buf, sizeof buf), count);
    }
    memcpy(out, a->ints, (size_t)count * sizeof *out);
    return CDL_OK;
}

/* auto_pad must be NOTSET (explicit pads). */
static int check_auto_pad(Importer *im, const OnnxNode *n)
{
    const OnnxAttribute *a = onnx_node_attr(n, "auto_pad");
    if (a && a->s && strcmp(a->s, "NOTSET"))
        return refuse(im, n, "attribute auto_pad=%s is not supported (explicit pads only)", a->s);
    return CDL_OK;
}

/* The window of a Conv or pooling node: square kernel ksize (kernel_dims when the node has no
 * kernel_shape, a Conv's weight shape), equal strides, pads (before, after), dilations 1. */
static int window_attrs(Importer *im, const OnnxNode *n, const int64_t *kernel_dims, int *ksize,
                        int *stride, int64_t pads[4])
{
    int64_t kernel[2], strides[2], dil[2];
    char buf[128];
    int st = check_auto_pad(im, n);
    st = st ? st : attr_ints(im, n, "kernel_shape", 2, -1, kernel);
    st = st ? st : attr_ints(im, n, "strides", 2, 1, strides);
    st = st ? st : attr_ints(im, n, "pads", 4, 0, pads);
    st = st ? st : attr_ints(im, n, "dilations", 2, 1, dil);
    if (st)
        return st;
    if (kernel[0] < 0) {
        if (!kernel_dims)
            return refuse(im, n, "attribute kernel_shape is missing");
        kernel[0] = kernel_dims[0], kernel[1] = kernel_dims[1];
    }
    if (kernel[0] != kernel[1] || kernel[0] < 1)
        return refuse(im, n, "attribute kernel_shape=%s: cdl windows are square",
                      ints_text(kernel, 2, buf, sizeof buf));
    if (strides[0] != strides[1] || strides[0] < 1)
        return refuse(im, n, "attribute strides=%s: cdl strides are equal in both directions",
                      ints_text(strides, 2, buf, sizeof buf));
    if (dil[0] != 1 || dil[1] != 1)
        return refuse(im, n, "attribute dilations=%s: cdl has no dilated windows",
                      ints_text(dil, 2, buf, sizeof buf));
    if (pads[0] != pads[1] || pads[2] != pads[3] || pads[0] < 0 || pads[2] < 0)
        return refuse(im, n, "attribute pads=%s: cdl pads rows and columns alike",
                      ints_text(pads, 4, buf, sizeof buf));
    if (kernel[0] > 4096 || strides[0] > 4096 || pads[0] > 4096 || pads[2] > 4096)
        return refuse(im, n, "window of %lld with stride %lld and pads %lld, %lld is too large",
                      (long long)kernel[0], (long long)strides[0], (long long)pads[0],
                      (long long)pads[2]);
    *ksize = (int)kernel[0];
    *stride = (int)strides[0];
    return CDL_OK;
}

/* ---- layers ---- */

static ImportLayer *add_layer(Importer *im, ImportKind kind, const OnnxNode *n)
{
    if (im->n_layers == im->cap_layers) {
        const int cap = im->cap_layers ? 2 * im->cap_layers : 64;
        ImportLayer *grown = realloc(im->layers, (size_t)cap * sizeof *grown);
        if (!grown)
            return out_of_memory(im), NULL;
        im->layers = grown;
        im->cap_layers = cap;
    }
    ImportLayer *l = &im->layers[im->n_layers++];
    memset(l, 0, sizeof *l);
    l->kind = kind;
    l->node = n;
    l->activation = CDL_ACT_LINEAR;
    l->head = n->n_outputs ? n->outputs[0] : "";
    return l;
}

/* Adds parameter name to l with count values: src's own (add_param), for values the import
 * does not change, or an owned copy of src (zeros for NULL) that it may change. */
static void add_param(ImportLayer *l, const char *name, const float *src, size_t count)
{
    l->params[l->n_params++] = (ImportParam){name, src, NULL, count};
}

static float *add_owned_param(Importer *im, ImportLayer *l, const char *name, const float *src,
                              size_t count)
{
    float *data = calloc(count ? count : 1, sizeof *data);
    if (!data)
        return out_of_memory(im), NULL;
    if (src)
        memcpy(data, src, count * sizeof *data);
    l->params[l->n_params++] = (ImportParam){name, data, data, count};
    return data;
}

static ImportParam *find_param(ImportLayer *l, const char *name)
{
    for (int k = 0; k < l->n_params; k++)
        if (!strcmp(l->params[k].name, name))
            return &l->params[k];
    return NULL;
}

/* The layer a node's single-tensor input is read from, made the last one: when the value is
 * not the last layer's output, a [route] to it is added. *v is that input's value. */
static int read_input(Importer *im, const OnnxNode *n, int k, const ImportValue **v, int *layer)
{
    int st = input_layer(im, n, k, v);
    if (st)
        return st;
    *layer = (*v)->layer;
    if (*layer == im->n_layers - 1)
        return CDL_OK;
    if (*layer < 0)
        return refuse(im, n, "reads the graph input after other layers: cdl layers cannot");
    ImportLayer *r = add_layer(im, K_ROUTE, n);
    if (!r)
        return CDL_ERUNTIME;
    r->refs[0] = *layer;
    r->n_refs = 1;
    r->out = layer_shape(im, *layer);
    r->flat = (*v)->flat;
    r->head = "";
    *layer = im->n_layers - 1;
    return CDL_OK;
}

/* Binds every output of n (one is expected) to layer. */
static int bind_output(Importer *im, const OnnxNode *n, int layer, int flat)
{
    if (n->n_outputs < 1)
        return refuse(im, n, "has no output");
    return bind(im, n->outputs[0], layer, NULL, flat);
}

static int import_conv(Importer *im, const OnnxNode *n)
{
    static const char *const allowed[] = {"auto_pad", "dilations", "group", "kernel_shape",
                                          "pads",     "strides",   NULL};
    const ImportValue *x;
    const OnnxTensor *w, *b;
    int layer, size, stride;
    int64_t pads[4];
    int st = check_attrs(im, n, allowed);
    st = st ? st : input_constant(im, n, 1, 0, &w);
    st = st ? st : input_constant(im, n, 2, 1, &b);
    if (st)
        return st;
    if (w->n_dims != 4)
        return refuse(im, n, "weight '%s' has %d dims: cdl convolutions are 2-D", w->name,
                      w->n_dims);
    st = window_attrs(im, n, w->dims + 2, &size, &stride, pads);
    st = st ? st : read_input(im, n, 0, &x, &layer);
    if (st)
        return st;
    const Shape in = layer_shape(im, layer);
    const int64_t groups = attr_int(n, "group", 1);
    const int64_t filters = w->dims[0];
    if (x->flat)
        return refuse(im, n, "its input is a vector, not a feature map");
    if (groups < 1 || in.c % groups || filters % groups || w->dims[1] * groups != in.c)
        return refuse(im, n,
                      "attribute group=%lld with weight [%lld,%lld,...] does not fit %d "
                      "input channels",
                      (long long)groups, (long long)filters, (long long)w->dims[1], in.c);
    if (w->dims[2] != size || w->dims[3] != size)
        return refuse(im, n, "kernel_shape does not match the weight's %lldx%lld",
                      (long long)w->dims[2], (long long)w->dims[3]);
    if (pads[0] != pads[2])
        return refuse(im, n,
                      "attribute pads=[%lld,%lld,%lld,%lld]: cdl convolutions pad both "
                      "sides alike",
                      (long long)pads[0], (long long)pads[1], (long long)pads[2],
                      (long long)pads[3]);
    if (b && (int64_t)b->count != filters)
        return refuse(im, n, "bias '%s' has %zu values for %lld filters", b->name, b->count,
                      (long long)filters);
    const int out_h = (in.h + 2 * (int)pads[0] - size) / stride + 1;
    const int out_w = (in.w + 2 * (int)pads[0] - size) / stride + 1;
    if (in.h + 2 * pads[0] < size || in.w + 2 * pads[0] < size)
        return refuse(im, n, "the window is larger than its %dx%d input", in.h, in.w);
    ImportLayer *l = add_layer(im, K_CONV, n);
    if (!l)
        return CDL_ERUNTIME;
    l->filters = (int)filters;
    l->size = size;
    l->stride = stride;
    l->padding = (int)pads[0];
    l->groups = (int)groups;
    l->out = (Shape){(int)filters, out_h, out_w};
    add_param(l, "weights", w->floats, w->count);
    if (!add_owned_param(im, l, "biases", b ? b->floats : NULL, (size_t)filters))
        return CDL_ERUNTIME;
    return bind_output(im, n, im->n_layers - 1, 0);
}

/* [connected] reading layer with weights [outputs][inputs] (transposed from w when
 * transpose), biases from b (NULL: zeros). */
static int add_connected(Importer *im, const OnnxNode *n, int layer, const OnnxTensor *w,
                         int transpose, const OnnxTensor *b)
{
    const int64_t inputs = transpose ? w->dims[0] : w->dims[1];
    const int64_t outputs = transpose ? w->dims[1] : w->dims[0];
    const Shape in = layer_shape(im, layer);
    if (inputs != (int64_t)shape_size(in))
        return refuse(im, n, "weight '%s' [%lld,%lld] expects %lld inputs, its input has %zu",
                      w->name, (long long)w->dims[0], (long long)w->dims[1], (long long)inputs,
                      shape_size(in));
    if (b && (int64_t)b->count != outputs)
        return refuse(im, n, "bias '%s' has %zu values for %lld outputs", b->name, b->count,
                      (long long)outputs);
    ImportLayer *l = add_layer(im, K_CONNECTED, n);
    if (!l)
        return CDL_ERUNTIME;
    l->outputs = (int)outputs;
    l->out = (Shape){(int)outputs, 1, 1};
    l->flat = 1;
    float *wd = NULL;
    if (transpose && !(wd = add_owned_param(im, l, "weights", NULL, w->count)))
        return CDL_ERUNTIME;
    if (!transpose)
        add_param(l, "weights", w->floats, w->count);
    if (!add_owned_param(im, l, "biases", b ? b->floats : NULL, (size_t)outputs))
        return CDL_ERUNTIME;
    if (transpose)
        for (int64_t o = 0; o < outputs; o++)
            for (int64_t i = 0; i < inputs; i++)
                wd[o * inputs + i] = w->floats[i * outputs + o];
    return bind_output(im, n, im->n_layers - 1, 1);
}

static int import_gemm(Importer *im, const OnnxNode *n)
{
    static const char *const allowed[] = {"alpha", "beta", "transA", "transB", NULL};
    const ImportValue *x;
    const OnnxTensor *w, *b;
    int layer;
    int st = check_attrs(im, n, allowed);
    st = st ? st : input_constant(im, n, 1, 0, &w);
    st = st ? st : input_constant(im, n, 2, 1, &b);
    if (st)
        return st;
    if (attr_int(n, "transA", 0))
        return refuse(im, n, "attribute transA=%lld is not supported",
                      (long long)attr_int(n, "transA", 0));
    if (attr_float(n, "alpha", 1.0f) != 1.0f)
        return refuse(im, n, "attribute alpha=%g is not supported (1 only)",
                      attr_float(n, "alpha", 1.0f));
    if (b && attr_float(n, "beta", 1.0f) != 1.0f)
        return refuse(im, n, "attribute beta=%g is not supported (1 only)",
                      attr_float(n, "beta", 1.0f));
    if (w->n_dims != 2)
        return refuse(im, n, "weight '%s' has %d dims, expected 2", w->name, w->n_dims);
    st = read_input(im, n, 0, &x, &layer);
    return st ? st : add_connected(im, n, layer, w, !attr_int(n, "transB", 0), b);
}

static int import_matmul(Importer *im, const OnnxNode *n)
{
    const ImportValue *x;
    const OnnxTensor *w;
    int layer;
    int st = check_attrs(im, n, (const char *const[]){NULL});
    st = st ? st : input_constant(im, n, 1, 0, &w);
    if (st)
        return st;
    if (w->n_dims != 2)
        return refuse(im, n, "weight '%s' has %d dims, expected 2", w->name, w->n_dims);
    st = read_input(im, n, 0, &x, &layer);
    if (!st && !x->flat && layer_shape(im, layer).h * layer_shape(im, layer).w != 1)
        return refuse(im, n, "multiplies a feature map, not a vector");
    st = st ? st : add_connected(im, n, layer, w, 1, NULL);
    if (!st)
        im->layers[im->n_layers - 1].open_bias = 1;
    return st;
}

/* The layer a folding node may change: the producer of its input 0, when the node is the
 * only reader of that value and it is the value the layer last wrote. NULL otherwise. */
static ImportLayer *fold_target(Importer *im, const ImportValue *x)
{
    if (x->layer < 0 || readers(im, x->name) != 1)
        return NULL;
    ImportLayer *l = &im->layers[x->layer];
    return strcmp(l->head, x->name) ? NULL : l;
}

static int import_add(Importer *im, const OnnxNode *n)
{
    if (n->n_inputs != 2)
        return refuse(im, n, "expected 2 inputs");
    int st = check_attrs(im, n, (const char *const[]){NULL});
    if (st)
        return st;
    const ImportValue *a = find_value(im, n->inputs[0]), *b = find_value(im, n->inputs[1]);
    if (!a || !b)
        return refuse(im, n, "input '%s' is not produced by any earlier node",
                      n->inputs[a ? 1 : 0]);
    if (a->constant || b->constant) { /* MatMul + Add: the connected layer's biases */
        const ImportValue *x = a->constant ? b : a;
        const OnnxTensor *c = a->constant ? a->constant : b->constant;
        ImportLayer *l = x->constant ? NULL : fold_target(im, x);
        if (!l || !l->open_bias)
            return refuse(im, n, "adds a constant to a value that is not a MatMul's output");
        if (c->data_type != ONNX_READ_FLOAT || (int)c->count != l->outputs)
            return refuse(im, n, "constant '%s' has %zu values for %d outputs", c->name, c->count,
                          l->outputs);
        memcpy(find_param(l, "biases")->owned, c->floats, c->count * sizeof(float));
        l->open_bias = 0;
        l->head = n->outputs[0];
        return bind_output(im, n, x->layer, 1);
    }
    const Shape sa = layer_shape(im, a->layer), sb = layer_shape(im, b->layer);
    if (sa.c != sb.c || sa.h != sb.h || sa.w != sb.w)
        return refuse(im, n, "adds %dx%dx%d to %dx%dx%d: cdl shortcuts add equal shapes here", sa.c,
                      sa.h, sa.w, sb.c, sb.h, sb.w);
    const int last = im->n_layers - 1;
    const ImportValue *prev = b->layer == last ? b : a, *from = prev == a ? b : a;
    int layer;
    st = read_input(im, n, prev == a ? 0 : 1, &prev, &layer);
    if (st)
        return st;
    if (from->layer < 0)
        return refuse(im, n, "adds the graph input: a cdl [shortcut] reads a layer");
    ImportLayer *l = add_layer(im, K_SHORTCUT, n);
    if (!l)
        return CDL_ERUNTIME;
    l->refs[0] = from->layer;
    l->n_refs = 1;
    l->out = sa;
    l->flat = a->flat && b->flat;
    return bind_output(im, n, im->n_layers - 1, l->flat);
}

static int import_concat(Importer *im, const OnnxNode *n)
{
    int st = check_attrs(im, n, (const char *const[]){"axis", NULL});
    if (st)
        return st;
    const int64_t axis = attr_int(n, "axis", 1);
    if (axis != 1)
        return refuse(im, n, "attribute axis=%lld: cdl routes concatenate channels (axis 1)",
                      (long long)axis);
    if (n->n_inputs < 1 || n->n_inputs > LAYER_MAX_INPUTS)
        return refuse(im, n, "%d inputs: a [route] takes 1 to %d", n->n_inputs, LAYER_MAX_INPUTS);
    int refs[LAYER_MAX_INPUTS], c = 0;
    Shape first = {0, 0, 0};
    for (int k = 0; k < n->n_inputs; k++) {
        const ImportValue *v;
        st = input_layer(im, n, k, &v);
        if (st)
            return st;
        if (v->layer < 0 || v->flat)
            return refuse(im, n, "input '%s' is %s: a [route] joins layers' feature maps", v->name,
                          v->layer < 0 ? "the graph input" : "a vector");
        const Shape s = layer_shape(im, v->layer);
        if (k && (s.h != first.h || s.w != first.w))
            return refuse(im, n, "joins %dx%d and %dx%d maps", first.h, first.w, s.h, s.w);
        first = k ? first : s;
        refs[k] = v->layer;
        c += s.c;
    }
    ImportLayer *l = add_layer(im, K_ROUTE, n);
    if (!l)
        return CDL_ERUNTIME;
    memcpy(l->refs, refs, sizeof refs);
    l->n_refs = n->n_inputs;
    l->out = (Shape){c, first.h, first.w};
    return bind_output(im, n, im->n_layers - 1, 0);
}

/* Relu, LeakyRelu, Sigmoid, Tanh, Elu, Clip: the activation of the layer before. */
static int import_activation(Importer *im, const OnnxNode *n, ActivationKind a)
{
    const ImportValue *x;
    int st = input_layer(im, n, 0, &x);
    if (st)
        return st;
    ImportLayer *l = fold_target(im, x);
    if (!l || (l->kind != K_CONV && l->kind != K_CONNECTED && l->kind != K_SHORTCUT) ||
        l->activation != CDL_ACT_LINEAR)
        return refuse(im, n,
                      "cdl has no standalone activation: it must follow a Conv, Gemm or "
                      "Add (as that node's only reader)%s%s",
                      x->layer >= 0 ? ", not " : "",
                      x->layer >= 0 ? im->layers[x->layer].node->op_type : "");
    l->activation = a;
    l->open_bias = 0;
    l->head = n->outputs[0];
    return bind_output(im, n, x->layer, x->flat);
}

static int import_clip(Importer *im, const OnnxNode *n)
{
    float lo = attr_float(n, "min", -INFINITY), hi = attr_float(n, "max", INFINITY);
    int st = check_attrs(im, n, (const char *const[]){"min", "max", NULL});
    for (int k = 1; !st && k < 3; k++) {
        const OnnxTensor *t;
        st = input_constant(im, n, k, 1, &t);
        if (!st && t && t->count != 1)
            return refuse(im, n, "bound '%s' is not a scalar", t->name);
        if (!st && t)
            *(k == 1 ? &lo : &hi) = t->floats[0];
    }
    if (st)
        return st;
    if (lo == 0.0f && hi == 6.0f)
        return import_activation(im, n, CDL_ACT_RELU6);
    if (lo == 0.0f && hi == INFINITY)
        return import_activation(im, n, CDL_ACT_RELU);
    return refuse(im, n, "bounds [%g, %g]: cdl has relu6 (0, 6) and relu (0, inf)", lo, hi);
}

static int import_batchnorm(Importer *im, const OnnxNode *n)
{
    static const char *const allowed[] = {"epsilon",       "momentum", "spatial",
                                          "training_mode", "is_test",  NULL};
    const ImportValue *x;
    const OnnxTensor *t[4];
    int st = check_attrs(im, n, allowed);
    for (int k = 0; !st && k < 4; k++)
        st = input_constant(im, n, k + 1, 0, &t[k]);
    st = st ? st : input_layer(im, n, 0, &x);
    if (st)
        return st;
    if (attr_int(n, "training_mode", 0))
        return refuse(im, n, "attribute training_mode=1: only inference graphs import");
    if (attr_int(n, "spatial", 1) != 1)
        return refuse(im, n, "attribute spatial=0 is not supported");
    if (n->n_outputs > 1)
        return refuse(im, n, "has %d outputs (running statistics): only inference graphs import",
                      n->n_outputs);
    const float eps = attr_float(n, "epsilon", 1e-5f);
    if (im->have_bn_eps && eps != im->bn_eps)
        return refuse(im, n,
                      "attribute epsilon=%g: cdl takes one epsilon per net and an "
                      "earlier node has %g",
                      eps, im->bn_eps);
    im->bn_eps = eps;
    im->have_bn_eps = 1;
    const Shape in = layer_shape(im, x->layer);
    for (int k = 0; k < 4; k++)
        if ((int)t[k]->count != in.c)
            return refuse(im, n, "'%s' has %zu values for %d channels", t[k]->name, t[k]->count,
                          in.c);
    ImportLayer *l = fold_target(im, x);
    if (l && (l->kind == K_CONV || l->kind == K_CONNECTED) && !l->batch_normalize &&
        l->activation == CDL_ACT_LINEAR) {
        /* BN(conv + bias) = scale (conv - (mean - bias)) / sqrt(var + eps) + shift. */
        ImportParam *bias = find_param(l, "biases");
        float *mean = add_owned_param(im, l, "rolling_mean", t[2]->floats, t[2]->count);
        if (!mean)
            return CDL_ERUNTIME;
        for (size_t c = 0; c < t[2]->count; c++)
            mean[c] -= bias->owned[c];
        memcpy(bias->owned, t[1]->floats, t[1]->count * sizeof(float));
        add_param(l, "scales", t[0]->floats, t[0]->count);
        add_param(l, "rolling_variance", t[3]->floats, t[3]->count);
        l->batch_normalize = 1;
        l->open_bias = 0;
        l->head = n->outputs[0];
        return bind_output(im, n, x->layer, x->flat);
    }
    int layer;
    st = read_input(im, n, 0, &x, &layer);
    if (st)
        return st;
    l = add_layer(im, K_BATCHNORM, n);
    if (!l)
        return CDL_ERUNTIME;
    l->out = in;
    l->flat = x->flat;
    const char *names[] = {"scales", "biases", "rolling_mean", "rolling_variance"};
    for (int k = 0; k < 4; k++)
        add_param(l, names[k], t[k]->floats, t[k]->count);
    return bind_output(im, n, im->n_layers - 1, x->flat);
}

/* The padding to add after the input so that cdl's rounded-down output size is ceil_mode's
 * (0 without ceil_mode): ceil((h + pads - size) / stride) + 1 windows, less a last one that
 * would start in the padding after the input, as onnxruntime and PyTorch count them. cdl's
 * windows ignore padded cells, as ONNX MaxPool does. */
static int ceil_mode_padding(const OnnxNode *n, int h, int size, int stride, const int64_t pads[4])
{
    if (!attr_int(n, "ceil_mode", 0))
        return 0;
    const int span = h + (int)(pads[0] + pads[2]) - size;
    int out = (span + stride - 1) / stride + 1;
    if ((out - 1) * stride >= h + pads[0])
        out--;
    const int floor_out = span / stride + 1;
    return out > floor_out ? (out - 1) * stride - span : 0;
}

static int import_maxpool(Importer *im, const OnnxNode *n)
{
    static const char *const allowed[] = {"auto_pad", "ceil_mode",     "dilations", "kernel_shape",
                                          "pads",     "storage_order", "strides",   NULL};
    const ImportValue *x;
    int layer, size, stride;
    int64_t pads[4];
    int st = check_attrs(im, n, allowed);
    st = st ? st : window_attrs(im, n, NULL, &size, &stride, pads);
    if (st)
        return st;
    if (n->n_outputs > 1)
        return refuse(im, n, "output Indices is not supported");
    if (attr_int(n, "storage_order", 0))
        return refuse(im, n, "attribute storage_order=1 is not supported");
    st = read_input(im, n, 0, &x, &layer);
    if (st)
        return st;
    const Shape in = layer_shape(im, layer);
    if (x->flat || in.h + pads[0] + pads[2] < size || in.w + pads[0] + pads[2] < size)
        return refuse(im, n, "the window is larger than its input");
    const int extra_h = ceil_mode_padding(n, in.h, size, stride, pads);
    const int extra_w = ceil_mode_padding(n, in.w, size, stride, pads);
    if (extra_h != extra_w)
        return refuse(im, n,
                      "attribute ceil_mode=1 on a %dx%d input: cdl pads rows and columns "
                      "alike",
                      in.h, in.w);
    const int before = (int)pads[0], after = (int)pads[2] + extra_h, padding = before + after;
    if (after != before && after != before + 1)
        return refuse(im, n,
                      "attribute pads=[%lld,%lld,%lld,%lld]%s: cdl pads as many after as "
                      "before, or one more",
                      (long long)pads[0], (long long)pads[1], (long long)pads[2],
                      (long long)pads[3], extra_h ? " with ceil_mode=1" : "");
    if (padding > 2 * (size - 1))
        return refuse(im, n, "pads of %d exceed the window's %d", padding, size - 1);
    const int out_h = (in.h + padding - size) / stride + 1;
    const int out_w = (in.w + padding - size) / stride + 1;
    ImportLayer *l = add_layer(im, K_MAXPOOL, n);
    if (!l)
        return CDL_ERUNTIME;
    l->size = size;
    l->stride = stride;
    l->padding = padding;
    l->out = (Shape){in.c, out_h, out_w};
    return bind_output(im, n, im->n_layers - 1, 0);
}

/* GlobalAveragePool, or AveragePool over the whole input or of 1x1 windows (an identity). */
static int import_avgpool(Importer *im, const OnnxNode *n, int global)
{
    static const char *const allowed[] = {
        "auto_pad", "ceil_mode", "count_include_pad", "kernel_shape", "pads", "strides", NULL};
    const ImportValue *x;
    int layer, size = 0, stride = 1;
    int64_t pads[4] = {0};
    int st = check_attrs(im, n, global ? (const char *const[]){NULL} : allowed);
    st = st ? st : global ? CDL_OK : window_attrs(im, n, NULL, &size, &stride, pads);
    st = st ? st : input_layer(im, n, 0, &x);
    if (st)
        return st;
    const Shape in = layer_shape(im, x->layer);
    if (!global && size == 1 && stride == 1 && !pads[0] && !pads[2])
        return bind_output(im, n, x->layer, x->flat);
    if (!global && (pads[0] || pads[2] || size != in.h || size != in.w))
        return refuse(im, n,
                      "attribute kernel_shape=[%d,%d] on a %dx%d input: cdl's [avgpool] "
                      "averages the whole map",
                      size, size, in.h, in.w);
    if (x->flat)
        return refuse(im, n, "its input is a vector, not a feature map");
    st = read_input(im, n, 0, &x, &layer);
    ImportLayer *l = st ? NULL : add_layer(im, K_AVGPOOL, n);
    if (!l)
        return st ? st : CDL_ERUNTIME;
    l->out = (Shape){in.c, 1, 1};
    return bind_output(im, n, im->n_layers - 1, 0);
}

/* ReduceMean over the spatial axes (2, 3): [avgpool], a vector when keepdims=0. */
static int import_reduce_mean(Importer *im, const OnnxNode *n)
{
    const ImportValue *x;
    int layer;
    const OnnxTensor *axes_input = NULL;
    int st = check_attrs(im, n, (const char *const[]){"axes", "keepdims", NULL});
    st = st ? st : input_layer(im, n, 0, &x);
    if (st)
        return st;
    /* axes: an attribute up to opset 17, the optional input 1 from opset 18 */
    const OnnxAttribute *attr = onnx_node_attr(n, "axes");
    st = attr ? CDL_OK : input_constant(im, n, 1, 2, &axes_input);
    if (st)
        return st;
    if (axes_input && axes_input->data_type != ONNX_READ_INT64)
        return refuse(im, n, "axes '%s' must be int64", axes_input->name);
    const int64_t *axes = attr ? attr->ints : axes_input ? axes_input->ints : NULL;
    const int n_axes = attr ? attr->n_ints : axes_input ? (int)axes_input->count : 0;
    int spatial = n_axes == 2 && !x->flat;
    for (int k = 0; spatial && k < 2; k++)
        spatial = axes[k] == 2 + k || axes[k] == k - 2;
    if (!spatial) {
        char buf[128];
        return refuse(im, n, "%s axes=%s: cdl averages over the spatial axes [2,3] only",
                      axes_input ? "input" : "attribute",
                      axes ? ints_text(axes, n_axes, buf, sizeof buf) : "(all)");
    }
    st = read_input(im, n, 0, &x, &layer);
    ImportLayer *l = st ? NULL : add_layer(im, K_AVGPOOL, n);
    if (!l)
        return st ? st : CDL_ERUNTIME;
    l->out = (Shape){layer_shape(im, layer).c, 1, 1};
    l->flat = !attr_int(n, "keepdims", 1);
    return bind_output(im, n, im->n_layers - 1, l->flat);
}

static int import_softmax(Importer *im, const OnnxNode *n)
{
    const ImportValue *x;
    int layer;
    int st = check_attrs(im, n, (const char *const[]){"axis", NULL});
    st = st ? st : read_input(im, n, 0, &x, &layer);
    if (st)
        return st;
    const Shape in = layer_shape(im, layer);
    const int64_t axis = attr_int(n, "axis", im->m->opset >= 13 ? -1 : 1);
    const int rank = x->flat ? 2 : 4;
    const int vector = x->flat || (in.h == 1 && in.w == 1);
    if (!vector || !(axis == 1 || (axis == -1 && rank == 2) || (axis == 3 && in.c == 1) ||
                     (axis == -1 && in.c == 1)))
        return refuse(im, n,
                      "attribute axis=%lld over a %dx%dx%d value: cdl's [softmax] runs "
                      "over all the features of a sample",
                      (long long)axis, in.c, in.h, in.w);
    ImportLayer *l = add_layer(im, K_SOFTMAX, n);
    if (!l)
        return CDL_ERUNTIME;
    l->out = in;
    l->flat = x->flat;
    return bind_output(im, n, im->n_layers - 1, x->flat);
}

/* Flatten(axis 1) and Reshape to [N, features]: the same values as a vector. */
static int import_flatten(Importer *im, const OnnxNode *n, int reshape)
{
    const ImportValue *x;
    int st = check_attrs(im, n,
                         reshape ? (const char *const[]){"allowzero", NULL}
                                 : (const char *const[]){"axis", NULL});
    st = st ? st : input_layer(im, n, 0, &x);
    if (st)
        return st;
    const size_t features = shape_size(layer_shape(im, x->layer));
    if (!reshape && attr_int(n, "axis", 1) != 1)
        return refuse(im, n, "attribute axis=%lld: only a flatten to [N, features] (axis 1)",
                      (long long)attr_int(n, "axis", 1));
    if (reshape) {
        const OnnxTensor *shape;
        st = input_constant(im, n, 1, 2, &shape);
        if (st)
            return st;
        char buf[128], batch[24] = "N";
        const int64_t *d = shape->ints;
        if (im->batch > 0)
            snprintf(batch, sizeof batch, "%lld", (long long)im->batch);
        /* N is 0 (copied), -1 (inferred), the input's fixed batch, or 1 when that is symbolic */
        if (shape->data_type != ONNX_READ_INT64 || shape->count != 2 ||
            !(d[0] == 0 || d[0] == -1 || d[0] == (im->batch < 0 ? 1 : im->batch)) ||
            !(d[1] == -1 || d[1] == (int64_t)features) || (d[0] == -1 && d[1] == -1))
            return refuse(im, n, "shape %s: only a flatten to [%s, %zu] is supported",
                          shape->ints ? ints_text(d, (int)shape->count, buf, sizeof buf) : "?",
                          batch, features);
    }
    return bind_output(im, n, x->layer, 1);
}

/* Identity, Dropout: the input value (a layer's or a constant) under another name. */
static int import_alias(Importer *im, const OnnxNode *n)
{
    const ImportValue *x = find_value(im, n->inputs[0]);
    if (x && x->constant)
        return bind(im, n->outputs[0], 0, x->constant, 0);
    int st = input_layer(im, n, 0, &x);
    if (!st && n->n_outputs > 1 && n->outputs[1][0] && readers(im, n->outputs[1]))
        return refuse(im, n, "its mask output is read: only inference graphs import");
    return st ? st : bind_output(im, n, x->layer, x->flat);
}

static int import_constant(Importer *im, const OnnxNode *n)
{
    const OnnxAttribute *a = onnx_node_attr(n, "value");
    if (n->n_attrs != 1 || !a || !a->t)
        return refuse(im, n, "only a Constant with a tensor 'value' is supported");
    return bind(im, n->outputs[0], 0, a->t, 0);
}

/* Where a constant that broadcasts against the [N, C, H, W] graph input by ONNX's numpy rule
 * (shapes aligned on the right) varies: "" when it holds one value per channel or one for all
 * (every dim 1 but C's, which is C or 1), else the axis ("N", "H", "W"), or NULL when it does
 * not broadcast against the input at all. */
static const char *constant_varies_along(const OnnxTensor *t, int64_t batch, Shape in)
{
    static const char *const axis_name[] = {"N", "C", "H", "W"};
    const int64_t input[4] = {batch, in.c, in.h, in.w};
    if (t->n_dims > 4)
        return NULL;
    for (int k = 0; k < t->n_dims; k++) {
        const int axis = 4 - t->n_dims + k;
        if (t->dims[k] == 1 || (axis == 1 && t->dims[k] == in.c))
            continue;
        return t->dims[k] == input[axis] ? axis_name[axis] : NULL;
    }
    return "";
}

/* Sub, Mul and Div of per-channel constants right at the graph input: [net] mean and std. */
static int import_normalisation(Importer *im, const OnnxNode *n, int sub, int div)
{
    const ImportValue *x = n->n_inputs == 2 ? find_value(im, n->inputs[0]) : NULL;
    const ImportValue *c = n->n_inputs == 2 ? find_value(im, n->inputs[1]) : NULL;
    const int channels = im->in_shape.c;
    if (!x || !c || x->constant || x->layer != -1 || !c->constant || im->n_layers ||
        im->normalised != (sub ? 0 : 1) || channels > 3 ||
        c->constant->data_type != ONNX_READ_FLOAT)
        return refuse(im, n,
                      "only a per-channel Sub then Mul or Div of constants right at the "
                      "graph input (the [net] mean/std normalisation) is supported");
    const OnnxTensor *t = c->constant;
    const char *along = constant_varies_along(t, im->batch, im->in_shape);
    if (!along || *along) {
        char buf[128], how[64] = "does not broadcast against";
        if (along)
            snprintf(how, sizeof how, "varies along %s of", along);
        return refuse(im, n,
                      "constant '%s' of shape %s %s the [N,%d,%d,%d] input (ONNX aligns shapes "
                      "on the right): cdl's [net] mean/std hold one value per channel (shape "
                      "[%d,1,1] or [1,%d,1,1])",
                      n->inputs[1], ints_text(t->dims, t->n_dims, buf, sizeof buf), how, channels,
                      im->in_shape.h, im->in_shape.w, channels, channels);
    }
    for (int k = 0; k < channels; k++) {
        const float v = t->floats[t->count == 1 ? 0 : k];
        if (sub)
            im->mean[k] = v;
        else
            im->std[k] = div ? v : (float)(1.0 / (double)v);
    }
    im->normalised++;
    return bind_output(im, n, -1, 0);
}

static int import_node(Importer *im, const OnnxNode *n)
{
    const char *op = n->op_type;
    if (n->domain[0] && strcmp(n->domain, "ai.onnx"))
        return refuse(im, n, "domain '%s' is not supported", n->domain);
    if (!strcmp(op, "Constant"))
        return n->n_outputs ? import_constant(im, n) : refuse(im, n, "has no output");
    if (!n->n_outputs || !n->n_inputs)
        return refuse(im, n, "has no %s", n->n_outputs ? "input" : "output");
    if (!strcmp(op, "Conv"))
        return import_conv(im, n);
    if (!strcmp(op, "BatchNormalization"))
        return import_batchnorm(im, n);
    if (!strcmp(op, "Relu") || !strcmp(op, "Sigmoid") || !strcmp(op, "Tanh")) {
        const int st = check_attrs(im, n, (const char *const[]){NULL});
        return st ? st
                  : import_activation(im, n,
                                      op[0] == 'R'   ? CDL_ACT_RELU
                                      : op[0] == 'S' ? CDL_ACT_LOGISTIC
                                                     : CDL_ACT_TANH);
    }
    if (!strcmp(op, "LeakyRelu") || !strcmp(op, "Elu")) {
        const int leaky = op[0] == 'L';
        const float alpha = attr_float(n, "alpha", leaky ? 0.01f : 1.0f),
                    want = leaky ? 0.1f : 1.0f;
        const int st = check_attrs(im, n, (const char *const[]){"alpha", NULL});
        if (st)
            return st;
        if (alpha != want)
            return refuse(im, n, "attribute alpha=%g: cdl's %s has alpha %g", alpha,
                          leaky ? "leaky" : "elu", want);
        return import_activation(im, n, leaky ? CDL_ACT_LEAKY : CDL_ACT_ELU);
    }
    if (!strcmp(op, "Clip"))
        return import_clip(im, n);
    if (!strcmp(op, "MaxPool"))
        return import_maxpool(im, n);
    if (!strcmp(op, "AveragePool") || !strcmp(op, "GlobalAveragePool"))
        return import_avgpool(im, n, op[0] == 'G');
    if (!strcmp(op, "Gemm"))
        return import_gemm(im, n);
    if (!strcmp(op, "MatMul"))
        return import_matmul(im, n);
    if (!strcmp(op, "Add"))
        return import_add(im, n);
    if (!strcmp(op, "Concat"))
        return import_concat(im, n);
    if (!strcmp(op, "ReduceMean"))
        return import_reduce_mean(im, n);
    if (!strcmp(op, "Softmax"))
        return import_softmax(im, n);
    if (!strcmp(op, "Flatten") || !strcmp(op, "Reshape"))
        return import_flatten(im, n, op[0] == 'R');
    if (!strcmp(op, "Dropout") || !strcmp(op, "Identity")) {
        const int st = check_attrs(im, n, (const char *const[]){"ratio", "seed", NULL});
        return st ? st : import_alias(im, n);
    }
    if (!strcmp(op, "Sub") || !strcmp(op, "Mul") || !strcmp(op, "Div"))
        return import_normalisation(im, n, op[0] == 'S', op[0] == 'D');
    return refuse(im, n, "operator not supported by cdl import (see `cdl import --help`)");
}

/* ---- the graph ---- */

/* The net input: the one graph input that is not an initializer, [N][c][h][w] floats (not the
 * source ids of a sequence-to-sequence part). */
static int import_input(Importer *im)
{
    const OnnxValueInfo *in = NULL;
    for (int k = 0; k < im->m->n_inputs; k++)
        if (!strcmp(im->m->inputs[k].name, ONNX_SOURCE_IDS) &&
            im->m->inputs[k].elem_type == ONNX_READ_INT64)
            return error_set(im->e, CDL_EUSAGE,
                             "graph input '%s' (token ids): the encoder or the decoder step of a "
                             "sequence-to-sequence model, as `cdl export onnx` writes them; cdl "
                             "imports one graph of the whole net, not these parts (keep the .cdl "
                             "model they came from)",
                             ONNX_SOURCE_IDS);
    for (int k = 0; k < im->m->n_inputs; k++) {
        const OnnxValueInfo *v = &im->m->inputs[k];
        if (onnx_model_initializer(im->m, v->name))
            continue;
        if (in)
            return error_set(im->e, CDL_EUSAGE,
                             "graph inputs '%s' and '%s': cdl nets have one "
                             "input",
                             in->name, v->name);
        in = v;
    }
    if (!in)
        return error_set(im->e, CDL_EUSAGE, "the graph has no input");
    if (in->elem_type != ONNX_READ_FLOAT || in->n_dims != 4 || in->dims[1] < 1 || in->dims[2] < 1 ||
        in->dims[3] < 1 || in->dims[1] > 4096 || in->dims[2] > 65536 || in->dims[3] > 65536) {
        char buf[128];
        return error_set(im->e, CDL_EUSAGE,
                         "graph input '%s': type %d shape %s: cdl imports "
                         "float [N, C, H, W] inputs with known C, H and W",
                         in->name, in->elem_type, ints_text(in->dims, in->n_dims, buf, sizeof buf));
    }
    im->in_shape = (Shape){(int)in->dims[1], (int)in->dims[2], (int)in->dims[3]};
    im->batch = in->dims[0] > 0 ? in->dims[0] : -1;
    for (int k = 0; k < 3; k++)
        im->std[k] = 1.0f;
    return bind(im, in->name, -1, NULL, 0);
}

/* The graph output must be the last layer's: a [route] to it otherwise. */
static int import_output(Importer *im)
{
    if (im->m->n_outputs != 1)
        return error_set(im->e, CDL_EUSAGE, "the graph has %d outputs: cdl nets have one",
                         im->m->n_outputs);
    const ImportValue *v = find_value(im, im->m->outputs[0].name);
    if (!v || v->constant || v->layer < 0 || !im->n_layers)
        return error_set(im->e, CDL_EUSAGE, "graph output '%s' is not computed by any layer",
                         im->m->outputs[0].name);
    if (v->layer == im->n_layers - 1)
        return CDL_OK;
    ImportLayer *r = add_layer(im, K_ROUTE, im->layers[v->layer].node);
    if (!r)
        return CDL_ERUNTIME;
    r->refs[0] = v->layer;
    r->n_refs = 1;
    r->out = layer_shape(im, v->layer);
    return CDL_OK;
}

/* A growing text buffer. */
typedef struct Text {
    char *s;
    size_t len, cap;
    int failed;
} Text;

static void text_printf(Text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void text_printf(Text *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    const int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (t->failed || n < 0)
        return;
    if (t->len + (size_t)n + 1 > t->cap) {
        const size_t cap = 2 * (t->len + (size_t)n + 1);
        char *grown = realloc(t->s, cap);
        if (!grown) {
            t->failed = 1;
            return;
        }
        t->s = grown;
        t->cap = cap;
    }
    va_start(ap, fmt);
    vsnprintf(t->s + t->len, t->cap - t->len, fmt, ap);
    va_end(ap);
    t->len += (size_t)n;
}

/* The shortest decimal that reads back as v (1e-05, not 9.99999975e-06). */
static void float_text(float v, char buf[32])
{
    for (int digits = 6; digits <= 9; digits++) {
        snprintf(buf, 32, "%.*g", digits, v);
        if (strtof(buf, NULL) == v)
            return;
    }
}

static void write_floats(Text *t, const char *key, const float *v, int n)
{
    char buf[32];
    text_printf(t, "%s=", key);
    for (int k = 0; k < n; k++) {
        float_text(v[k], buf);
        text_printf(t, "%s%s", k ? "," : "", buf);
    }
    text_printf(t, "\n");
}

static void write_layer(Text *t, const ImportLayer *l, int index)
{
    char name[COMMENT_NAME_BYTES], op[COMMENT_NAME_BYTES];
    text_printf(t, "\n# node '%s' (%s)\n[%s]\n", utf8_escape_line(l->node->name, name, sizeof name),
                utf8_escape_line(l->node->op_type, op, sizeof op), kind_section[l->kind]);
    switch (l->kind) {
    case K_CONV:
        text_printf(t, "filters=%d\nsize=%d\nstride=%d\npadding=%d\n", l->filters, l->size,
                    l->stride, l->padding);
        if (l->groups != 1)
            text_printf(t, "groups=%d\n", l->groups);
        break;
    case K_CONNECTED:
        text_printf(t, "output=%d\n", l->outputs);
        break;
    case K_MAXPOOL:
        text_printf(t, "size=%d\nstride=%d\npadding=%d\n", l->size, l->stride, l->padding);
        break;
    case K_ROUTE:
        text_printf(t, "layers=");
        for (int k = 0; k < l->n_refs; k++)
            text_printf(t, "%s%d", k ? "," : "", l->refs[k] - index);
        text_printf(t, "\n");
        break;
    case K_SHORTCUT:
        text_printf(t, "from=%d\n", l->refs[0] - index);
        break;
    case K_BATCHNORM:
    case K_AVGPOOL:
    case K_SOFTMAX:
        break;
    }
    if (l->kind == K_CONV || l->kind == K_CONNECTED) {
        if (l->batch_normalize)
            text_printf(t, "batch_normalize=1\n");
    }
    if (l->kind == K_CONV || l->kind == K_CONNECTED || l->kind == K_SHORTCUT)
        text_printf(t, "activation=%s\n", activation_name(l->activation));
}

static char *write_cfg(const Importer *im, const char *source)
{
    Text t = {0};
    const Shape in = im->in_shape;
    char file[COMMENT_NAME_BYTES], producer[COMMENT_NAME_BYTES];
    text_printf(&t,
                "# Imported from %s (ONNX opset %lld, producer '%s') by cdl import.\n"
                "[net]\nbatch=1\nwidth=%d\nheight=%d\nchannels=%d\n",
                utf8_escape_line(source, file, sizeof file), (long long)im->m->opset,
                utf8_escape_line(im->m->producer ? im->m->producer : "", producer, sizeof producer),
                in.w, in.h, in.c);
    if (im->have_bn_eps)
        write_floats(&t, "bn_eps", &im->bn_eps, 1);
    if (im->normalised) {
        write_floats(&t, "mean", im->mean, in.c);
        write_floats(&t, "std", im->std, in.c);
    }
    for (int k = 0; k < im->n_layers; k++)
        write_layer(&t, &im->layers[k], k);
    if (t.failed) {
        free(t.s);
        return NULL;
    }
    return t.s;
}

/* Copies every ImportParam into the built net, checking its size. */
static int fill_params(Importer *im, Net *net)
{
    for (int k = 0; k < im->n_layers; k++) {
        ImportLayer *il = &im->layers[k];
        Layer *l = &net->layers[k];
        for (int p = 0; p < il->n_params; p++) {
            const Param *dst = layer_param(l, il->params[p].name);
            if (!dst || dst->count != il->params[p].count)
                return error_set(im->e, CDL_ERUNTIME,
                                 "layer %d [%s] from node '%s': parameter "
                                 "%s has %zu values, the layer takes %zu",
                                 k, l->type->name, il->node->name, il->params[p].name,
                                 il->params[p].count, dst ? dst->count : 0);
            if (dst->count)
                memcpy(dst->data, il->params[p].data, dst->count * sizeof *dst->data);
        }
    }
    return CDL_OK;
}

static void importer_free(Importer *im)
{
    for (int k = 0; k < im->n_layers; k++)
        for (int p = 0; p < im->layers[k].n_params; p++)
            free(im->layers[k].params[p].owned);
    free(im->layers);
    free(im->values);
}

int onnx_import(const OnnxModel *m, const char *source, OnnxImport *imp, Error *e)
{
    memset(imp, 0, sizeof *imp);
    Importer im = {.m = m, .e = e};
    int st = import_input(&im);
    for (int k = 0; !st && k < m->n_initializers; k++)
        st = m->initializers[k].name ? bind(&im, m->initializers[k].name, 0, &m->initializers[k], 0)
                                     : CDL_OK;
    for (int k = 0; !st && k < m->n_nodes; k++)
        st = import_node(&im, &m->nodes[k]);
    st = st ? st : import_output(&im);
    if (!st && !(imp->cfg_text = write_cfg(&im, source)))
        st = out_of_memory(&im);
    if (!st) {
        st = net_build_from_text_uninitialised(&imp->net, imp->cfg_text, "imported cfg", 0, 0, e);
        if (st)
            error_prefix(e, st, "cdl import wrote a cfg its parser refuses (a bug): ");
        else {
            imp->n_layers = imp->net.n_layers;
            st = fill_params(&im, &imp->net);
        }
    }
    importer_free(&im);
    if (st)
        onnx_import_free(imp);
    return st;
}

void onnx_import_free(OnnxImport *imp)
{
    if (imp->n_layers)
        net_free(&imp->net);
    free(imp->cfg_text);
    memset(imp, 0, sizeof *imp);
}
