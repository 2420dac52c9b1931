/* `cdl import`: the nodes that become one cdl layer each, or fold into the one before
 * (onnx_import_internal.h). */
#include "model/onnx_import_internal.h"

#include <stdio.h>
#include <string.h>

int import_conv(Importer *im, const OnnxNode *n)
{
    static const char *const allowed[] = {"auto_pad", "dilations", "group", "kernel_shape",
                                          "pads",     "strides",   NULL};
    const ImportValue *x;
    const OnnxTensor *w, *b;
    int layer;
    Window2d win;
    int64_t pads[4];
    int st = import_check_attrs(im, n, allowed);
    st = st ? st : import_input_constant(im, n, 1, 0, &w);
    st = st ? st : import_input_constant(im, n, 2, 1, &b);
    if (st)
        return st;
    if (w->n_dims != 4)
        return import_refuse(im, n, "weight '%s' has %d dims: cdl convolutions are 2-D", w->name,
                             w->n_dims);
    st = import_window_attrs(im, n, w->dims + 2, &win, pads);
    st = st ? st : import_read_input(im, n, 0, &x, &layer);
    if (st)
        return st;
    const Shape in = import_layer_shape(im, layer);
    const int64_t groups = import_attr_int(n, "group", 1);
    const int64_t filters = w->dims[0];
    if (x->flat)
        return import_refuse(im, n, "its input is a vector, not a feature map");
    if (groups < 1 || in.c % groups || filters % groups || w->dims[1] * groups != in.c)
        return import_refuse(im, n,
                             "attribute group=%lld with weight [%lld,%lld,...] does not fit %d "
                             "input channels",
                             (long long)groups, (long long)filters, (long long)w->dims[1], in.c);
    if (w->dims[2] != win.size_h || w->dims[3] != win.size_w)
        return import_refuse(im, n, "kernel_shape does not match the weight's %lldx%lld",
                             (long long)w->dims[2], (long long)w->dims[3]);
    if (pads[0] != pads[2] || pads[1] != pads[3])
        return import_refuse(im, n,
                             "attribute pads=[%lld,%lld,%lld,%lld]: cdl convolutions pad both "
                             "sides alike",
                             (long long)pads[0], (long long)pads[1], (long long)pads[2],
                             (long long)pads[3]);
    if (b && (int64_t)b->count != filters)
        return import_refuse(im, n, "bias '%s' has %zu values for %lld filters", b->name, b->count,
                             (long long)filters);
    const int out_h = window_out_extent(in.h, win.size_h, win.stride_h, win.pad_h);
    const int out_w = window_out_extent(in.w, win.size_w, win.stride_w, win.pad_w);
    if (out_h < 1 || out_w < 1)
        return import_refuse(im, n, "the window is larger than its %dx%d input", in.h, in.w);
    ImportLayer *l = import_add_layer(im, K_CONV, n);
    if (!l)
        return CDL_ERUNTIME;
    l->filters = (int)filters;
    l->win = win;
    l->groups = (int)groups;
    l->out = (Shape){(int)filters, out_h, out_w};
    import_add_param(l, "weights", w->floats, w->count);
    l->no_bias = !b;
    if (b && !import_add_owned_param(im, l, "biases", b->floats, (size_t)filters))
        return CDL_ERUNTIME;
    return import_bind_output(im, n, im->n_layers - 1, 0);
}

/* [connected] reading layer with weights [outputs][inputs] (transposed from w when
 * transpose), biases from b (NULL: zeros). */
