/* [batchnorm]: standalone per-channel batch normalisation, as darknet's layer.
 *
 *   in, out [batch][c][h][w]
 *   scales, biases (trainable), rolling_mean, rolling_variance [c]
 *
 * No activation key: the output is the normalised input. */
#include <stdlib.h>

#include "core/layer.h"
#include "core/net.h"
#include "layers/bias_norm.h"

static int bn_layer_parse(Layer *l, const Cfg *cfg, CfgSection *s, const Net *net, Error *e)
{
    (void)cfg;
    (void)s;
    (void)net;
    BiasNorm *bn = calloc(1, sizeof *bn);
    if (!bn)
        return error_set(e, CDL_ERUNTIME, "out of memory");
    l->priv = bn;
    l->out_shape = l->in_shape;
    l->activation = CDL_ACT_LINEAR;
    bias_norm_declare(bn, l, 1, l->in_shape.c, l->in_shape.h * l->in_shape.w);
    l->flops = 2.0 * (double)shape_size(l->in_shape);
    return CDL_OK;
}

static void bn_layer_init(Layer *l, Rng *rng)
{
    (void)rng;
    bias_norm_init(l->priv, l);
}

static int bn_layer_resize(Layer *l, int batch, Error *e)
{
    return bias_norm_resize(l->priv, l, batch, e);
}

static void bn_layer_forward(Layer *l, Net *net)
{
    bias_norm_forward(l->priv, l, net, net_layer_input(net, l, 0), l->out);
}

static void bn_layer_backward(Layer *l, Net *net)
{
    /* dL/dx is computed in place in l->delta, then added into the input's delta. */
    bias_norm_backward(l->priv, l, net, l->delta);
    float *dx = net_layer_input_delta(net, l, 0);
    if (!dx)
        return;
    const size_t n = (size_t)net->batch * shape_size(l->in_shape);
#pragma omp parallel for simd schedule(static) if (n >= 65536)
    for (size_t i = 0; i < n; i++)
        dx[i] += l->delta[i];
}

static void bn_layer_destroy(Layer *l)
{
    if (!l->priv)
        return;
    bias_norm_free(l->priv);
    free(l->priv);
    l->priv = NULL;
}

static int bn_layer_export_onnx(const Layer *l, const Net *net, OnnxGraph *g, Error *e)
{
    (void)e;
    char x[ONNX_NAME_MAX];
    onnx_input_nchw(g, l, 0, x);
    bias_norm_onnx_batchnorm(l->priv, l, net, g, x, onnx_output(g, l, 0));
    return CDL_OK;
}

const LayerType batchnorm_layer = {
    .name = "batchnorm",
    .parse = bn_layer_parse,
    .init = bn_layer_init,
    .resize = bn_layer_resize,
    .forward = bn_layer_forward,
    .backward = bn_layer_backward,
    .destroy = bn_layer_destroy,
    .export_onnx = bn_layer_export_onnx,
};
