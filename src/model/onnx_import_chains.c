/* `cdl import`: the chains of elementwise nodes that exporters write for one cdl layer or
 * activation (onnx_import_internal.h), ConvNeXt's in torch's export: Transpose to channels
 * last and back, layer norm over the channels as ReduceMean, Sub, Pow (or Mul), ReduceMean,
 * Add, Sqrt, Div, Mul, Add ([layernorm] channels=1), Linear over the channels as MatMul
 * ([convolutional] 1x1), GELU as Div, Erf, Add, Mul, Mul (activation=gelu), and a Mul by
 * per-channel constants ([layer_scale]). */
#include "model/onnx_import_internal.h"

#include <math.h>
#include <string.h>

/* Transpose of a map to channels last [N,H,W,C] (perm [0,2,3,1]) or back (perm [0,3,1,2]): the
 * same layer, its layout noted on the value. */
int import_transpose(Importer *im, const OnnxNode *n)
{
    static const int64_t to_last[4] = {0, 2, 3, 1}, to_first[4] = {0, 3, 1, 2};
    const ImportValue *x;
    int st = import_check_attrs(im, n, (const char *const[]){"perm", NULL});
    if (!st && import_transposed_constant(im, n->outputs[0]))
        return CDL_OK; /* the MatMuls reading it take the constant as it is */
    st = st ? st : import_input_layer(im, n, 0, &x);
    if (st)
        return st;
    const OnnxAttribute *perm = onnx_node_attr(n, "perm");
    const int n_perm = perm ? perm->n_ints : 0;
    const int last = n_perm == 4 && !memcmp(perm->ints, to_last, sizeof to_last);
    const int first = n_perm == 4 && !memcmp(perm->ints, to_first, sizeof to_first);
    if (x->layer >= 0 && x->flat == VALUE_ROWS)
        return import_attention(im, n, x);
    if (x->layer < 0 || !((last && x->flat == VALUE_MAP) || (first && x->flat == VALUE_NHWC))) {
        char buf[128];
        return import_refuse(im, n,
                             "attribute perm=%s of a %s: cdl imports only a layer's map to "
                             "channels last [0,2,3,1] and back [0,3,1,2]",
                             perm ? import_ints_text(perm->ints, n_perm, buf, sizeof buf) : "[]",
                             x->layer < 0            ? "graph input"
                             : x->flat == VALUE_MAP  ? "[N,C,H,W] map"
                             : x->flat == VALUE_NHWC ? "[N,H,W,C] map"
                                                     : "vector");
    }
    ImportLayer *l = &im->layers[x->layer];
    if (import_readers(im, x->name) == 1 && !strcmp(l->head, x->name))
        l->head = n->outputs[0]; /* an activation may still fold into the layer */
    return import_bind_output(im, n, x->layer, last ? VALUE_NHWC : VALUE_MAP);
}

/* MatMul of a channels-last map [N,H,W,Cin] by a constant [Cin,Cout] (torch's Linear over the
 * channels): [convolutional] 1x1 with weights [Cout][Cin][1][1], its biases from a later Add
 * of a constant; the value stays channels last. */
int import_channel_matmul(Importer *im, const OnnxNode *n, const ImportValue *x,
                          const OnnxTensor *w)
{
    int layer;
    const Shape in = import_layer_shape(im, x->layer);
    if (w->n_dims != 2 || w->dims[0] != in.c)
        return import_refuse(im, n, "weight '%s' of %d dims does not take the %d channels", w->name,
                             w->n_dims, in.c);
    int st = import_read_input(im, n, 0, &x, &layer);
    ImportLayer *l = st ? NULL : import_add_layer(im, K_CONV, n);
    if (!l)
        return st ? st : CDL_ERUNTIME;
    const int64_t cin = w->dims[0], cout = w->dims[1];
    l->filters = (int)cout;
    l->win = window2d_square(1, 1, 0);
    l->groups = 1;
    l->out = (Shape){(int)cout, in.h, in.w};
    l->open_bias = 1;
    float *wd = import_add_owned_param(im, l, "weights", NULL, w->count);
    if (!wd || !import_add_owned_param(im, l, "biases", NULL, (size_t)cout))
        return CDL_ERUNTIME;
    for (int64_t o = 0; o < cout; o++)
        for (int64_t i = 0; i < cin; i++)
            wd[o * cin + i] = w->floats[i * cout + o];
    return import_bind_output(im, n, im->n_layers - 1, VALUE_NHWC);
}

/* The values a layer norm of a layer shaped s, laid out as flat, normalises together: a token
 * row's features (w), else the channels. */
