/* [scale_channels]: AlexeyAB darknet's channel-wise scaling, the end of a squeeze-excitation
 * block: every plane of the layer named by from= times its channel's value of the previous layer
 * (the excitation, [c][1][1] after an [avgpool] and two 1x1 convolutions), then the activation.
 *
 *   scale [batch][c][1][1]   the previous layer (input 0)
 *   from  [batch][c][h][w]   the layer named by from= (input 1); also the output shape
 *   out   [batch][c][h][w]   out[b][k][i] = act(scale[b][k] * from[b][k][i])
 *
 * darknet's scale_wh=1 (one value per position instead of per channel) is refused. */
#include "core/net.h"
#include "core/onnx_graph.h"

static int scale_channels_parse(Layer *l, const Cfg *cfg, CfgSection *s, const Net *net, Error *e)
{
    int index, scale_wh;
    int st = layer_parse_from(l, cfg, s, "from", &index, e);
    st = st ? st : layer_parse_activation(l, cfg, s, CDL_ACT_LINEAR, e);
    st = st ? st : cfg_get_int(cfg, s, "scale_wh", 0, &scale_wh, e);
    if (st)
        return st;
    if (scale_wh != 0)
        return layer_bad_key(l, cfg, s, "scale_wh", scale_wh,
                             "only 0 (a scale per channel) is supported", e);
    const Shape scale = l->in_shape, from = net->layers[index].out_shape;
    if (scale.h != 1 || scale.w != 1 || scale.c != from.c)
        return error_set(e, CDL_EUSAGE,
                         "%s: layer %d [%s]: the previous layer must hold one value per channel "
                         "of layer %d (%dx1x1), not %dx%dx%d (CxHxW)",
                         cfg_where(cfg, s, cfg_find(s, "from")).text, l->index, s->name, index,
                         from.c, scale.c, scale.h, scale.w);
    l->inputs[1] = index;
    l->n_inputs = 2;
    l->out_shape = from;
    l->flops = (double)shape_size(from);
    return CDL_OK;
}

/* Mul broadcasts the scale [N][c][1][1] over from [N][c][h][w]. */
static int scale_channels_export_onnx(const Layer *l, const Net *net, OnnxGraph *g, Error *e)
{
    (void)net, (void)e;
    char scale[ONNX_NAME_MAX], from[ONNX_NAME_MAX], pre[ONNX_NAME_MAX];
    onnx_input_nchw(g, l, 0, scale);
    onnx_input_nchw(g, l, 1, from);
    const char *out = onnx_output(g, l, 0);
    onnx_activation_input(pre, l->activation, out);
    onnx_node(g, "Mul", 2, (const char *[]){from, scale}, pre, 0, NULL);
    onnx_activation(g, l->activation, pre, out);
    return CDL_OK;
}

const LayerType scale_channels_layer = {
    .name = "scale_channels",
    .parse = scale_channels_parse,
    .export_onnx = scale_channels_export_onnx,
    .backward_ignores_output = 1,
    .splits_batch = 1,
};
