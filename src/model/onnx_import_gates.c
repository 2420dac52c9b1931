/* `cdl import`: activations, which fold into the layer before, and the patterns built on Mul
 * (onnx_import_internal.h). */
#include "model/onnx_import_internal.h"

#include <math.h>
#include <string.h>

/* The layer an activation of x may join: x's producer, when x is the value it last wrote and
 * has n_readers readers, and the layer is a [convolutional], [connected], [linear], [shortcut]
 * or [batchnorm] still without an activation. NULL otherwise. */
static ImportLayer *activation_target(Importer *im, const ImportValue *x, int n_readers)
{
    if (x->layer < 0 || import_readers(im, x->name) != n_readers)
        return NULL;
    ImportLayer *l = &im->layers[x->layer];
    const int takes = l->kind == K_CONV || l->kind == K_CONNECTED || l->kind == K_LINEAR ||
                      l->kind == K_SHORTCUT || l->kind == K_BATCHNORM;
    return takes && l->activation == CDL_ACT_LINEAR && !strcmp(l->head, x->name) ? l : NULL;
}

/* Sets activation a on l, whose output is now the value out (the output of node n). */
static int set_activation(Importer *im, const OnnxNode *n, ImportLayer *l, ActivationKind a,
                          int flat)
{
    l->activation = a;
    l->open_bias = 0;
    l->head = n->outputs[0];
    return import_bind_output(im, n, (int)(l - im->layers), flat);
}

static int refuse_standalone(Importer *im, const OnnxNode *n, const ImportValue *x)
{
    return import_refuse(im, n,
                         "cdl has no standalone activation: it must follow a Conv, Gemm, Add or "
                         "BatchNormalization (as that node's only reader)%s%s",
                         x->layer >= 0 ? ", not " : "",
                         x->layer >= 0 ? im->layers[x->layer].node->op_type : "");
}

int import_activation(Importer *im, const OnnxNode *n, ActivationKind a)
{
    const ImportValue *x;
    int st = import_input_layer(im, n, 0, &x);
    if (st)
        return st;
    ImportLayer *l = activation_target(im, x, 1);
    return l ? set_activation(im, n, l, a, x->flat) : refuse_standalone(im, n, x);
}

/* The index of the first node after node `after` that is a Mul of the values a and b, either
 * way round; -1 when there is none. */
static int find_product(const Importer *im, int after, const char *a, const char *b)
{
    for (int k = after + 1; k < im->m->n_nodes; k++) {
        const OnnxNode *n = &im->m->nodes[k];
        if (strcmp(n->op_type, "Mul") || n->n_inputs != 2 || n->n_outputs < 1)
            continue;
        if ((!strcmp(n->inputs[0], a) && !strcmp(n->inputs[1], b)) ||
            (!strcmp(n->inputs[0], b) && !strcmp(n->inputs[1], a)))
            return k;
    }
    return -1;
}

/* A gate g (Sigmoid, HardSigmoid) of x: with a later Mul of x by g(x) as g's only reader and
 * x read by just the two, x·g(x), the product activation (swish: torch's SiLU export, or
 * hardswish: its opset-13 export) of x's layer, the Mul taken in; otherwise g itself. */
static int import_gate(Importer *im, const OnnxNode *n, ActivationKind gate, ActivationKind product)
{
    const ImportValue *x;
    int st = import_input_layer(im, n, 0, &x);
    if (st)
        return st;
    const int self = (int)(n - im->m->nodes);
    const int mul = find_product(im, self, x->name, n->outputs[0]);
    if (mul < 0 || import_readers(im, n->outputs[0]) != 1)
        return import_activation(im, n, gate);
    st = import_fold_activation(im, n, x, 2, product, mul);
    if (!st)
        im->consumed[mul] = 1;
    return st;
}

int import_fold_activation(Importer *im, const OnnxNode *n, const ImportValue *x, int n_readers,
                           ActivationKind a, int last)
{
    ImportLayer *l = activation_target(im, x, n_readers);
    return l ? set_activation(im, &im->m->nodes[last], l, a, x->flat) : refuse_standalone(im, n, x);
}

int import_sigmoid(Importer *im, const OnnxNode *n)
{
    const int st = import_check_attrs(im, n, (const char *const[]){NULL});
    return st ? st : import_gate(im, n, CDL_ACT_LOGISTIC, CDL_ACT_SWISH);
}