static int norm_features(Shape s, int flat)
{
    return import_is_rows(flat) ? s.w : s.c;
}

/* Whether the reduction n averages the channels of a value laid out as flat: the last axis
 * of a channels-last map or of token rows, axis 1 of a [N,C,H,W] one; keepdims 1. */
static int over_channels(const Importer *im, const OnnxNode *n, int flat)
{
    const OnnxAttribute *axes = onnx_node_attr(n, "axes");
    const OnnxTensor *input =
        !axes && n->n_inputs > 1 ? import_graph_constant(im, n->inputs[1]) : NULL;
    const int64_t *a = axes ? axes->ints : input ? input->ints : NULL;
    const int count = axes ? axes->n_ints : input ? (int)input->count : 0;
    if (!a || count != 1 || import_attr_int(n, "keepdims", 1) != 1 ||
        (input && input->data_type != ONNX_READ_INT64))
        return 0;
    if (import_is_rows(flat))
        return a[0] == (flat == VALUE_ROWS ? 2 : 3) || a[0] == -1;
    return flat == VALUE_NHWC ? a[0] == 3 || a[0] == -1
                              : flat == VALUE_MAP && (a[0] == 1 || a[0] == -3);
}

/* The nodes of a layer norm's chain after its first ReduceMean, as node indices. */
typedef struct NormChain {
    int sub, square, variance, add_eps, sqrt, div, scale, shift;
    float eps;
} NormChain;

/* Follows the chain from the ReduceMean n of x (see the file comment); 0 when it is not one. */
static int find_norm_chain(const Importer *im, const OnnxNode *n, const ImportValue *x,
                           NormChain *c)
{
    const OnnxNode *nodes = im->m->nodes;
    c->sub = import_sole_reader(im, n->outputs[0], "Sub");
    if (c->sub < 0 || strcmp(nodes[c->sub].inputs[0], x->name))
        return 0;
    const char *centered = nodes[c->sub].outputs[0];
    c->square = -1;
    for (int k = c->sub + 1; k < im->m->n_nodes && c->square < 0; k++) {
        const OnnxNode *s = &nodes[k];
        const char *other = import_other_input(s, centered);
        if (other && !strcmp(s->op_type, "Mul") && !strcmp(other, centered))
            c->square = k;
        if (other && !strcmp(s->op_type, "Pow") && !strcmp(s->inputs[0], centered) &&
            import_is_scalar(im, other, 2.0f, 0.0f))
            c->square = k;
    }
    /* read by the square (twice as Mul(d, d)) and the Div only */
    if (c->square < 0 ||
        import_readers(im, centered) != (strcmp(nodes[c->square].op_type, "Mul") ? 2 : 3))
        return 0;
    c->variance = import_sole_reader(im, nodes[c->square].outputs[0], "ReduceMean");
    if (c->variance < 0 || !over_channels(im, &nodes[c->variance], x->flat))
        return 0;
    c->add_eps = import_sole_reader(im, nodes[c->variance].outputs[0], "Add");
    const char *eps = c->add_eps < 0
                          ? NULL
                          : import_other_input(&nodes[c->add_eps], nodes[c->variance].outputs[0]);
    const OnnxTensor *eps_t = eps ? import_graph_constant(im, eps) : NULL;
    if (!eps_t || eps_t->data_type != ONNX_READ_FLOAT || eps_t->count != 1 ||
        !(eps_t->floats[0] > 0))
        return 0;
    c->eps = eps_t->floats[0];
    c->sqrt = import_sole_reader(im, nodes[c->add_eps].outputs[0], "Sqrt");
    c->div = c->sqrt < 0 ? -1 : import_sole_reader(im, nodes[c->sqrt].outputs[0], "Div");
    if (c->div < 0 || strcmp(nodes[c->div].inputs[0], centered))
        return 0;
    c->scale = import_sole_reader(im, nodes[c->div].outputs[0], "Mul");
    c->shift = c->scale < 0 ? -1 : import_sole_reader(im, nodes[c->scale].outputs[0], "Add");
    return 1;
}

/* The per-channel constant of node k (a Mul or Add of value, laid out as flat, by it): c
 * values along the last axis of a channels-last map or token rows ([C]), along axis 1 of a map
 * ([C,1,1]); NULL otherwise. */
static const OnnxTensor *channel_constant(const Importer *im, int k, const char *value, int c,
                                          int flat)
{
    const char *name = k < 0 ? NULL : import_other_input(&im->m->nodes[k], value);
    const OnnxTensor *t = name ? import_graph_constant(im, name) : NULL;
    if (!t || t->data_type != ONNX_READ_FLOAT || (int)t->count != c || t->n_dims < 1)
        return NULL;
    const int64_t *d = t->dims + t->n_dims;
    if (flat == VALUE_NHWC || import_is_rows(flat))
        return d[-1] == c ? t : NULL;
    return t->n_dims >= 3 && d[-3] == c && d[-2] == 1 && d[-1] == 1 ? t : NULL;
}

