/* [shortcut]: residual sum, out = act(alpha * prev + beta * from), as darknet.
 *
 *   prev [batch][c2][h2][w2]   the previous layer; also the output shape
 *   from [batch][c1][h1][w1]   the layer named by from=
 *   out  [batch][c2][h2][w2]
 *
 * When the shapes differ, darknet's mapping applies: per axis, a larger `from` is read
 * with stride w1/w2, a smaller one is written every w2/w1 outputs; only the first
 * min(c1, c2) channels are summed. Unlike darknet, alpha scales every output value,
 * not only those that receive a `from` value (the same when alpha = 1, the default),
 * and each axis has its own ratio where darknet asserts they agree. */
#include "layers/shortcut.h"

#include <stdio.h>
#include <string.h>

#include "core/net.h"
#include "core/onnx_graph.h"

static int shortcut_parse(Layer *l, const Cfg *cfg, CfgSection *s, const Net *net, Error *e)
{
    int index;
    float alpha, beta;
    int st = layer_parse_from(l, cfg, s, "from", &index, e);
    st = st ? st : layer_parse_activation(l, cfg, s, CDL_ACT_LINEAR, e);
    st = st ? st : cfg_get_float(cfg, s, "alpha", 1.0f, &alpha, e);
    st = st ? st : cfg_get_float(cfg, s, "beta", 1.0f, &beta, e);
    if (st)
        return st;
    l->inputs[1] = index;
    l->n_inputs = 2;
    l->out_shape = l->in_shape;
    const Shape fs = net->layers[index].out_shape;
    if (net->seq > 0 && !shortcut_same_shape(fs, l->out_shape))
        return error_set(e, CDL_EUSAGE,
                         "%s: layer %d [%s]: in a sequence net the layers added must have one "
                         "shape (layer %d is %dx%dx%d, the input %dx%dx%d)",
                         cfg_where(cfg, s, cfg_find(s, "from")).text, l->index, s->name, index,
                         fs.c, fs.h, fs.w, l->out_shape.c, l->out_shape.h, l->out_shape.w);
    l->flops = 2.0 * (double)shape_size(l->out_shape);
    Shortcut *sc = l->priv;
    sc->alpha = alpha;
    sc->beta = beta;
    sc->from = fs;
    return CDL_OK;
}

/* ONNX: value = op(value, int64 vector), the result named "layer<i>.<suffix>" and the
 * vector "layer<i>.<suffix>.arg". */
static void shortcut_onnx_op(OnnxGraph *g, const Layer *l, const char *op, const char *suffix,
                             int n, const int64_t *arg, char value[ONNX_NAME_MAX])
{
    char out[ONNX_NAME_MAX], konst[ONNX_NAME_MAX + 4];
    onnx_name(out, l, suffix);
    snprintf(konst, sizeof konst, "%s.arg", out);
    onnx_int64s(g, konst, n, arg);
    onnx_node(g, op, 2, (const char *[]){value, konst}, out, 0, NULL);
    memcpy(value, out, ONNX_NAME_MAX);
}

/* ONNX: value = factor * value, named "layer<i>.<suffix>". */
static void shortcut_onnx_scale(OnnxGraph *g, const Layer *l, const char *suffix, float factor,
                                char value[ONNX_NAME_MAX])
{
    char out[ONNX_NAME_MAX], konst[ONNX_NAME_MAX + 7];
    onnx_name(out, l, suffix);
    snprintf(konst, sizeof konst, "%s.factor", out);
    onnx_scalar(g, konst, factor);
    onnx_node(g, "Mul", 2, (const char *[]){value, konst}, out, 0, NULL);
    memcpy(value, out, ONNX_NAME_MAX);
}

/* ONNX for the shape-changing mapping: value, `from` [N][c1][h1][w1], becomes beta * from
 * mapped onto the output [N][c2][h2][w2] with zeros elsewhere. Slice with steps takes the
 * strided channels, rows and columns; a Reshape to rank 6, Pad and Reshape back spread them
 * every sample_h rows and sample_w columns; a last Pad adds the missing channels, rows and
 * columns. */
