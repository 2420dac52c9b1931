/* [batchnorm]: standalone per-channel batch normalisation, as darknet's layer.
 *
 *   in, out [batch][c][h][w]
 *   scales, biases (trainable), rolling_mean, rolling_variance [c]
 *
 * out = act(normalised input), `activation=` [linear]: with relu it is DenseNet's pre-activation
 * (BN then ReLU on a tensor no convolution wrote). Its CPU kernels are in
 * backend/cpu/batchnorm.c. */
#include "core/net.h"
#include "layers/bias_norm.h"

static int bn_layer_parse(Layer *l, const Cfg *cfg, CfgSection *s, const Net *net, Error *e)
{
    (void)net;
    BiasNorm *bn = l->priv;
    l->out_shape = l->in_shape;
    int st = layer_parse_activation(l, cfg, s, CDL_ACT_LINEAR, e);
    if (st)
        return st;
    bias_norm_declare(bn, l, 1, 1, l->in_shape.c, l->in_shape.h * l->in_shape.w);
    l->flops = 2.0 * (double)shape_size(l->in_shape);
    return CDL_OK;
}

static void bn_layer_init(Layer *l, Rng *rng)
{
    (void)rng;
    bias_norm_init(l->priv, l);
}

static int bn_layer_export_onnx(const Layer *l, const Net *net, OnnxGraph *g, Error *e)
{
    (void)e;
    char x[ONNX_NAME_MAX], pre[ONNX_NAME_MAX];
    onnx_input_nchw(g, l, 0, x);
    const char *out = onnx_output(g, l, 0);
    onnx_activation_input(pre, l->activation, out);
    bias_norm_onnx_batchnorm(l->priv, l, net, g, x, pre);
    onnx_activation(g, l->activation, pre, out);
    return CDL_OK;
}

static int bn_layer_set_size(Layer *l, const Net *net, Error *e)
{
    BiasNorm *bn = l->priv;
    layer_size_follow_input(l, net, e);
    bn->spatial = l->in_shape.h * l->in_shape.w;
    l->flops = 2.0 * (double)shape_size(l->in_shape);
    return CDL_OK;
}

const LayerType batchnorm_layer = {
    .name = "batchnorm",
    .priv_size = sizeof(BiasNorm),
    .parse = bn_layer_parse,
    .init = bn_layer_init,
    .export_onnx = bn_layer_export_onnx,
    .set_size = bn_layer_set_size,
    .darknet_weights = DARKNET_BATCHNORM,
    .backward_ignores_inputs = 1,
    .backward_ignores_output = 1,
};