static int add_connected(Importer *im, const OnnxNode *n, int layer, const OnnxTensor *w,
                         int transpose, const OnnxTensor *b)
{
    const int64_t inputs = transpose ? w->dims[0] : w->dims[1];
    const int64_t outputs = transpose ? w->dims[1] : w->dims[0];
    const Shape in = import_layer_shape(im, layer);
    if (inputs != (int64_t)shape_size(in))
        return import_refuse(
            im, n, "weight '%s' [%lld,%lld] expects %lld inputs, its input has %zu", w->name,
            (long long)w->dims[0], (long long)w->dims[1], (long long)inputs, shape_size(in));
    if (b && (int64_t)b->count != outputs)
        return import_refuse(im, n, "bias '%s' has %zu values for %lld outputs", b->name, b->count,
                             (long long)outputs);
    ImportLayer *l = import_add_layer(im, K_CONNECTED, n);
    if (!l)
        return CDL_ERUNTIME;
    l->outputs = (int)outputs;
    l->out = (Shape){(int)outputs, 1, 1};
    l->flat = 1;
    float *wd = NULL;
    if (transpose && !(wd = import_add_owned_param(im, l, "weights", NULL, w->count)))
        return CDL_ERUNTIME;
    if (!transpose)
        import_add_param(l, "weights", w->floats, w->count);
    if (!import_add_owned_param(im, l, "biases", b ? b->floats : NULL, (size_t)outputs))
        return CDL_ERUNTIME;
    if (transpose)
        for (int64_t o = 0; o < outputs; o++)
            for (int64_t i = 0; i < inputs; i++)
                wd[o * inputs + i] = w->floats[i * outputs + o];
    return import_bind_output(im, n, im->n_layers - 1, 1);
}

int import_gemm(Importer *im, const OnnxNode *n)
{
    static const char *const allowed[] = {"alpha", "beta", "transA", "transB", NULL};
    const ImportValue *x;
    const OnnxTensor *w, *b;
    int layer;
    int st = import_check_attrs(im, n, allowed);
    st = st ? st : import_input_constant(im, n, 1, 0, &w);
    st = st ? st : import_input_constant(im, n, 2, 1, &b);
    if (st)
        return st;
    if (import_attr_int(n, "transA", 0))
        return import_refuse(im, n, "attribute transA=%lld is not supported",
                             (long long)import_attr_int(n, "transA", 0));
    if (import_attr_float(n, "alpha", 1.0f) != 1.0f)
        return import_refuse(im, n, "attribute alpha=%g is not supported (1 only)",
                             import_attr_float(n, "alpha", 1.0f));
    if (b && import_attr_float(n, "beta", 1.0f) != 1.0f)
        return import_refuse(im, n, "attribute beta=%g is not supported (1 only)",
                             import_attr_float(n, "beta", 1.0f));
    if (w->n_dims != 2)
        return import_refuse(im, n, "weight '%s' has %d dims, expected 2", w->name, w->n_dims);
    st = import_read_input(im, n, 0, &x, &layer);
    return st ? st : add_connected(im, n, layer, w, !import_attr_int(n, "transB", 0), b);
}

int import_matmul(Importer *im, const OnnxNode *n)
{
    const ImportValue *x;
    const OnnxTensor *w;
    int layer;
    int st = import_check_attrs(im, n, (const char *const[]){NULL});
    const OnnxTensor *transposed =
        n->n_inputs == 2 ? import_transposed_constant(im, n->inputs[1]) : NULL;
    if (!st && transposed) { /* cdl's own [linear] on token rows */
        st = import_input_layer(im, n, 0, &x);
        if (!st && import_is_rows(x->flat))
            return import_row_matmul(im, n, x, transposed, 1);
    }
    st = st ? st : import_input_constant(im, n, 1, 0, &w);
    if (st)
        return st;
    if (w->n_dims != 2)
        return import_refuse(im, n, "weight '%s' has %d dims, expected 2", w->name, w->n_dims);
    st = import_input_layer(im, n, 0, &x);
    if (!st && x->flat == VALUE_NHWC)
        return import_channel_matmul(im, n, x, w);
    if (!st && import_is_rows(x->flat))
        return import_row_matmul(im, n, x, w, 0);
    st = st ? st : import_read_input(im, n, 0, &x, &layer);
    if (!st && !x->flat && import_layer_shape(im, layer).h * import_layer_shape(im, layer).w != 1)
        return import_refuse(im, n, "multiplies a feature map, not a vector");
    st = st ? st : add_connected(im, n, layer, w, 1, NULL);
    if (!st)
        im->layers[im->n_layers - 1].open_bias = 1;
    return st;
}