static void shortcut_onnx_mapping(OnnxGraph *g, const Layer *l, ShortcutMapping m, float beta,
                                  char value[ONNX_NAME_MAX])
{
    char out[ONNX_NAME_MAX], arg[4][ONNX_NAME_MAX + 7];
    const int64_t starts[] = {0, 0, 0}, axes[] = {1, 2, 3}, steps[] = {1, m.stride_h, m.stride_w};
    const int64_t ends[] = {m.channels, (int64_t)m.rows * m.stride_h, (int64_t)m.cols * m.stride_w};
    const int64_t *const args[] = {starts, ends, axes, steps};
    const char *const arg_names[] = {"starts", "ends", "axes", "steps"};
    onnx_name(out, l, "from_sliced");
    for (int k = 0; k < 4; k++) {
        snprintf(arg[k], sizeof arg[k], "%s.%s", out, arg_names[k]);
        onnx_int64s(g, arg[k], 3, args[k]);
    }
    onnx_node(g, "Slice", 5, (const char *[]){value, arg[0], arg[1], arg[2], arg[3]}, out, 0, NULL);
    memcpy(value, out, ONNX_NAME_MAX);
    if (beta != 1.0f)
        shortcut_onnx_scale(g, l, "from_scaled", beta, value);

    const int64_t spread_h = (int64_t)m.rows * m.sample_h, spread_w = (int64_t)m.cols * m.sample_w;
    if (m.sample_h > 1 || m.sample_w > 1) {
        const int64_t rank6[] = {0, m.channels, m.rows, 1, m.cols, 1};
        const int64_t gaps[] = {0, 0, 0, 0, 0, 0, 0, 0, 0, m.sample_h - 1, 0, m.sample_w - 1};
        const int64_t spread[] = {0, m.channels, spread_h, spread_w};
        shortcut_onnx_op(g, l, "Reshape", "from_rank6", 6, rank6, value);
        shortcut_onnx_op(g, l, "Pad", "from_gapped", 12, gaps, value);
        shortcut_onnx_op(g, l, "Reshape", "from_spread", 4, spread, value);
    }
    const Shape o = l->out_shape;
    const int64_t fill[] = {0, 0, 0, 0, 0, o.c - m.channels, o.h - spread_h, o.w - spread_w};
    if (fill[5] || fill[6] || fill[7])
        shortcut_onnx_op(g, l, "Pad", "from_mapped", 8, fill, value);
}

/* out = act(alpha * prev + beta * from), from mapped as darknet when the shapes differ. */
static int shortcut_export_onnx(const Layer *l, const Net *net, OnnxGraph *g, Error *e)
{
    (void)net;
    const Shortcut *sc = l->priv;
    char prev[ONNX_NAME_MAX], from[ONNX_NAME_MAX], pre[ONNX_NAME_MAX];
    const Shape fs = shortcut_from_shape(l);
    if (g->sequence && !shortcut_same_shape(fs, l->out_shape))
        return error_set(
            e, CDL_EUSAGE,
            "layer %d [shortcut]: a sum of differently shaped inputs in a sequence net "
            "is not exported",
            l->index);
    onnx_input_nchw(g, l, 0, prev);
    onnx_input_nchw(g, l, 1, from);
    if (!shortcut_same_shape(fs, l->out_shape))
        shortcut_onnx_mapping(g, l, shortcut_mapping(fs, l->out_shape), sc->beta, from);
    else if (sc->beta != 1.0f)
        shortcut_onnx_scale(g, l, "from_scaled", sc->beta, from);
    if (sc->alpha != 1.0f)
        shortcut_onnx_scale(g, l, "prev_scaled", sc->alpha, prev);
    const char *out = onnx_output(g, l, 0);
    onnx_activation_input(pre, l->activation, out);
    onnx_node(g, "Add", 2, (const char *[]){prev, from}, pre, 0, NULL);
    onnx_activation(g, l->activation, pre, out);
    return CDL_OK;
}

static void shortcut_set_rows(Layer *l, const Net *net)
{
    layer_rows_follow_input(l, net);
    ((Shortcut *)l->priv)->from = net->layers[l->inputs[1]].out_shape;
}

static int shortcut_set_size(Layer *l, const Net *net, Error *e)
{
    ((Shortcut *)l->priv)->from = net->layers[l->inputs[1]].out_shape;
    return layer_size_follow_input(l, net, e);
}

const LayerType shortcut_layer = {
    .name = "shortcut",
    .set_rows = shortcut_set_rows,
    .set_size = shortcut_set_size,
    .priv_size = sizeof(Shortcut),
    .parse = shortcut_parse,
    .writes_input_delta = 1,
    .export_onnx = shortcut_export_onnx,
    .backward_ignores_inputs = 1,
    .backward_ignores_output = 1,
    .splits_batch = 1,
};
