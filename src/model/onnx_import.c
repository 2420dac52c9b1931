/* `cdl import`: ONNX graph to cfg text and parameters (see onnx_import.h).
 *
 * Two passes: the nodes are walked once into ImportLayers (structured, so that a later
 * BatchNormalization or activation can still fold into the layer before it), then the layers
 * are written as cfg text, the net is built from it by cdl's own parser and every parameter
 * is copied in, its size checked against the Param the layer declared. */
#include "model/onnx_import.h"
#include "model/onnx_import_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/onnx_graph.h"
#include "util/utf8.h"

static const char *const kind_section[] = {
    "convolutional", "connected", "batchnorm",      "maxpool", "avgpool",  "route",
    "shortcut",      "softmax",   "scale_channels", "shuffle", "pad",      "layernorm",
    "layer_scale",   "tokens",    "select_token",   "linear",  "attention"};

/* Whether every input of n is an int64 constant (shape arithmetic). */
static int int64_inputs(const Importer *im, const OnnxNode *n)
{
    for (int k = 0; k < n->n_inputs; k++) {
        const ImportValue *v = import_find_value(im, n->inputs[k]);
        if (!v || !v->constant || v->constant->data_type != ONNX_READ_INT64)
            return 0;
    }
    return n->n_inputs > 0;
}

static int import_node(Importer *im, const OnnxNode *n)
{
    const char *op = n->op_type;
    if (n->domain[0] && strcmp(n->domain, "ai.onnx"))
        return import_refuse(im, n, "domain '%s' is not supported", n->domain);
    if (!strcmp(op, "Constant"))
        return n->n_outputs ? import_constant(im, n) : import_refuse(im, n, "has no output");
    if (!n->n_outputs || !n->n_inputs)
        return import_refuse(im, n, "has no %s", n->n_outputs ? "input" : "output");
    if ((!strcmp(op, "Add") || !strcmp(op, "Sub") || !strcmp(op, "Mul") || !strcmp(op, "Div")) &&
        int64_inputs(im, n))
        return import_int_arithmetic(im, n, op[0]);
    if ((!strcmp(op, "Concat") || !strcmp(op, "Reshape") || !strcmp(op, "Slice") ||
         !strcmp(op, "Transpose") || !strcmp(op, "Cast") || !strcmp(op, "ConstantOfShape")) &&
        int64_inputs(im, n))
        return import_fold_ints(im, n);
    if (!strcmp(op, "Shape"))
        return import_shape(im, n);
    if (!strcmp(op, "Gather")) {
        const ImportValue *x = import_find_value(im, n->inputs[0]);
        return x && !x->constant && x->layer >= 0 && x->flat == VALUE_ROWS
                   ? import_select_token(im, n, x)
                   : import_gather(im, n);
    }
    if (!strcmp(op, "Slice"))
        return import_slice(im, n);
    if (!strcmp(op, "Pad"))
        return import_pad(im, n);
    if (!strcmp(op, "Transpose"))
        return import_transpose(im, n);
    if (!strcmp(op, "LayerNormalization"))
        return import_layer_normalization(im, n);
    if (!strcmp(op, "Conv"))
        return import_conv(im, n);
    if (!strcmp(op, "BatchNormalization"))
        return import_batchnorm(im, n);
    if (!strcmp(op, "Relu") || !strcmp(op, "Tanh") || !strcmp(op, "HardSwish")) {
        const int st = import_check_attrs(im, n, (const char *const[]){NULL});
        return st ? st
                  : import_activation(im, n,
                                      op[0] == 'R'   ? CDL_ACT_RELU
                                      : op[0] == 'T' ? CDL_ACT_TANH
                                                     : CDL_ACT_HARDSWISH);
    }
    if (!strcmp(op, "Sigmoid"))
        return import_sigmoid(im, n);
    if (!strcmp(op, "HardSigmoid"))
        return import_hard_sigmoid(im, n);
    if (!strcmp(op, "Mul"))
        return import_mul(im, n);
    if (!strcmp(op, "LeakyRelu") || !strcmp(op, "Elu")) {
        const int leaky = op[0] == 'L';
        const float alpha = import_attr_float(n, "alpha", leaky ? 0.01f : 1.0f),
                    want = leaky ? 0.1f : 1.0f;
        const int st = import_check_attrs(im, n, (const char *const[]){"alpha", NULL});
        if (st)
            return st;
        if (alpha != want)
            return import_refuse(im, n, "attribute alpha=%g: cdl's %s has alpha %g", alpha,
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
        const int st = import_check_attrs(im, n, (const char *const[]){"ratio", "seed", NULL});
        return st ? st : import_alias(im, n);
    }
    if (!strcmp(op, "Div") && n->n_inputs == 2) {
        const ImportValue *x = import_find_value(im, n->inputs[0]);
        if (x && !x->constant && x->layer >= 0)
            return import_gelu(im, n, x);
    }
    if (!strcmp(op, "Sub") || !strcmp(op, "Div"))
        return import_normalisation(im, n, op[0] == 'S', op[0] == 'D');
    return import_refuse(im, n, "operator not supported by cdl import (see `cdl import --help`)");
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
                         in->name, in->elem_type,
                         import_ints_text(in->dims, in->n_dims, buf, sizeof buf));
    }
    im->in_shape = (Shape){(int)in->dims[1], (int)in->dims[2], (int)in->dims[3]};
    im->batch = in->dims[0] > 0 ? in->dims[0] : -1;
    for (int k = 0; k < 3; k++)
        im->std[k] = 1.0f;
    return import_bind(im, in->name, -1, NULL, 0);
}

