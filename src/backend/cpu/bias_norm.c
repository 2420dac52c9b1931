/* The bias or batch-norm stage on the CPU (layers/bias_norm.h has its meaning and state). */
#include "backend/cpu/bias_norm.h"

#include <string.h>

#include "backend/cpu/sum_rows.h"

#include "backend/cpu/batchnorm_blocked.h"
#include "backend/cpu/bn_math.h"

static Param *param(const BiasNorm *bn, Layer *l, int which)
{
    return bias_norm_param(bn, l, which);
}

void bias_norm_resize(BiasNorm *bn, int batch, LayerState *st)
{
    if (!bn->batch_normalize)
        return;
    bn->x_hat = layer_state_floats(st, (size_t)batch * bn->channels * bn->spatial);
    bn->inv_std = layer_state_floats(st, (size_t)bn->channels);
    bn->sync_sums = layer_state_bytes(st, (2 * (size_t)bn->channels + 1) * sizeof(double));
    bn->mean = layer_state_floats(st, (size_t)bn->channels);
}

/* The batch statistics' reduction across ranks under sync_bn (NULL: none). */
static const BnSync *bn_sync(const BiasNorm *bn, const StepContext *ctx, BnSync *out)
{
    if (!ctx->sync_bn)
        return NULL;
    *out = (BnSync){ctx->sync_bn->sum, ctx->sync_bn->ctx, bn->sync_sums};
    return out;
}

/* bias_norm_forward's batch norm on x and y in nChw8c (Layer.blocked). */
static void bias_norm_forward_blocked(BiasNorm *bn, Layer *l, const StepContext *ctx,
                                      const float *x, float *y)
{
    const float *bias = param(bn, l, BN_BIASES)->data, *scale = param(bn, l, BN_SCALES)->data;
    float *mean = param(bn, l, BN_ROLLING_MEAN)->data,
          *var = param(bn, l, BN_ROLLING_VARIANCE)->data;
    BnSync sync;
    if (ctx->train)
        batchnorm_blocked_forward_train(
            x, y, bn->x_hat, bn->inv_std, scale, bias, ctx->replay ? NULL : mean,
            ctx->replay ? NULL : var, ctx->batch, bn->channels, bn->spatial, ctx->bn_momentum,
            ctx->bn_eps, ctx->bn_darknet, bn_sync(bn, ctx, &sync), NULL);
    else
        batchnorm_blocked_forward_eval(x, y, scale, bias, mean, var, ctx->batch, bn->channels,
                                       bn->spatial, ctx->bn_eps, ctx->bn_darknet);
}

void bias_norm_forward(BiasNorm *bn, Layer *l, const StepContext *ctx, const float *x, float *y)
{
    const int batch = ctx->batch, channels = bn->channels, spatial = bn->spatial;
    bn->keeps_input = 0;
    if (!bn->has_bias) {
        if (y != x)
            memcpy(y, x, (size_t)batch * channels * spatial * sizeof *y);
        return;
    }
    const float *bias = param(bn, l, BN_BIASES)->data;
    if (bn->batch_normalize) {
        const float *scale = param(bn, l, BN_SCALES)->data;
        float *mean = param(bn, l, BN_ROLLING_MEAN)->data;
        float *var = param(bn, l, BN_ROLLING_VARIANCE)->data;
        BnSync sync;
        /* A replayed forward (gradient checkpointing) has moved the running statistics once. */
        if (layer_blocked(l, ctx) >> LAYER_OUT_BIT & 1) /* a oneDNN convolution's nChw8c */
            bias_norm_forward_blocked(bn, l, ctx, x, y);
        else if (ctx->train)
            batchnorm_forward_train(x, y, bn->x_hat, bn->inv_std, scale, bias,
                                    ctx->replay ? NULL : mean, ctx->replay ? NULL : var, batch,
                                    channels, spatial, ctx->bn_momentum, ctx->bn_eps,
                                    ctx->bn_darknet, bn_sync(bn, ctx, &sync), NULL);
        else
            batchnorm_forward_eval(x, y, scale, bias, mean, var, batch, channels, spatial,
                                   ctx->bn_eps, ctx->bn_darknet);
        return;
    }
    const int rows = batch * channels;
#pragma omp parallel for schedule(static) if ((size_t)rows * spatial >= 16384)
    for (int r = 0; r < rows; r++) {
        const float *in = x + (size_t)r * spatial;
        float *out = y + (size_t)r * spatial;
        const float b = bias[r % channels];
#pragma omp simd
        for (int i = 0; i < spatial; i++)
            out[i] = in[i] + b;
    }
}

