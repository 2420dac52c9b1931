/* `cdl import`: the helpers its node importers share (onnx_import_internal.h): messages,
 * the values nodes bind, attributes, and the layers being built. */
#include "model/onnx_import_internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- messages ---- */

int import_refuse(const Importer *im, const OnnxNode *n, const char *fmt, ...)
{
    char why[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    return error_set(im->e, CDL_EUSAGE, "node '%s' (%s): %s", n->name, n->op_type, why);
}

int import_refuse_channels_last(const Importer *im, const OnnxNode *n)
{
    return import_refuse(im, n,
                         "its input is a channels-last [N,H,W,C] map (after a Transpose): "
                         "cdl imports this operator on [N,C,H,W] only");
}

int import_out_of_memory(const Importer *im)
{
    return error_set(im->e, CDL_ERUNTIME, "out of memory importing the ONNX model");
}

/* "[1,2,3]" */
const char *import_ints_text(const int64_t *v, int n, char *buf, size_t size)
{
    size_t used = (size_t)snprintf(buf, size, "[");
    for (int k = 0; k < n && used < size; k++)
        used += (size_t)snprintf(buf + used, size - used, "%s%lld", k ? "," : "", (long long)v[k]);
    if (used < size)
        snprintf(buf + used, size - used, "]");
    return buf;
}

/* ---- values ---- */

ImportValue *import_find_value(const Importer *im, const char *name)
{
    for (int k = im->n_values - 1; k >= 0; k--)
        if (!strcmp(im->values[k].name, name))
            return &im->values[k];
    return NULL;
}

int import_bind(Importer *im, const char *name, int layer, const OnnxTensor *constant, int flat)
{
    if (im->n_values == im->cap_values) {
        const int cap = im->cap_values ? 2 * im->cap_values : 64;
        ImportValue *grown = realloc(im->values, (size_t)cap * sizeof *grown);
        if (!grown)
            return import_out_of_memory(im);
        im->values = grown;
        im->cap_values = cap;
    }
    im->values[im->n_values++] = (ImportValue){name, layer, constant, flat};
    return CDL_OK;
}

/* The shape and layout of the layer (or net input, -1) a value holds. */
Shape import_layer_shape(const Importer *im, int layer)
{
    return layer < 0 ? im->in_shape : im->layers[layer].out;
}

/* How many node inputs and graph outputs read name. */
int import_readers(const Importer *im, const char *name)
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
int import_input_layer(Importer *im, const OnnxNode *n, int k, const ImportValue **v)
{
    if (k >= n->n_inputs || !n->inputs[k][0])
        return import_refuse(im, n, "input %d is missing", k);
    *v = import_find_value(im, n->inputs[k]);
    if (!*v)
        return import_refuse(im, n, "input '%s' is not produced by any earlier node", n->inputs[k]);
    if ((*v)->constant)
        return import_refuse(im, n, "input '%s' is a constant: cdl layers read computed values",
                             n->inputs[k]);
    return CDL_OK;
}

/* *t = input k of node n as a constant (NULL when the input is absent and optional). */
int import_input_constant(Importer *im, const OnnxNode *n, int k, int optional,
                          const OnnxTensor **t)
{
    *t = NULL;
    if (k >= n->n_inputs || !n->inputs[k][0])
        return optional ? CDL_OK : import_refuse(im, n, "input %d is missing", k);
    const ImportValue *v = import_find_value(im, n->inputs[k]);
    if (!v || !v->constant)
        return import_refuse(im, n,
                             "input '%s' must be a constant (an initializer or a Constant node)",
                             n->inputs[k]);
    if (v->constant->data_type != ONNX_READ_FLOAT && optional != 2)
        return import_refuse(im, n, "input '%s' must be float32", n->inputs[k]);
    *t = v->constant;
    return CDL_OK;
}

/* ---- attributes ---- */

/* Refuses any attribute of n not named in allowed (NULL-terminated). */
int import_check_attrs(Importer *im, const OnnxNode *n, const char *const *allowed)
{
    for (int k = 0; k < n->n_attrs; k++) {
        int known = 0;
        for (const char *const *a = allowed; *a && !known; a++)
            known = !strcmp(*a, n->attrs[k].name);
        if (!known)
            return import_refuse(im, n, "attribute '%s' is not supported", n->attrs[k].name);
    }
    return CDL_OK;
}

int64_t import_attr_int(const OnnxNode *n, const char *name, int64_t def)
{
    const OnnxAttribute *a = onnx_node_attr(n, name);
    return a ? a->i : def;
}

float import_attr_float(const OnnxNode *n, const char *name, float def)
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
        return import_refuse(im, n, "attribute %s=%s: expected %d values (2-D only)", name,
                             import_ints_text(a->ints, a->n_ints, buf, sizeof buf), count);
    }
    memcpy(out, a->ints, (size_t)count * sizeof *out);
    return CDL_OK;
}

