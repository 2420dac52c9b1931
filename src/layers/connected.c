/* [connected]: fully connected layer with optional batch norm and an activation.
 *
 *   in  [batch][inputs], the flattened [c][h][w] of the previous layer
 *   out [batch][output]  (out_shape {output, 1, 1})
 *   weights [output][inputs]; biases [output]
 *   with batch_normalize: scales, biases (the BN shift), rolling_mean, rolling_variance
 *   [output], normalising each output over the batch. */
#include <math.h>
#include <stdlib.h>

#include "core/layer.h"
#include "core/net.h"
#include "ops/batchnorm.h"
#include "ops/gemm.h"

/* Positions in l->params, in the order parse declares them. */
enum { P_WEIGHTS, P_BIASES, P_SCALES, P_ROLLING_MEAN, P_ROLLING_VARIANCE };

typedef struct Connected {
    int inputs, outputs, batch_normalize;
    int batch;      /* batch the buffers below are sized for */
    float *x_hat;   /* [batch][outputs], batch norm only */
    float *inv_std; /* [outputs] */
} Connected;

static int connected_parse(Layer *l, const Cfg *cfg, CfgSection *s, const Net *net, Error *e)
{
    (void)net;
    int outputs, bn;
    int rc = cfg_get_int(cfg, s, "output", 1, &outputs, e);
    if (!rc)
        rc = cfg_get_int(cfg, s, "batch_normalize", 0, &bn, e);
    if (!rc)
        rc = layer_parse_activation(l, cfg, s, CDL_ACT_LOGISTIC, e);
    if (rc)
        return rc;
    if (outputs < 1) {
        const CfgEntry *en = cfg_find(s, "output");
        return error_set(e, CDL_EUSAGE, "%s:%d: layer %d: [%s] output=%d: expected at least 1",
                         cfg->path, en ? en->line : s->line, l->index, s->name, outputs);
    }

    Connected *fc = calloc(1, sizeof *fc);
    if (!fc)
        return error_set(e, CDL_ERUNTIME, "out of memory");
    fc->inputs = (int)shape_size(l->in_shape);
    fc->outputs = outputs;
    fc->batch_normalize = bn != 0;
    l->priv = fc;

    l->out_shape = (Shape){outputs, 1, 1};
    layer_add_param(l, "weights", (size_t)outputs * fc->inputs, 1, 1);
    layer_add_param(l, "biases", (size_t)outputs, 1, 0);
    if (fc->batch_normalize) {
        layer_add_param(l, "scales", (size_t)outputs, 1, 0);
        layer_add_param(l, "rolling_mean", (size_t)outputs, 0, 0);
        layer_add_param(l, "rolling_variance", (size_t)outputs, 0, 0);
    }
    l->flops = 2.0 * (double)fc->inputs * outputs;
    return CDL_OK;
}

/* As PyTorch's nn.Linear: weights and biases ~ U(-1/sqrt(inputs), 1/sqrt(inputs)); with
 * batch norm the shift starts at 0 and the scale at 1, as nn.BatchNorm1d. */
static void connected_init(Layer *l, Rng *rng)
{
    const Connected *fc = l->priv;
    const float bound = 1.0f / sqrtf((float)fc->inputs);
    Param *w = &l->params[P_WEIGHTS], *b = &l->params[P_BIASES];
    for (size_t i = 0; i < w->count; i++)
        w->data[i] = bound * (2.0f * rng_uniform(rng) - 1.0f);
    for (int i = 0; i < fc->outputs; i++)
        b->data[i] = fc->batch_normalize ? 0.0f : bound * (2.0f * rng_uniform(rng) - 1.0f);
    if (fc->batch_normalize) {
        for (int i = 0; i < fc->outputs; i++) {
            l->params[P_SCALES].data[i] = 1.0f;
            l->params[P_ROLLING_MEAN].data[i] = 0.0f;
            l->params[P_ROLLING_VARIANCE].data[i] = 1.0f;
        }
    }
}