/* HardSigmoid with torch's alpha 1/6 and beta 1/2 (hardsigmoid's export). */
int import_hard_sigmoid(Importer *im, const OnnxNode *n)
{
    const float alpha = import_attr_float(n, "alpha", 0.2f);
    const float beta = import_attr_float(n, "beta", 0.5f);
    const int st = import_check_attrs(im, n, (const char *const[]){"alpha", "beta", NULL});
    if (st)
        return st;
    if (fabsf(alpha - 1.0f / 6.0f) > 1e-7f || beta != 0.5f)
        return import_refuse(im, n,
                             "attributes alpha=%g beta=%g: cdl's hardsigmoid is torch's, "
                             "relu6(x + 3) / 6 (alpha 1/6, beta 1/2)",
                             alpha, beta);
    return import_gate(im, n, CDL_ACT_HARDSIGMOID, CDL_ACT_HARDSWISH);
}

/* Mul of a [C][1][1] layer by a [C][H][W] one, either way round: [scale_channels] from= the
 * map, reading the gate (squeeze-excitation's end). */
static int import_scale_channels(Importer *im, const OnnxNode *n, const ImportValue *a,
                                 const ImportValue *b)
{
    const Shape sa = import_layer_shape(im, a->layer), sb = import_layer_shape(im, b->layer);
    const int a_gate = sa.h == 1 && sa.w == 1 && !(sb.h == 1 && sb.w == 1);
    const ImportValue *gate = a_gate ? a : b, *map = a_gate ? b : a;
    const Shape sg = a_gate ? sa : sb, sm = a_gate ? sb : sa;
    if (sg.h != 1 || sg.w != 1 || sg.c != sm.c || map->flat || gate->flat != VALUE_MAP ||
        map->layer < 0)
        return import_refuse(im, n,
                             "multiplies %dx%dx%d by %dx%dx%d: cdl multiplies a feature map "
                             "only by a per-channel [C,1,1] gate of the same C "
                             "([scale_channels])",
                             sa.c, sa.h, sa.w, sb.c, sb.h, sb.w);
    int layer;
    int st = import_read_input(im, n, gate == a ? 0 : 1, &gate, &layer);
    if (st)
        return st;
    ImportLayer *l = import_add_layer(im, K_SCALE_CHANNELS, n);
    if (!l)
        return CDL_ERUNTIME;
    l->refs[0] = map->layer;
    l->n_refs = 1;
    l->out = sm;
    return import_bind_output(im, n, im->n_layers - 1, 0);
}

int import_mul(Importer *im, const OnnxNode *n)
{
    if (n->n_inputs != 2)
        return import_refuse(im, n, "expected 2 inputs");
    int st = import_check_attrs(im, n, (const char *const[]){NULL});
    if (st)
        return st;
    const ImportValue *a = import_find_value(im, n->inputs[0]);
    const ImportValue *b = import_find_value(im, n->inputs[1]);
    if (!a || !b)
        return import_refuse(im, n, "input '%s' is not produced by any earlier node",
                             n->inputs[a ? 1 : 0]);
    if (a->constant && !b->constant && b->layer >= 0)
        return import_layer_scale(im, n, b, a->constant);
    if (b->constant && !a->constant && a->layer >= 0)
        return import_layer_scale(im, n, a, b->constant);
    if (a->constant || b->constant || a->layer < 0 || b->layer < 0)
        return import_normalisation(im, n, 0, 0);
    return import_scale_channels(im, n, a, b);
}

int import_clip(Importer *im, const OnnxNode *n)
{
    float lo = import_attr_float(n, "min", -INFINITY), hi = import_attr_float(n, "max", INFINITY);
    int st = import_check_attrs(im, n, (const char *const[]){"min", "max", NULL});
    for (int k = 1; !st && k < 3; k++) {
        const OnnxTensor *t;
        st = import_input_constant(im, n, k, 1, &t);
        if (!st && t && t->count != 1)
            return import_refuse(im, n, "bound '%s' is not a scalar", t->name);
        if (!st && t)
            *(k == 1 ? &lo : &hi) = t->floats[0];
    }
    if (st)
        return st;
    if (lo == 0.0f && hi == 6.0f)
        return import_activation(im, n, CDL_ACT_RELU6);
    if (lo == 0.0f && hi == INFINITY)
        return import_activation(im, n, CDL_ACT_RELU);
    return import_refuse(im, n, "bounds [%g, %g]: cdl has relu6 (0, 6) and relu (0, inf)", lo, hi);
}