/* The graph output must be the last layer's: a [route] to it otherwise. */
static int import_output(Importer *im)
{
    if (im->m->n_outputs != 1)
        return error_set(im->e, CDL_EUSAGE, "the graph has %d outputs: cdl nets have one",
                         im->m->n_outputs);
    const ImportValue *v = import_find_value(im, im->m->outputs[0].name);
    if (!v || v->constant || v->layer < 0 || !im->n_layers)
        return error_set(im->e, CDL_EUSAGE, "graph output '%s' is not computed by any layer",
                         im->m->outputs[0].name);
    if (v->flat == VALUE_NHWC)
        return error_set(im->e, CDL_EUSAGE,
                         "graph output '%s' is a channels-last [N,H,W,C] map: cdl's layers "
                         "give [N,C,H,W]",
                         im->m->outputs[0].name);
    if (v->layer == im->n_layers - 1)
        return CDL_OK;
    ImportLayer *r = import_add_layer(im, K_ROUTE, im->layers[v->layer].node);
    if (!r)
        return CDL_ERUNTIME;
    r->refs[0] = v->layer;
    r->n_refs = 1;
    r->out = import_layer_shape(im, v->layer);
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

/* A convolution's size=, stride=, padding=: one value each when square, else height,width. */
static void write_window(Text *t, Window2d w)
{
    if (window2d_is_square(w))
        text_printf(t, "size=%d\nstride=%d\npadding=%d\n", w.size_h, w.stride_h, w.pad_h);
    else
        text_printf(t, "size=%d,%d\nstride=%d,%d\npadding=%d,%d\n", w.size_h, w.size_w, w.stride_h,
                    w.stride_w, w.pad_h, w.pad_w);
}

static void write_layer(Text *t, const ImportLayer *l, int index)
{
    char name[COMMENT_NAME_BYTES], op[COMMENT_NAME_BYTES];
    text_printf(t, "\n# node '%s' (%s)\n[%s]\n", utf8_escape_line(l->node->name, name, sizeof name),
                utf8_escape_line(l->node->op_type, op, sizeof op), kind_section[l->kind]);
    switch (l->kind) {
    case K_CONV:
        text_printf(t, "filters=%d\n", l->filters);
        write_window(t, l->win);
        if (l->groups != 1)
            text_printf(t, "groups=%d\n", l->groups);
        if (l->no_bias)
            text_printf(t, "bias=0\n");
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
        if (l->groups > 1)
            text_printf(t, "groups=%d\ngroup_id=%d\n", l->groups, l->group_id);
        break;
    case K_SHUFFLE:
        text_printf(t, "groups=%d\n", l->groups);
        break;
    case K_LAYERNORM: {
        char eps[32];
        float_text(l->eps, eps);
        text_printf(t, "%seps=%s\n", import_is_rows(l->flat) ? "" : "channels=1\n", eps);
        break;
    }
    case K_TOKENS:
        text_printf(t, "class_token=%d\npositional=%d\n", l->class_token, l->positional);
        break;
    case K_SELECT_TOKEN:
        text_printf(t, "index=%d\n", l->index);
        break;
    case K_LINEAR:
        text_printf(t, "output=%d\n", l->outputs);
        break;
    case K_ATTENTION:
        text_printf(t, "heads=%d\ncausal=0\n", l->heads);
        break;
    case K_LAYER_SCALE:
        break;
    case K_PAD: {
        char value[32];
        float_text(l->pad_value, value);
        text_printf(t, "top=%d\nleft=%d\nbottom=%d\nright=%d\nvalue=%s\n", l->pad[0], l->pad[1],
                    l->pad[2], l->pad[3], value);
        break;
    }
    case K_SHORTCUT:
    case K_SCALE_CHANNELS:
        text_printf(t, "from=%d\n", l->refs[0] - index);
        break;
    case K_AVGPOOL:
        if (l->size) /* a window; without one the pooling is global */
            text_printf(t, "size=%d\nstride=%d\npadding=%d\n", l->size, l->stride, l->padding);
        break;
    case K_BATCHNORM:
    case K_SOFTMAX:
        break;
    }
    if (l->kind == K_CONV || l->kind == K_CONNECTED) {
        if (l->batch_normalize)
            text_printf(t, "batch_normalize=1\n");
    }
    if (l->kind == K_CONV || l->kind == K_CONNECTED || l->kind == K_LINEAR ||
        l->kind == K_SHORTCUT || l->kind == K_BATCHNORM)
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
    free(im->consumed);
    for (int k = 0; k < im->n_made; k++) {
        free(im->made[k]->ints);
        free(im->made[k]);
    }
    free(im->made);
}

int onnx_import(const OnnxModel *m, const char *source, OnnxImport *imp, Error *e)
{
    memset(imp, 0, sizeof *imp);
    Importer im = {.m = m, .e = e};
    im.consumed = calloc(m->n_nodes ? (size_t)m->n_nodes : 1, 1);
    int st = im.consumed ? import_input(&im) : import_out_of_memory(&im);
    for (int k = 0; !st && k < m->n_initializers; k++)
        st = m->initializers[k].name
                 ? import_bind(&im, m->initializers[k].name, 0, &m->initializers[k], 0)
                 : CDL_OK;
    for (int k = 0; !st && k < m->n_nodes; k++)
        st = im.consumed[k] ? CDL_OK : import_node(&im, &m->nodes[k]);
    st = st ? st : import_output(&im);
    if (!st && !(imp->cfg_text = write_cfg(&im, source)))
        st = import_out_of_memory(&im);
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
