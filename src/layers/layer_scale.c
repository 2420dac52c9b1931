/* [layer_scale]: a learnable multiplier per channel, ConvNeXt's layer scale (torchvision's CNBlock
 * layer_scale, gamma [c][1][1]; CaiT's per feature of a token).
 *
 *   in, out [batch][c][h][w]   scales [n]: n = c in an image net, w (a token's features) in a
 *   sequence net (layers/channel_axis.h)
 *   out[b][k][i] = scales[k] * in[b][k][i]
 *
 * scales start at init= (ConvNeXt's 1e-6) and take no weight decay, as [layernorm]'s. */
#include "layers/layer_scale.h"

#include "core/net.h"
#include "core/onnx_graph.h"

static int layer_scale_parse(Layer *l, const Cfg *cfg, CfgSection *s, const Net *net, Error *e)
{
    float init;
    int st = cfg_get_float(cfg, s, "init", 1e-6f, &init, e);
    if (st)
        return st;
    LayerScale *ls = l->priv;
    ls->axis = channel_axis(l->in_shape, net->seq > 0);
    l->out_shape = l->in_shape;
    layer_add_param(l, "scales", 1, 0, 1, (int64_t[]){ls->axis.n});
    l->flops = (double)shape_size(l->in_shape);
    ls->init = init;
    return CDL_OK;
}

static void layer_scale_init(Layer *l, Rng *rng)
{
    (void)rng;
    const LayerScale *ls = l->priv;
    for (int k = 0; k < ls->axis.n; k++)
        l->params[0].data[k] = ls->init;
}

/* A Mul by the scales, [n][1][1] over an image's planes, [n] over a token's features. */
static int layer_scale_export_onnx(const Layer *l, const Net *net, OnnxGraph *g, Error *e)
{
    (void)net, (void)e;
    char x[ONNX_NAME_MAX], scales[ONNX_NAME_MAX];
    onnx_input_nchw(g, l, 0, x);
    onnx_param_along(g, l, 0, ((const LayerScale *)l->priv)->axis.channels, scales);
    onnx_node(g, "Mul", 2, (const char *[]){x, scales}, onnx_output(g, l, 0), 0, NULL);
    return CDL_OK;
}

const LayerType layer_scale_layer = {
    .name = "layer_scale",
    .priv_size = sizeof(LayerScale),
    .parse = layer_scale_parse,
    .init = layer_scale_init,
    .export_onnx = layer_scale_export_onnx,
    .backward_ignores_output = 1,
    .splits_batch = 1,
};
