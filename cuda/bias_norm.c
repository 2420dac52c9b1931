/* The bias or batch-norm stage on the GPU (cuda/bias_norm.h), its tensors float32 or 16-bit:
 * batch norm on cuDNN (bn_cudnn.h) where it runs there, else on cdl's kernels. */
#include "bias_norm.h"

#include <stdlib.h>

#include "bn_cudnn.h"
#include "kernels/batchnorm.h"
#include "kernels/copy.h"
#include "kernels/planes.h"

#ifndef CDL_GPU_SIM
/* The cuDNN side of gpu_bias_norm_resize: bn described for the passes where the rule allows
 * (else left undescribed), and l's scratch raised to the backward's wherever the settings and
 * shape allow, whatever the types (the measuring resize may not know the layer's final
 * pre-activation buffer), so that the plan holds for either outcome. */
static int resize_cudnn(BiasNorm *bn, Layer *l, int batch, const LayerState *st, ElemType x_type,
                        Error *e)
{
    if (!bn->cudnn && !(bn->cudnn = calloc(1, sizeof *bn->cudnn)))
        return error_set(e, CDL_ERUNTIME, "out of memory");
    bn->cudnn->batch = 0;
    BnCudnnCase k = {.darknet = st->bn_darknet,
                     .eps = st->bn_eps,
                     .batch = batch,
                     .channels = bn->channels,
                     .spatial = bn->spatial,
                     .x = ELEM_F32,
                     .y = ELEM_F32,
                     .dy = ELEM_F32};
    if (bn_cudnn_refusal(&k))
        return CDL_OK;
    const size_t floats =
        (bn_cudnn_scratch_bytes(batch, bn->channels, bn->spatial, ELEM_F32) + sizeof(float) - 1) /
        sizeof(float);
    l->scratch_per_sample = size_max(l->scratch_per_sample, (floats + batch - 1) / batch);
    k.x = x_type;
    k.y = layer_pre_storage(l);
    k.dy = l->storage;
    if (bn_cudnn_refusal(&k))
        return CDL_OK;
    return bn_cudnn_describe(bn->cudnn, l, batch, bn->channels, bn->spatial, x_type,
                             l->channels_last, e);
}
#endif

int gpu_bias_norm_resize(BiasNorm *bn, Layer *l, int batch, LayerState *st, ElemType x_type,
                         int cudnn, Error *e)
{
    bn->keeps_input = 0;
    if (!bn->batch_normalize)
        return CDL_OK;
    bn->x_hat = layer_state_floats(st, (size_t)batch * bn->channels * bn->spatial);
    bn->inv_std = layer_state_floats(st, (size_t)bn->channels);
    bn->sync_sums = layer_state_bytes(st, (2 * (size_t)bn->channels + 1) * sizeof(double));
    bn->mean = layer_state_floats(st, (size_t)bn->channels);
#ifndef CDL_GPU_SIM
    if (cudnn)
        return resize_cudnn(bn, l, batch, st, x_type, e);
#else
    (void)l, (void)x_type, (void)cudnn, (void)e;
#endif
    return CDL_OK;
}

int gpu_bias_norm_on_cudnn(const BiasNorm *bn)
{
#ifndef CDL_GPU_SIM
    return bn->cudnn && bn->cudnn->batch;
#else
    (void)bn;
    return 0;
#endif
}

void gpu_bias_norm_release(BiasNorm *bn)
{
#ifndef CDL_GPU_SIM
    if (bn->cudnn)
        bn_cudnn_release(bn->cudnn);
#endif
    free(bn->cudnn);
    bn->cudnn = NULL;
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
#ifndef CDL_GPU_SIM
    if (bn_cudnn_takes(bn->cudnn, ctx, x_type, y_type, l->storage)) {
        if (ctx->train)
            bn_cudnn_forward_train(bn->cudnn, ctx, x, y, bn->x_hat, scale, bias, bn->mean,
                                   bn->inv_std, mean, var);
        else
            bn_cudnn_forward_eval(bn->cudnn, ctx, x, y, bn->x_hat, scale, bias, mean, var);
        return;
    }
#endif
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
#ifndef CDL_GPU_SIM
    if (bn_cudnn_takes(bn->cudnn, ctx, dx_type, layer_pre_storage(l), dy_type)) {
        bn_cudnn_backward(bn->cudnn, ctx, bn->x_hat, dy, dx, dx_beta, scales->data, scales->grad,
                          biases->grad, bn->mean, bn->inv_std);
        return;
    }
#endif
    gpu_note(ctx,
             cuda_batchnorm_backward(dx, dx_type, dx_beta, scales->grad, biases->grad,
                                     bn->sync_sums, dy, dy_type, bn->x_hat, bn->inv_std,
                                     scales->data, batch, channels, spatial, l->channels_last,
                                     ctx->bn_darknet, gpu_stream(ctx)),
             "batch norm backward");
}
