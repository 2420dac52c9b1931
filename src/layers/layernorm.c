/* [layernorm]: layer normalisation of each row of w values, as torch.nn.LayerNorm(w, eps); with
 * channels=1, of each position's c values in an image, as ConvNeXt's LayerNorm2d (torchvision's
 * F.layer_norm over the channels of the map permuted to [batch][h][w][c]).
 *
 *   in, out [batch][rows][w] (rows = c*h: the T tokens of a sequence net, w = C), or with
 *   channels=1 [batch][c][h*w]; x a group of n values along the axis (w, or c)
 *   out[x] = (x - mean(x)) / sqrt(var(x) + eps) * scales + biases
 *   (var is the biased variance); scales [n] start at 1, biases [n] at 0.
 *
 * Its CPU kernels are in backend/cpu/layernorm.c. */
#include "layers/layernorm.h"

#include "core/net.h"
#include "core/onnx_graph.h"

static int layernorm_parse(Layer *l, const Cfg *cfg, CfgSection *s, const Net *net, Error *e)
{
    float eps;
    int channels;
    int st = cfg_get_float(cfg, s, "eps", 1e-5f, &eps, e);
    st = st ? st : cfg_get_int(cfg, s, "channels", 0, &channels, e);
    if (st)
        return st;
    if (!(eps > 0))
        return cfg_bad_value(cfg, s, "eps", e, "must be > 0");
    if (channels != 0 && channels != 1)
        return cfg_bad_value(cfg, s, "channels", e, "expected 0 or 1");
    if (channels && net->seq > 0)
        return layer_bad_key(l, cfg, s, "channels", channels,
                             "a sequence net normalises each token's features (channels=0)", e);
    LayerNorm *ln = l->priv;
    ln->eps = eps;
    ln->axis = channel_axis(l->in_shape, !channels);
    l->out_shape = l->in_shape;
    layer_add_param(l, "scales", 1, 0, 1, (int64_t[]){ln->axis.n});
    layer_add_param(l, "biases", 1, 0, 1, (int64_t[]){ln->axis.n});
    /* mean, variance, then a multiply-add per value */
    l->flops = 5.0 * (double)shape_size(l->in_shape);
    return CDL_OK;
}

static void layernorm_init(Layer *l, Rng *rng)
{
    (void)rng;
    for (int j = 0; j < ((const LayerNorm *)l->priv)->axis.n; j++) {
        l->params[P_SCALES].data[j] = 1;
        l->params[P_BIASES].data[j] = 0;
    }
}

/* The normalisation over the last axis (or the channels, axis 1, with scales and biases
 * [c][1][1]) from ReduceMean, Sub, Mul, Sqrt and Div, which every opset from 13 has
 * (LayerNormalization only comes with opset 17, and over the last axes only). */
static int layernorm_export_onnx(const Layer *l, const Net *net, OnnxGraph *g, Error *e)
{
    (void)net, (void)e;
    static const char *const suffixes[] = {"mean",    "centered", "squares",    "variance", "eps",
                                           "var_eps", "std",      "normalized", "scaled",   NULL};
    char x[ONNX_NAME_MAX], v[9][ONNX_NAME_MAX], scales[ONNX_NAME_MAX], biases[ONNX_NAME_MAX];
    for (int k = 0; suffixes[k]; k++)
        onnx_name(v[k], l, suffixes[k]);
    enum { MEAN, CENTERED, SQUARES, VARIANCE, EPS, VAR_EPS, STD, NORMALIZED, SCALED };
    const LayerNorm *ln = l->priv;
    const int planes = ln->axis.channels;
    onnx_input_nchw(g, l, 0, x);
    onnx_param_along(g, l, P_SCALES, planes, scales);
    onnx_param_along(g, l, P_BIASES, planes, biases);
    onnx_scalar(g, v[EPS], ln->eps);
    const int64_t axis[] = {planes ? 1 : -1};
    const OnnxAttr reduce[] = {onnx_attr_ints("axes", axis, 1), onnx_attr_int("keepdims", 1)};
    onnx_node(g, "ReduceMean", 1, (const char *[]){x}, v[MEAN], 2, reduce);
    onnx_node(g, "Sub", 2, (const char *[]){x, v[MEAN]}, v[CENTERED], 0, NULL);
    onnx_node(g, "Mul", 2, (const char *[]){v[CENTERED], v[CENTERED]}, v[SQUARES], 0, NULL);
    onnx_node(g, "ReduceMean", 1, (const char *[]){v[SQUARES]}, v[VARIANCE], 2, reduce);
    onnx_node(g, "Add", 2, (const char *[]){v[VARIANCE], v[EPS]}, v[VAR_EPS], 0, NULL);
    onnx_node(g, "Sqrt", 1, (const char *[]){v[VAR_EPS]}, v[STD], 0, NULL);
    onnx_node(g, "Div", 2, (const char *[]){v[CENTERED], v[STD]}, v[NORMALIZED], 0, NULL);
    onnx_node(g, "Mul", 2, (const char *[]){v[NORMALIZED], scales}, v[SCALED], 0, NULL);
    onnx_node(g, "Add", 2, (const char *[]){v[SCALED], biases}, onnx_output(g, l, 0), 0, NULL);
    return CDL_OK;
}

int layernorm_resize(Layer *l, int batch, LayerState *st, Error *e)
{
    (void)e;
    LayerNorm *ln = l->priv;
    const size_t groups = (size_t)batch * (size_t)ln->axis.groups * (size_t)ln->axis.inner;
    ln->mean = layer_state_floats(st, groups);
    ln->inv_std = layer_state_floats(st, groups);
    return CDL_OK;
}

static void layernorm_set_rows(Layer *l, const Net *net)
{
    LayerNorm *ln = l->priv;
    layer_rows_follow_input(l, net);
    ln->axis = channel_axis(l->in_shape, !ln->axis.channels);
}

const LayerType layernorm_layer = {
    .name = "layernorm",
    .set_rows = layernorm_set_rows,
    .priv_size = sizeof(LayerNorm),
    .parse = layernorm_parse,
    .init = layernorm_init,
    .export_onnx = layernorm_export_onnx,
    .splits_batch = 1,
};