/* [layernorm] channels=1 of x with eps, scales and biases (NULL: ones, zeros), the output of
 * node last; of token rows, [layernorm] over each row. */
static int add_channel_norm(Importer *im, const OnnxNode *n, const ImportValue *x, float eps,
                            const OnnxTensor *scales, const OnnxTensor *biases,
                            const OnnxNode *last)
{
    int layer;
    const Shape in = import_layer_shape(im, x->layer);
    const int flat = x->flat, c = norm_features(in, flat);
    int st = import_read_input(im, n, 0, &x, &layer);
    ImportLayer *l = st ? NULL : import_add_layer(im, K_LAYERNORM, n);
    if (!l)
        return st ? st : CDL_ERUNTIME;
    l->out = in;
    l->eps = eps;
    l->flat = flat;
    float *s = import_add_owned_param(im, l, "scales", scales ? scales->floats : NULL, (size_t)c);
    if (!s || !import_add_owned_param(im, l, "biases", biases ? biases->floats : NULL, (size_t)c))
        return CDL_ERUNTIME;
    for (int k = 0; !scales && k < c; k++)
        s[k] = 1.0f;
    l->head = last->outputs[0];
    return import_bind_output(im, last, im->n_layers - 1, flat);
}

/* LayerNormalization (opset 17) over the last axis of a channels-last map: [layernorm]
 * channels=1; of token rows: [layernorm]. */
int import_layer_normalization(Importer *im, const OnnxNode *n)
{
    const ImportValue *x;
    const OnnxTensor *scales, *biases;
    int st =
        import_check_attrs(im, n, (const char *const[]){"axis", "epsilon", "stash_type", NULL});
    st = st ? st : import_input_layer(im, n, 0, &x);
    st = st ? st : import_input_constant(im, n, 1, 0, &scales);
    st = st ? st : import_input_constant(im, n, 2, 1, &biases);
    if (st)
        return st;
    const int64_t axis = import_attr_int(n, "axis", -1);
    const int c = norm_features(import_layer_shape(im, x->layer), x->flat);
    const int rows = import_is_rows(x->flat);
    if ((x->flat != VALUE_NHWC && !rows) || (axis != -1 && axis != (x->flat == VALUE_ROWS ? 2 : 3)))
        return import_refuse(im, n,
                             "attribute axis=%lld on a %s: cdl normalises the channels of a "
                             "channels-last map (axis -1 after a Transpose [0,2,3,1]) or the "
                             "features of token rows (axis -1)",
                             (long long)axis,
                             x->flat == VALUE_NHWC ? "channels-last map"
                             : rows                ? "value of token rows"
                                                   : "[N,C,H,W] value");
    if ((int)scales->count != c || (biases && (int)biases->count != c))
        return import_refuse(im, n, "scale or bias does not hold one value per channel (%d)", c);
    for (int k = 1; k < n->n_outputs; k++)
        if (n->outputs[k][0] && import_readers(im, n->outputs[k]))
            return import_refuse(im, n, "its mean or inverse deviation output is read");
    return add_channel_norm(im, n, x, import_attr_float(n, "epsilon", 1e-5f), scales, biases, n);
}

/* ReduceMean over the channels starting a layer norm chain: [layernorm] channels=1, the chain
 * taken in; its output keeps the input's layout. Any other such ReduceMean is refused. */
int import_channel_norm(Importer *im, const OnnxNode *n, const ImportValue *x)
{
    NormChain c;
    if (!over_channels(im, n, x->flat) || !find_norm_chain(im, n, x, &c))
        return import_refuse(im, n,
                             "a mean over the channels imports only as a layer norm: ReduceMean, "
                             "Sub, Pow or Mul, ReduceMean, Add of epsilon, Sqrt, Div (then Mul "
                             "and Add of per-channel constants)");
    const int features = norm_features(import_layer_shape(im, x->layer), x->flat);
    const OnnxNode *nodes = im->m->nodes;
    const OnnxTensor *scales =
        channel_constant(im, c.scale, nodes[c.div].outputs[0], features, x->flat);
    const OnnxTensor *biases =
        scales ? channel_constant(im, c.shift, nodes[c.scale].outputs[0], features, x->flat) : NULL;
    const int taken[] = {c.sub, c.square, c.variance, c.add_eps, c.sqrt, c.div};
    for (size_t k = 0; k < sizeof taken / sizeof *taken; k++)
        im->consumed[taken[k]] = 1;
    int last = c.div;
    if (scales)
        im->consumed[c.scale] = 1, last = c.scale;
    if (biases)
        im->consumed[c.shift] = 1, last = c.shift;
    return add_channel_norm(im, n, x, c.eps, scales, biases, &nodes[last]);
}

