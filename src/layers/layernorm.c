/* [layernorm]: layer normalisation of each row of w values, as torch.nn.LayerNorm(w, eps).
 *
 *   in, out [batch][rows][w] (rows = c*h: the T tokens of a sequence net, w = C)
 *   out[r] = (in[r] - mean(in[r])) / sqrt(var(in[r]) + eps) * scales + biases
 *   (var is the biased variance); scales [w] start at 1, biases [w] at 0.
 *
 * Its CPU kernels are in backend/cpu/layernorm.c. */
#include "layers/layernorm.h"

#include "core/net.h"
#include "core/onnx_graph.h"

static int layernorm_parse(Layer *l, const Cfg *cfg, CfgSection *s, const Net *net, Error *e)
{
    (void)net;
    float eps;
    int st = cfg_get_float(cfg, s, "eps", 1e-5f, &eps, e);
    if (st)
        return st;
    if (!(eps > 0))
        return cfg_bad_value(cfg, s, "eps", e, "must be > 0");
    LayerNorm *ln = l->priv;
    ln->eps = eps;
    l->out_shape = l->in_shape;
    layer_add_param(l, "scales", 1, 0, 1, (int64_t[]){l->in_shape.w});
    layer_add_param(l, "biases", 1, 0, 1, (int64_t[]){l->in_shape.w});
    /* mean, variance, then a multiply-add per value */
    l->flops = 5.0 * (double)shape_size(l->in_shape);
    return CDL_OK;
}

static void layernorm_init(Layer *l, Rng *rng)
{
    (void)rng;
    for (int j = 0; j < l->in_shape.w; j++) {
        l->params[P_SCALES].data[j] = 1;
        l->params[P_BIASES].data[j] = 0;
    }
}

/* The normalisation over the last axis from ReduceMean, Sub, Mul, Sqrt and Div, which every
 * opset from 13 has (LayerNormalization only comes with opset 17). */
static int layernorm_export_onnx(const Layer *l, const Net *net, OnnxGraph *g, Error *e)
{
    (void)net, (void)e;
    static const char *const suffixes[] = {"mean",    "centered", "squares",    "variance", "eps",
                                           "var_eps", "std",      "normalized", "scaled",   NULL};
    char x[ONNX_NAME_MAX], v[9][ONNX_NAME_MAX], scales[ONNX_NAME_MAX], biases[ONNX_NAME_MAX];
    for (int k = 0; suffixes[k]; k++)
        onnx_name(v[k], l, suffixes[k]);
    enum { MEAN, CENTERED, SQUARES, VARIANCE, EPS, VAR_EPS, STD, NORMALIZED, SCALED };
    onnx_input_nchw(g, l, 0, x);
    onnx_param(g, l, P_SCALES, scales);
    onnx_param(g, l, P_BIASES, biases);
    onnx_scalar(g, v[EPS], ((const LayerNorm *)l->priv)->eps);
    const int64_t last[] = {-1};
    const OnnxAttr reduce[] = {onnx_attr_ints("axes", last, 1), onnx_attr_int("keepdims", 1)};
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
    const size_t rows = (size_t)batch * (size_t)l->in_shape.c * (size_t)l->in_shape.h;
    ln->mean = layer_state_floats(st, rows);
    ln->inv_std = layer_state_floats(st, rows);
    return CDL_OK;
}

const LayerType layernorm_layer = {
    .name = "layernorm",
    .priv_size = sizeof(LayerNorm),
    .parse = layernorm_parse,
    .init = layernorm_init,
    .export_onnx = layernorm_export_onnx,
    .splits_batch = 1,
};