int import_add(Importer *im, const OnnxNode *n)
{
    if (n->n_inputs != 2)
        return import_refuse(im, n, "expected 2 inputs");
    int st = import_check_attrs(im, n, (const char *const[]){NULL});
    if (st)
        return st;
    const ImportValue *a = import_find_value(im, n->inputs[0]),
                      *b = import_find_value(im, n->inputs[1]);
    if (!a || !b)
        return import_refuse(im, n, "input '%s' is not produced by any earlier node",
                             n->inputs[a ? 1 : 0]);
    if (a->constant || b->constant) { /* MatMul + Add: the connected layer's biases */
        const ImportValue *x = a->constant ? b : a;
        const OnnxTensor *c = a->constant ? a->constant : b->constant;
        ImportLayer *l = x->constant ? NULL : import_fold_target(im, x);
        if (!l || !l->open_bias)
            return import_refuse(im, n, "adds a constant to a value that is not a MatMul's output");
        const int outputs = l->kind == K_CONV ? l->filters : l->outputs;
        if (c->data_type != ONNX_READ_FLOAT || (int)c->count != outputs ||
            (c->n_dims && c->dims[c->n_dims - 1] != outputs)) /* along the last axis */
            return import_refuse(im, n, "constant '%s' has %zu values for %d outputs", c->name,
                                 c->count, outputs);
        memcpy(import_find_param(l, "biases")->owned, c->floats, c->count * sizeof(float));
        l->open_bias = 0;
        l->head = n->outputs[0];
        return import_bind_output(im, n, x->layer, x->flat);
    }
    const Shape sa = import_layer_shape(im, a->layer), sb = import_layer_shape(im, b->layer);
    if (sa.c != sb.c || sa.h != sb.h || sa.w != sb.w)
        return import_refuse(im, n,
                             "adds %dx%dx%d to %dx%dx%d: cdl shortcuts add equal shapes here", sa.c,
                             sa.h, sa.w, sb.c, sb.h, sb.w);
    const int last = im->n_layers - 1;
    const ImportValue *prev = b->layer == last ? b : a, *from = prev == a ? b : a;
    int layer;
    st = import_read_input(im, n, prev == a ? 0 : 1, &prev, &layer);
    if (st)
        return st;
    if (from->layer < 0)
        return import_refuse(im, n, "adds the graph input: a cdl [shortcut] reads a layer");
    ImportLayer *l = import_add_layer(im, K_SHORTCUT, n);
    if (!l)
        return CDL_ERUNTIME;
    l->refs[0] = from->layer;
    l->n_refs = 1;
    l->out = sa;
    if ((a->flat == VALUE_NHWC) != (b->flat == VALUE_NHWC))
        return import_refuse(im, n, "adds a channels-last map to a channels-first one");
    if ((import_is_rows(a->flat) || import_is_rows(b->flat)) && a->flat != b->flat)
        return import_refuse(im, n, "adds token rows to a value of another layout");
    l->flat = a->flat == VALUE_NHWC || import_is_rows(a->flat) ? a->flat : a->flat && b->flat;
    return import_bind_output(im, n, im->n_layers - 1, l->flat);
}

/* A [route] of refs (n of them) whose output is out. */
static ImportLayer *add_route(Importer *im, const OnnxNode *n, const int *refs, int n_refs,
                              Shape out)
{
    ImportLayer *l = import_add_layer(im, K_ROUTE, n);
    if (l) {
        memcpy(l->refs, refs, (size_t)n_refs * sizeof *refs);
        l->n_refs = n_refs;
        l->out = out;
    }
    return l;
}