/* Div of x by √2 starting the exact GELU, 0.5·x·(1 + erf(x/√2)): torch's Div, Erf, Add 1,
 * Mul x, Mul 0.5, or cdl's own Div, Erf, Add 1, Mul(x, 0.5), Mul: activation=gelu of x's
 * layer, the chain taken in. */
int import_gelu(Importer *im, const OnnxNode *n, const ImportValue *x)
{
    const OnnxNode *nodes = im->m->nodes;
    const int erf = import_is_scalar(im, n->inputs[1], (float)M_SQRT2, 1e-6f)
                        ? import_sole_reader(im, n->outputs[0], "Erf")
                        : -1;
    const int plus1 = erf < 0 ? -1 : import_sole_reader(im, nodes[erf].outputs[0], "Add");
    const int product = plus1 < 0 ? -1 : import_sole_reader(im, nodes[plus1].outputs[0], "Mul");
    int half = -1, last = -1;
    if (product >= 0 &&
        import_is_scalar(im, import_other_input(&nodes[plus1], nodes[erf].outputs[0]), 1.0f, 0)) {
        const char *other = import_other_input(&nodes[product], nodes[plus1].outputs[0]);
        if (other && !strcmp(other, x->name)) { /* torch: (x · (1 + erf)) · 0.5 */
            last = import_sole_reader(im, nodes[product].outputs[0], "Mul");
            if (last >= 0 &&
                !import_is_scalar(im, import_other_input(&nodes[last], nodes[product].outputs[0]),
                                  0.5f, 0))
                last = -1;
        }
        for (int k = 0; other && last < 0 && k < im->m->n_nodes; k++) /* cdl: (x · 0.5) · ... */
            if (!strcmp(nodes[k].op_type, "Mul") && nodes[k].n_outputs &&
                !strcmp(nodes[k].outputs[0], other) &&
                import_is_scalar(im, import_other_input(&nodes[k], x->name), 0.5f, 0) &&
                import_readers(im, other) == 1)
                half = k, last = product;
    }
    if (last < 0)
        return import_refuse(im, n,
                             "a Div of a layer's output imports only as the start of the exact "
                             "GELU: Div by sqrt(2), Erf, Add 1, Mul by x, Mul by 0.5");
    const int st = import_fold_activation(im, n, x, 2, CDL_ACT_GELU, last);
    if (!st) {
        im->consumed[erf] = im->consumed[plus1] = im->consumed[product] = 1;
        im->consumed[last] = 1;
        if (half >= 0)
            im->consumed[half] = 1;
    }
    return st;
}

/* Mul of a [C,H,W] layer by a constant of C values shaped [C,1,1] or [1,C,1,1] (torch's layer
 * scale, cdl's own export; a [C] would broadcast along W): [layer_scale]. */
int import_layer_scale(Importer *im, const OnnxNode *n, const ImportValue *x, const OnnxTensor *t)
{
    int layer;
    const Shape in = import_layer_shape(im, x->layer);
    int per_channel = t->data_type == ONNX_READ_FLOAT && (int)t->count == in.c &&
                      x->flat == VALUE_MAP && t->n_dims >= 3 && t->n_dims <= 4;
    for (int k = 0; per_channel && k < t->n_dims; k++)
        per_channel = t->dims[k] == (t->n_dims - k == 3 ? in.c : 1);
    if (!per_channel) {
        char buf[128];
        return import_refuse(im, n,
                             "multiplies a %dx%dx%d map by constant '%s' of shape %s: cdl "
                             "multiplies by one value per channel ([layer_scale], shape [C,1,1])",
                             in.c, in.h, in.w, t->name,
                             import_ints_text(t->dims, t->n_dims, buf, sizeof buf));
    }
    const int st = import_read_input(im, n, strcmp(n->inputs[0], x->name) ? 1 : 0, &x, &layer);
    ImportLayer *l = st ? NULL : import_add_layer(im, K_LAYER_SCALE, n);
    if (!l)
        return st ? st : CDL_ERUNTIME;
    l->out = in;
    import_add_param(l, "scales", t->floats, t->count);
    return import_bind_output(im, n, im->n_layers - 1, VALUE_MAP);
}
