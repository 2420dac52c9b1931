/* The bias or batch-norm stage on the GPU (cuda/bias_norm.h), its tensors float32 or 16-bit. */
#include "bias_norm.h"

#include "kernels/batchnorm.h"
#include "kernels/copy.h"
#include "kernels/planes.h"

void gpu_bias_norm_resize(BiasNorm *bn, int batch, LayerState *st)
{
    bn->keeps_input = 0;
    if (!bn->batch_normalize)
        return;
    bn->x_hat = layer_state_floats(st, (size_t)batch * bn->channels * bn->spatial);
    bn->inv_std = layer_state_floats(st, (size_t)bn->channels);
    bn->sync_sums = layer_state_bytes(st, (2 * (size_t)bn->channels + 1) * sizeof(double));
    bn->mean = layer_state_floats(st, (size_t)bn->channels);
}

/* A pass of ctx's batch statistics over several processes, which the GPU does not reduce. */
static int refuse_sync_bn(const BiasNorm *bn, const StepContext *ctx)
{
    if (!bn->batch_normalize || !ctx->sync_bn || !ctx->train)
        return 0;
    gpu_note(ctx, cudaErrorNotSupported, "batch norm with sync_bn=1 (no GPU implementation)");
    return 1;
}

void gpu_bias_norm_forward(BiasNorm *bn, Layer *l, const StepContext *ctx, const void *x,
                           ElemType x_type, void *y, ElemType y_type)
{
    const int batch = ctx->batch, channels = bn->channels, spatial = bn->spatial;
    if (!bn->has_bias) {
        if (y != x)
            gpu_note(ctx,
                     cuda_convert_rows(y, y_type, 0, x, x_type, 0, 1,
                                       (size_t)batch * channels * spatial, 0, gpu_stream(ctx)),
                     "bias-free forward");
        return;
    }
    const float *bias = bias_norm_param(bn, l, BN_BIASES)->data;
    if (!bn->batch_normalize) {
        gpu_note(ctx,
                 cuda_add_bias(y, y_type, x, x_type, bias, batch, channels, spatial,
                               l->channels_last, gpu_stream(ctx)),
                 "bias forward");
        return;
    }
    if (refuse_sync_bn(bn, ctx))
        return;
    const float *scale = bias_norm_param(bn, l, BN_SCALES)->data;
    float *mean = bias_norm_param(bn, l, BN_ROLLING_MEAN)->data;
    float *var = bias_norm_param(bn, l, BN_ROLLING_VARIANCE)->data;
    if (ctx->train)
        /* a replayed forward (gradient checkpointing) has moved the running statistics once */
        gpu_note(ctx,
                 cuda_batchnorm_forward_train(y, y_type, bn->x_hat, bn->mean, bn->inv_std, x,
                                              x_type, scale, bias, ctx->replay ? NULL : mean,
                                              ctx->replay ? NULL : var, batch, channels, spatial,
                                              l->channels_last, ctx->bn_momentum, ctx->bn_eps,
                                              ctx->bn_darknet, gpu_stream(ctx)),
                 "batch norm forward");
    else
        gpu_note(ctx,
                 cuda_batchnorm_forward_eval(y, y_type, x, x_type, scale, bias, mean, var, batch,
                                             channels, spatial, l->channels_last, ctx->bn_eps,
                                             ctx->bn_darknet, gpu_stream(ctx)),
                 "batch norm inference forward");
}

void gpu_bias_norm_backward(const BiasNorm *bn, Layer *l, const StepContext *ctx, const void *dy,
                            ElemType dy_type, void *dx, ElemType dx_type, float dx_beta)
{
    const int batch = ctx->batch, channels = bn->channels, spatial = bn->spatial;
    if (!bn->has_bias)
        return;
    Param *biases = bias_norm_param(bn, l, BN_BIASES);
    if (!bn->batch_normalize) {
        gpu_note(ctx,
                 cuda_bias_grad(biases->grad, dy, dy_type, batch, channels, spatial,
                                l->channels_last, gpu_stream(ctx)),
                 "bias gradient");
        return;
    }
    if (refuse_sync_bn(bn, ctx))
        return;
    Param *scales = bias_norm_param(bn, l, BN_SCALES);
    gpu_note(ctx,
             cuda_batchnorm_backward(dx, dx_type, dx_beta, scales->grad, biases->grad,
                                     bn->sync_sums, dy, dy_type, bn->x_hat, bn->inv_std,
                                     scales->data, batch, channels, spatial, l->channels_last,
                                     ctx->bn_darknet, gpu_stream(ctx)),
             "batch norm backward");
}