/* auto_pad must be NOTSET (explicit pads). */
static int check_auto_pad(Importer *im, const OnnxNode *n)
{
    const OnnxAttribute *a = onnx_node_attr(n, "auto_pad");
    if (a && a->s && strcmp(a->s, "NOTSET"))
        return import_refuse(im, n, "attribute auto_pad=%s is not supported (explicit pads only)",
                             a->s);
    return CDL_OK;
}

/* The window of a Conv or pooling node per axis: kernel_shape (kernel_dims when the node has none,
 * a Conv's weight shape), strides, pads [h_begin, w_begin, h_end, w_end] as given (win's pads are
 * the begins), dilations 1. */
int import_window_attrs(Importer *im, const OnnxNode *n, const int64_t *kernel_dims, Window2d *win,
                        int64_t pads[4])
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
            return import_refuse(im, n, "attribute kernel_shape is missing");
        kernel[0] = kernel_dims[0], kernel[1] = kernel_dims[1];
    }
    if (kernel[0] < 1 || kernel[1] < 1)
        return import_refuse(im, n, "attribute kernel_shape=%s: expected sizes of at least 1",
                             import_ints_text(kernel, 2, buf, sizeof buf));
    if (strides[0] < 1 || strides[1] < 1)
        return import_refuse(im, n, "attribute strides=%s: expected strides of at least 1",
                             import_ints_text(strides, 2, buf, sizeof buf));
    if (dil[0] != 1 || dil[1] != 1)
        return import_refuse(im, n, "attribute dilations=%s: cdl has no dilated windows",
                             import_ints_text(dil, 2, buf, sizeof buf));
    for (int k = 0; k < 4; k++)
        if (pads[k] < 0)
            return import_refuse(im, n, "attribute pads=%s: negative padding is not supported",
                                 import_ints_text(pads, 4, buf, sizeof buf));
    for (int axis = 0; axis < 2; axis++)
        if (kernel[axis] > 4096 || strides[axis] > 4096 || pads[axis] > 4096 ||
            pads[axis + 2] > 4096)
            return import_refuse(im, n,
                                 "window of %lld with stride %lld and pads %lld, %lld is too large",
                                 (long long)kernel[axis], (long long)strides[axis],
                                 (long long)pads[axis], (long long)pads[axis + 2]);
    *win = (Window2d){(int)kernel[0],  (int)kernel[1], (int)strides[0],
                      (int)strides[1], (int)pads[0],   (int)pads[1]};
    return CDL_OK;
}

int import_square_window_attrs(Importer *im, const OnnxNode *n, int *ksize, int *stride,
                               int64_t pads[4])
{
    Window2d win;
    char buf[128];
    const int st = import_window_attrs(im, n, NULL, &win, pads);
    if (st)
        return st;
    if (win.size_h != win.size_w)
        return import_refuse(
            im, n, "attribute kernel_shape=%s: cdl pooling windows are square",
            import_ints_text((const int64_t[]){win.size_h, win.size_w}, 2, buf, sizeof buf));
    if (win.stride_h != win.stride_w)
        return import_refuse(
            im, n,
            "attribute strides=%s: cdl pooling strides are equal in both "
            "directions",
            import_ints_text((const int64_t[]){win.stride_h, win.stride_w}, 2, buf, sizeof buf));
    if (pads[0] != pads[1] || pads[2] != pads[3])
        return import_refuse(im, n, "attribute pads=%s: cdl pools pad rows and columns alike",
                             import_ints_text(pads, 4, buf, sizeof buf));
    *ksize = win.size_h;
    *stride = win.stride_h;
    return CDL_OK;
}

/* ---- layers ---- */