void bias_norm_fold(const BiasNorm *bn, Layer *l, const StepContext *ctx, const float *w,
                    size_t per_channel, float *w_out, float *b_out)
{
    batchnorm_fold(w, per_channel, param(bn, l, BN_SCALES)->data, param(bn, l, BN_BIASES)->data,
                   param(bn, l, BN_ROLLING_MEAN)->data, param(bn, l, BN_ROLLING_VARIANCE)->data,
                   bn->channels, ctx->bn_eps, ctx->bn_darknet, w_out, b_out);
}

void bias_norm_backward(const BiasNorm *bn, Layer *l, const StepContext *ctx, float *delta)
{
    const int batch = ctx->batch, channels = bn->channels, spatial = bn->spatial;
    if (!bn->has_bias)
        return;
    Param *biases = param(bn, l, BN_BIASES);
    if (bn->batch_normalize) {
        Param *scales = param(bn, l, BN_SCALES);
        BnSync sync;
        if (layer_blocked(l, ctx) >> LAYER_OUT_BIT & 1) {
            batchnorm_blocked_backward(delta, bn->x_hat, bn->inv_std, scales->data, scales->grad,
                                       biases->grad, delta, batch, channels, spatial,
                                       ctx->bn_darknet, bn_sync(bn, ctx, &sync), NULL);
            return;
        }
        batchnorm_backward(delta, bn->x_hat, bn->inv_std, scales->data, scales->grad, biases->grad,
                           delta, batch, channels, spatial, ctx->bn_darknet,
                           bn_sync(bn, ctx, &sync), NULL);
        return;
    }
    channel_sums_add(biases->grad, delta, NULL, (size_t)batch, (size_t)channels, (size_t)spatial);
}

/* The activation a batch norm's passes take with them (l's leaky or relu), else 0. */
static int fused_act(const BiasNorm *bn, const Layer *l, BnAct *act)
{
    if (!bn->batch_normalize || (l->activation != CDL_ACT_LEAKY && l->activation != CDL_ACT_RELU))
        return 0;
    *act = (BnAct){l->out, l->activation == CDL_ACT_LEAKY ? 0.1f : 0.0f,
                   l->params[bn->first_param + BN_BIASES].data, bn->keeps_input ? bn->mean : NULL};
    return 1;
}

float *bias_norm_product_output(const BiasNorm *bn, Layer *l, const StepContext *ctx)
{
    BnAct act;
    return ctx->train && fused_act(bn, l, &act) ? bn->x_hat : l->out;
}

int bias_norm_forward_activated(BiasNorm *bn, Layer *l, const StepContext *ctx, const float *x)
{
    BnAct act;
    bn->keeps_input = 0;
    if (!ctx->train || !fused_act(bn, l, &act))
        return 0;
    bn->keeps_input = x == bn->x_hat;
    act.mean = bn->keeps_input ? bn->mean : NULL;
    BnSync sync;
    /* nChw8c: a oneDNN convolution's (Layer.blocked) */
    (layer_blocked(l, ctx) >> LAYER_OUT_BIT & 1 ? batchnorm_blocked_forward_train
                                                : batchnorm_forward_train)(
        x, NULL, bn->x_hat, bn->inv_std, param(bn, l, BN_SCALES)->data,
        param(bn, l, BN_BIASES)->data, ctx->replay ? NULL : param(bn, l, BN_ROLLING_MEAN)->data,
        ctx->replay ? NULL : param(bn, l, BN_ROLLING_VARIANCE)->data, ctx->batch, bn->channels,
        bn->spatial, ctx->bn_momentum, ctx->bn_eps, ctx->bn_darknet, bn_sync(bn, ctx, &sync), &act);
    return 1;
}

int bias_norm_backward_activated(const BiasNorm *bn, Layer *l, const StepContext *ctx, float *delta)
{
    BnAct act;
    if (!fused_act(bn, l, &act))
        return 0;
    Param *scales = param(bn, l, BN_SCALES);
    BnSync sync;
    (layer_blocked(l, ctx) >> LAYER_OUT_BIT & 1 ? batchnorm_blocked_backward : batchnorm_backward)(
        delta, bn->x_hat, bn->inv_std, scales->data, scales->grad, param(bn, l, BN_BIASES)->grad,
        delta, ctx->batch, bn->channels, bn->spatial, ctx->bn_darknet, bn_sync(bn, ctx, &sync),
        &act);
    return 1;
}