/* Concat along channels: a [route] (a chain of them past LAYER_MAX_INPUTS inputs). */
int import_concat(Importer *im, const OnnxNode *n)
{
    int st = import_check_attrs(im, n, (const char *const[]){"axis", NULL});
    if (st)
        return st;
    const int64_t axis = import_attr_int(n, "axis", 1);
    if (axis != 1)
        return import_refuse(im, n, "attribute axis=%lld: cdl routes concatenate channels (axis 1)",
                             (long long)axis);
    if (n->n_inputs == 1) { /* cdl's export of a [route] of one channel group */
        const ImportValue *v;
        st = import_input_layer(im, n, 0, &v);
        return st ? st : import_bind_output(im, n, v->layer, v->flat);
    }
    int refs[LAYER_MAX_INPUTS], n_refs = 0, c = 0;
    Shape first = {0, 0, 0};
    for (int k = 0; k < n->n_inputs; k++) {
        const ImportValue *v;
        st = import_input_layer(im, n, k, &v);
        if (st)
            return st;
        if (v->layer < 0 || v->flat)
            return import_refuse(im, n, "input '%s' is %s: a [route] joins layers' feature maps",
                                 v->name,
                                 v->layer < 0              ? "the graph input"
                                 : v->flat == VALUE_VECTOR ? "a vector"
                                                           : "a channels-last map");
        const Shape s = import_layer_shape(im, v->layer);
        if (k && (s.h != first.h || s.w != first.w))
            return import_refuse(im, n, "joins %dx%d and %dx%d maps", first.h, first.w, s.h, s.w);
        first = k ? first : s;
        c += s.c;
        if (n_refs == LAYER_MAX_INPUTS) { /* more than a [route] takes: join these first */
            if (!add_route(im, n, refs, n_refs, (Shape){c - s.c, s.h, s.w}))
                return CDL_ERUNTIME;
            refs[0] = im->n_layers - 1;
            n_refs = 1;
        }
        refs[n_refs++] = v->layer;
    }
    if (!add_route(im, n, refs, n_refs, (Shape){c, first.h, first.w}))
        return CDL_ERUNTIME;
    return import_bind_output(im, n, im->n_layers - 1, 0);
}

int import_batchnorm(Importer *im, const OnnxNode *n)
{
    static const char *const allowed[] = {"epsilon",       "momentum", "spatial",
                                          "training_mode", "is_test",  NULL};
    const ImportValue *x;
    const OnnxTensor *t[4];
    int st = import_check_attrs(im, n, allowed);
    for (int k = 0; !st && k < 4; k++)
        st = import_input_constant(im, n, k + 1, 0, &t[k]);
    st = st ? st : import_input_layer(im, n, 0, &x);
    if (!st && x->flat == VALUE_NHWC)
        return import_refuse_channels_last(im, n);
    if (st)
        return st;
    if (import_attr_int(n, "training_mode", 0))
        return import_refuse(im, n, "attribute training_mode=1: only inference graphs import");
    if (import_attr_int(n, "spatial", 1) != 1)
        return import_refuse(im, n, "attribute spatial=0 is not supported");
    if (n->n_outputs > 1)
        return import_refuse(im, n,
                             "has %d outputs (running statistics): only inference graphs import",
                             n->n_outputs);
    const float eps = import_attr_float(n, "epsilon", 1e-5f);
    if (im->have_bn_eps && eps != im->bn_eps)
        return import_refuse(im, n,
                             "attribute epsilon=%g: cdl takes one epsilon per net and an "
                             "earlier node has %g",
                             eps, im->bn_eps);
    im->bn_eps = eps;
    im->have_bn_eps = 1;
    const Shape in = import_layer_shape(im, x->layer);
    for (int k = 0; k < 4; k++)
        if ((int)t[k]->count != in.c)
            return import_refuse(im, n, "'%s' has %zu values for %d channels", t[k]->name,
                                 t[k]->count, in.c);
    ImportLayer *l = import_fold_target(im, x);
    if (l && (l->kind == K_CONV || l->kind == K_CONNECTED) && !l->batch_normalize &&
        l->activation == CDL_ACT_LINEAR) {
        /* BN(conv + bias) = scale (conv - (mean - bias)) / sqrt(var + eps) + shift. */
        if (l->no_bias && !import_add_owned_param(im, l, "biases", NULL, t[1]->count))
            return CDL_ERUNTIME;
        l->no_bias = 0; /* the batch norm's shift takes the biases' place */
        ImportParam *bias = import_find_param(l, "biases");
        float *mean = import_add_owned_param(im, l, "rolling_mean", t[2]->floats, t[2]->count);
        if (!mean)
            return CDL_ERUNTIME;
        for (size_t c = 0; c < t[2]->count; c++)
            mean[c] -= bias->owned[c];
        memcpy(bias->owned, t[1]->floats, t[1]->count * sizeof(float));
        import_add_param(l, "scales", t[0]->floats, t[0]->count);
        import_add_param(l, "rolling_variance", t[3]->floats, t[3]->count);
        l->batch_normalize = 1;
        l->open_bias = 0;
        l->head = n->outputs[0];
        return import_bind_output(im, n, x->layer, x->flat);
    }
    int layer;
    st = import_read_input(im, n, 0, &x, &layer);
    if (st)
        return st;
    l = import_add_layer(im, K_BATCHNORM, n);
    if (!l)
        return CDL_ERUNTIME;
    l->out = in;
    l->flat = x->flat;
    const char *names[] = {"scales", "biases", "rolling_mean", "rolling_variance"};
    for (int k = 0; k < 4; k++)
        import_add_param(l, names[k], t[k]->floats, t[k]->count);
    return import_bind_output(im, n, im->n_layers - 1, x->flat);
}