static int connected_resize(Layer *l, int batch, Error *e)
{
    Connected *fc = l->priv;
    if (!fc->batch_normalize || batch == fc->batch)
        return CDL_OK;
    free(fc->x_hat);
    free(fc->inv_std);
    fc->x_hat = malloc((size_t)batch * fc->outputs * sizeof *fc->x_hat);
    fc->inv_std = malloc((size_t)fc->outputs * sizeof *fc->inv_std);
    fc->batch = batch;
    if (!fc->x_hat || !fc->inv_std) {
        fc->batch = 0;
        return error_set(e, CDL_ERUNTIME, "layer %d: out of memory for batch %d", l->index, batch);
    }
    return CDL_OK;
}

static void connected_forward(Layer *l, Net *net)
{
    const Connected *fc = l->priv;
    const int batch = net->batch, inputs = fc->inputs, outputs = fc->outputs;
    const float *x = net_layer_input(net, l, 0);

    /* out[batch][outputs] = x[batch][inputs] * W^T */
    gemm(0, 1, batch, outputs, inputs, 1.0f, x, inputs, l->params[P_WEIGHTS].data, inputs, 0.0f,
         l->out, outputs);

    const float *bias = l->params[P_BIASES].data;
    float *pre = layer_activation_input(l);
    if (fc->batch_normalize) {
        const float *scale = l->params[P_SCALES].data;
        float *mean = l->params[P_ROLLING_MEAN].data, *var = l->params[P_ROLLING_VARIANCE].data;
        if (net->train)
            batchnorm_forward_train(l->out, pre, fc->x_hat, fc->inv_std, scale, bias, mean, var,
                                    batch, outputs, 1, net->hyper.bn_momentum, net->hyper.bn_eps);
        else
            batchnorm_forward_eval(l->out, pre, scale, bias, mean, var, batch, outputs, 1,
                                   net->hyper.bn_eps);
    } else {
        for (int b = 0; b < batch; b++) {
            const float *o = l->out + (size_t)b * outputs;
            float *p = pre + (size_t)b * outputs;
#pragma omp simd
            for (int i = 0; i < outputs; i++)
                p[i] = o[i] + bias[i];
        }
    }
    layer_activate(l, batch);
}

static void connected_backward(Layer *l, Net *net)
{
    const Connected *fc = l->priv;
    const int batch = net->batch, inputs = fc->inputs, outputs = fc->outputs;

    layer_activation_backward(l, batch);
    if (fc->batch_normalize) {
        batchnorm_backward(l->delta, fc->x_hat, fc->inv_std, l->params[P_SCALES].data,
                           l->params[P_SCALES].grad, l->params[P_BIASES].grad, l->delta, batch,
                           outputs, 1);
    } else {
        /* Batch rows in a fixed order: deterministic, and contiguous in memory. */
        float *db = l->params[P_BIASES].grad;
        for (int b = 0; b < batch; b++) {
            const float *d = l->delta + (size_t)b * outputs;
#pragma omp simd
            for (int i = 0; i < outputs; i++)
                db[i] += d[i];
        }
    }

    const float *x = net_layer_input(net, l, 0);
    /* dW[outputs][inputs] += delta^T * x */
    gemm(1, 0, outputs, inputs, batch, 1.0f, l->delta, outputs, x, inputs, 1.0f,
         l->params[P_WEIGHTS].grad, inputs);
    float *dx = net_layer_input_delta(net, l, 0);
    /* dx[batch][inputs] += delta * W */
    if (dx)
        gemm(0, 0, batch, inputs, outputs, 1.0f, l->delta, outputs, l->params[P_WEIGHTS].data,
             inputs, 1.0f, dx, inputs);
}

static void connected_destroy(Layer *l)
{
    Connected *fc = l->priv;
    if (!fc)
        return;
    free(fc->x_hat);
    free(fc->inv_std);
    free(fc);
    l->priv = NULL;
}

const LayerType connected_layer = {
    .name = "connected",
    .parse = connected_parse,
    .init = connected_init,
    .resize = connected_resize,
    .forward = connected_forward,
    .backward = connected_backward,
    .destroy = connected_destroy,
};