ImportLayer *import_add_layer(Importer *im, ImportKind kind, const OnnxNode *n)
{
    if (im->n_layers == im->cap_layers) {
        const int cap = im->cap_layers ? 2 * im->cap_layers : 64;
        ImportLayer *grown = realloc(im->layers, (size_t)cap * sizeof *grown);
        if (!grown)
            return import_out_of_memory(im), NULL;
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
void import_add_param(ImportLayer *l, const char *name, const float *src, size_t count)
{
    l->params[l->n_params++] = (ImportParam){name, src, NULL, count};
}

float *import_add_owned_param(Importer *im, ImportLayer *l, const char *name, const float *src,
                              size_t count)
{
    float *data = calloc(count ? count : 1, sizeof *data);
    if (!data)
        return import_out_of_memory(im), NULL;
    if (src)
        memcpy(data, src, count * sizeof *data);
    l->params[l->n_params++] = (ImportParam){name, data, data, count};
    return data;
}

ImportParam *import_find_param(ImportLayer *l, const char *name)
{
    for (int k = 0; k < l->n_params; k++)
        if (!strcmp(l->params[k].name, name))
            return &l->params[k];
    return NULL;
}

/* The layer a node's single-tensor input is read from, made the last one: when the value is
 * not the last layer's output, a [route] to it is added. *v is that input's value. */
int import_read_input(Importer *im, const OnnxNode *n, int k, const ImportValue **v, int *layer)
{
    int st = import_input_layer(im, n, k, v);
    if (st)
        return st;
    *layer = (*v)->layer;
    if (*layer == im->n_layers - 1)
        return CDL_OK;
    if (*layer < 0)
        return import_refuse(im, n, "reads the graph input after other layers: cdl layers cannot");
    ImportLayer *r = import_add_layer(im, K_ROUTE, n);
    if (!r)
        return CDL_ERUNTIME;
    r->refs[0] = *layer;
    r->n_refs = 1;
    r->out = import_layer_shape(im, *layer);
    r->flat = (*v)->flat;
    r->head = "";
    *layer = im->n_layers - 1;
    return CDL_OK;
}

/* Binds every output of n (one is expected) to layer. */
int import_bind_output(Importer *im, const OnnxNode *n, int layer, int flat)
{
    if (n->n_outputs < 1)
        return import_refuse(im, n, "has no output");
    return import_bind(im, n->outputs[0], layer, NULL, flat);
}

/* The layer a folding node may change: the producer of its input 0, when the node is the
 * only reader of that value and it is the value the layer last wrote. NULL otherwise. */
ImportLayer *import_fold_target(Importer *im, const ImportValue *x)
{
    if (x->layer < 0 || import_readers(im, x->name) != 1)
        return NULL;
    ImportLayer *l = &im->layers[x->layer];
    return strcmp(l->head, x->name) ? NULL : l;
}

int import_sole_reader(const Importer *im, const char *value, const char *op)
{
    if (import_readers(im, value) != 1)
        return -1;
    for (int k = 0; k < im->m->n_nodes; k++) {
        const OnnxNode *n = &im->m->nodes[k];
        for (int i = 0; i < n->n_inputs; i++)
            if (!strcmp(n->inputs[i], value))
                return strcmp(n->op_type, op) || !n->n_outputs ? -1 : k;
    }
    return -1;
}

const OnnxTensor *import_graph_constant(const Importer *im, const char *name)
{
    const OnnxTensor *t = onnx_model_initializer(im->m, name);
    for (int hops = 0; !t && hops < 8; hops++) { /* Identity of Identity of ... a constant */
        const OnnxNode *from = NULL;
        for (int k = 0; !from && k < im->m->n_nodes; k++)
            if (im->m->nodes[k].n_outputs && !strcmp(im->m->nodes[k].outputs[0], name))
                from = &im->m->nodes[k];
        const OnnxAttribute *a = from ? onnx_node_attr(from, "value") : NULL;
        if (from && !strcmp(from->op_type, "Constant") && a)
            return a->t;
        if (!from || strcmp(from->op_type, "Identity") || from->n_inputs != 1)
            return NULL;
        name = from->inputs[0];
        t = onnx_model_initializer(im->m, name);
    }
    return t;
}

const char *import_other_input(const OnnxNode *n, const char *value)
{
    if (n->n_inputs != 2)
        return NULL;
    return !strcmp(n->inputs[0], value)   ? n->inputs[1]
           : !strcmp(n->inputs[1], value) ? n->inputs[0]
                                          : NULL;
}

int import_is_scalar(const Importer *im, const char *name, float want, float tolerance)
{
    const OnnxTensor *t = name ? import_graph_constant(im, name) : NULL;
    return t && t->data_type == ONNX_READ_FLOAT && t->count == 1 &&
           fabsf(t->floats[0] - want) <= tolerance;
}