int import_softmax(Importer *im, const OnnxNode *n)
{
    const ImportValue *x;
    int layer;
    int st = import_check_attrs(im, n, (const char *const[]){"axis", NULL});
    st = st ? st : import_read_input(im, n, 0, &x, &layer);
    if (!st && x->flat == VALUE_NHWC)
        return import_refuse_channels_last(im, n);
    if (!st && import_is_rows(x->flat))
        return import_refuse(im, n,
                             "a softmax of each token row: cdl's [softmax] in an image "
                             "net runs over all the features of a sample");
    if (st)
        return st;
    const Shape in = import_layer_shape(im, layer);
    const int64_t axis = import_attr_int(n, "axis", im->m->opset >= 13 ? -1 : 1);
    const int rank = x->flat ? 2 : 4;
    const int vector = x->flat || (in.h == 1 && in.w == 1);
    if (!vector || !(axis == 1 || (axis == -1 && rank == 2) || (axis == 3 && in.c == 1) ||
                     (axis == -1 && in.c == 1)))
        return import_refuse(im, n,
                             "attribute axis=%lld over a %dx%dx%d value: cdl's [softmax] runs "
                             "over all the features of a sample",
                             (long long)axis, in.c, in.h, in.w);
    ImportLayer *l = import_add_layer(im, K_SOFTMAX, n);
    if (!l)
        return CDL_ERUNTIME;
    l->out = in;
    l->flat = x->flat;
    return import_bind_output(im, n, im->n_layers - 1, x->flat);
}

/* Flatten(axis 1) and Reshape to [N, features]: the same values as a vector. */
int import_flatten(Importer *im, const OnnxNode *n, int reshape)
{
    const ImportValue *x;
    int st = import_check_attrs(im, n,
                                reshape ? (const char *const[]){"allowzero", NULL}
                                        : (const char *const[]){"axis", NULL});
    st = st ? st : import_input_layer(im, n, 0, &x);
    if (!st && x->flat == VALUE_NHWC)
        return import_refuse_channels_last(im, n);
    if (st)
        return st;
    const size_t features = shape_size(import_layer_shape(im, x->layer));
    if (!reshape && import_attr_int(n, "axis", 1) != 1)
        return import_refuse(im, n, "attribute axis=%lld: only a flatten to [N, features] (axis 1)",
                             (long long)import_attr_int(n, "axis", 1));
    if (reshape) {
        const OnnxTensor *shape;
        st = import_input_constant(im, n, 1, 2, &shape);
        if (st)
            return st;
        if (!shape)
            return import_refuse(im, n, "has no shape input");
        if (shape->data_type == ONNX_READ_INT64 && shape->count == 5 && import_is_rows(x->flat))
            return import_own_attention(im, n, x, shape);
        if (shape->data_type == ONNX_READ_INT64 && shape->count == 5)
            return import_channel_shuffle(im, n, shape);
        if (shape->data_type == ONNX_READ_INT64 && shape->count == 3)
            return import_tokens(im, n, x, shape);
        char buf[128], batch[24] = "N";
        const int64_t *d = shape->ints;
        if (im->batch > 0)
            snprintf(batch, sizeof batch, "%lld", (long long)im->batch);
        /* N is 0 (copied), -1 (inferred), the input's fixed batch, or 1 when that is symbolic */
        if (shape->data_type != ONNX_READ_INT64 || shape->count != 2 ||
            !(d[0] == 0 || d[0] == -1 || d[0] == (im->batch < 0 ? 1 : im->batch)) ||
            !(d[1] == -1 || d[1] == (int64_t)features) || (d[0] == -1 && d[1] == -1))
            return import_refuse(
                im, n, "shape %s: only a flatten to [%s, %zu] is supported",
                shape->ints ? import_ints_text(d, (int)shape->count, buf, sizeof buf) : "?", batch,
                features);
    }
    return import_bind_output(im, n, x->layer, 1);
}

