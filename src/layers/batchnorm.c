/* [batchnorm]: standalone per-channel batch normalisation, as darknet's layer.
 *
 *   in, out [batch][c][h][w]
 *   scales, biases (trainable), rolling_mean, rolling_variance [c]
 *
 * No activation key: the output is the normalised input. */
#include <stdlib.h>

#include "core/layer.h"
#include "core/net.h"
#include "ops/batchnorm.h"

/* Positions in l->params, in the order parse declares them. */
enum { P_SCALES, P_BIASES, P_ROLLING_MEAN, P_ROLLING_VARIANCE };

typedef struct Batchnorm {
    int batch;      /* batch the buffers below are sized for */
    float *x_hat;   /* [batch][c][h][w] */
    float *inv_std; /* [c] */
} Batchnorm;

static int bn_layer_parse(Layer *l, const Cfg *cfg, CfgSection *s, const Net *net, Error *e)
{
    (void)cfg;
    (void)s;
    (void)net;
    Batchnorm *bn = calloc(1, sizeof *bn);
    if (!bn)
        return error_set(e, CDL_ERUNTIME, "out of memory");
    l->priv = bn;
    l->out_shape = l->in_shape;
    l->activation = CDL_ACT_LINEAR;
    const size_t c = (size_t)l->in_shape.c;
    layer_add_param(l, "scales", c, 1, 0);
    layer_add_param(l, "biases", c, 1, 0);
    layer_add_param(l, "rolling_mean", c, 0, 0);
    layer_add_param(l, "rolling_variance", c, 0, 0);
    l->flops = 2.0 * (double)shape_size(l->in_shape);
    return CDL_OK;
}

static void bn_layer_init(Layer *l, Rng *rng)
{
    (void)rng;
    for (int i = 0; i < l->in_shape.c; i++) {
        l->params[P_SCALES].data[i] = 1.0f;
        l->params[P_BIASES].data[i] = 0.0f;
        l->params[P_ROLLING_MEAN].data[i] = 0.0f;
        l->params[P_ROLLING_VARIANCE].data[i] = 1.0f;
    }
}

static int bn_layer_resize(Layer *l, int batch, Error *e)
{
    Batchnorm *bn = l->priv;
    if (batch == bn->batch)
        return CDL_OK;
    free(bn->x_hat);
    free(bn->inv_std);
    bn->x_hat = malloc((size_t)batch * shape_size(l->in_shape) * sizeof *bn->x_hat);
    bn->inv_std = malloc((size_t)l->in_shape.c * sizeof *bn->inv_std);
    bn->batch = batch;
    if (!bn->x_hat || !bn->inv_std) {
        bn->batch = 0;
        return error_set(e, CDL_ERUNTIME, "layer %d: out of memory for batch %d", l->index, batch);
    }
    return CDL_OK;
}

static void bn_layer_forward(Layer *l, Net *net)
{
    const Batchnorm *bn = l->priv;
    const int c = l->in_shape.c, spatial = l->in_shape.h * l->in_shape.w;
    const float *x = net_layer_input(net, l, 0);
    const float *scale = l->params[P_SCALES].data, *bias = l->params[P_BIASES].data;
    float *mean = l->params[P_ROLLING_MEAN].data, *var = l->params[P_ROLLING_VARIANCE].data;
    if (net->train)
        batchnorm_forward_train(x, l->out, bn->x_hat, bn->inv_std, scale, bias, mean, var,
                                net->batch, c, spatial, net->hyper.bn_momentum, net->hyper.bn_eps);
    else
        batchnorm_forward_eval(x, l->out, scale, bias, mean, var, net->batch, c, spatial,
                               net->hyper.bn_eps);
}

static void bn_layer_backward(Layer *l, Net *net)
{
    const Batchnorm *bn = l->priv;
    const int c = l->in_shape.c, spatial = l->in_shape.h * l->in_shape.w;
    /* dL/dx is computed in place in l->delta, then added into the input's delta. */
    batchnorm_backward(l->delta, bn->x_hat, bn->inv_std, l->params[P_SCALES].data,
                       l->params[P_SCALES].grad, l->params[P_BIASES].grad, l->delta, net->batch, c,
                       spatial);
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
    Batchnorm *bn = l->priv;
    if (!bn)
        return;
    free(bn->x_hat);
    free(bn->inv_std);
    free(bn);
    l->priv = NULL;
}

const LayerType batchnorm_layer = {
    .name = "batchnorm",
    .parse = bn_layer_parse,
    .init = bn_layer_init,
    .resize = bn_layer_resize,
    .forward = bn_layer_forward,
    .backward = bn_layer_backward,
    .destroy = bn_layer_destroy,
};