/* Identity, Dropout: the input value (a layer's or a constant) under another name. */
int import_alias(Importer *im, const OnnxNode *n)
{
    const ImportValue *x = import_find_value(im, n->inputs[0]);
    if (x && x->constant)
        return import_bind(im, n->outputs[0], 0, x->constant, 0);
    const ImportValue *mode =
        n->n_inputs > 2 && n->inputs[2][0] ? import_find_value(im, n->inputs[2]) : NULL;
    if (mode && (!mode->constant || mode->constant->data_type != ONNX_READ_INT64 ||
                 mode->constant->count != 1 || mode->constant->ints[0]))
        return import_refuse(im, n,
                             "input training_mode is not a constant false: only "
                             "inference graphs import");
    int st = import_input_layer(im, n, 0, &x);
    if (!st && n->n_outputs > 1 && n->outputs[1][0] && import_readers(im, n->outputs[1]))
        return import_refuse(im, n, "its mask output is read: only inference graphs import");
    return st ? st : import_bind_output(im, n, x->layer, x->flat);
}

int import_constant(Importer *im, const OnnxNode *n)
{
    const OnnxAttribute *a = onnx_node_attr(n, "value");
    if (n->n_attrs != 1 || !a || !a->t)
        return import_refuse(im, n, "only a Constant with a tensor 'value' is supported");
    return import_bind(im, n->outputs[0], 0, a->t, 0);
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
int import_normalisation(Importer *im, const OnnxNode *n, int sub, int div)
{
    const ImportValue *x = n->n_inputs == 2 ? import_find_value(im, n->inputs[0]) : NULL;
    const ImportValue *c = n->n_inputs == 2 ? import_find_value(im, n->inputs[1]) : NULL;
    const int channels = im->in_shape.c;
    if (!x || !c || x->constant || x->layer != -1 || !c->constant || im->n_layers ||
        im->normalised != (sub ? 0 : 1) || channels > 3 ||
        c->constant->data_type != ONNX_READ_FLOAT)
        return import_refuse(im, n,
                             "only a per-channel Sub then Mul or Div of constants right at the "
                             "graph input (the [net] mean/std normalisation) is supported");
    const OnnxTensor *t = c->constant;
    const char *along = constant_varies_along(t, im->batch, im->in_shape);
    if (!along || *along) {
        char buf[128], how[64] = "does not broadcast against";
        if (along)
            snprintf(how, sizeof how, "varies along %s of", along);
        return import_refuse(
            im, n,
            "constant '%s' of shape %s %s the [N,%d,%d,%d] input (ONNX aligns shapes "
            "on the right): cdl's [net] mean/std hold one value per channel (shape "
            "[%d,1,1] or [1,%d,1,1])",
            n->inputs[1], import_ints_text(t->dims, t->n_dims, buf, sizeof buf), how, channels,
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
    return import_bind_output(im, n, -1, 0);
}
