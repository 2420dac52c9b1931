/* [connected]'s GPU kernels (layers/connected.c has its meaning): a cuBLAS product and the bias,
 * then the activation. batch_normalize=1 has no GPU kernels yet and is refused at resize, as is
 * precision=bf16 (its rounding has no GPU kernels yet).
 *
 *   in [batch][inputs]   out [batch][outputs]   weights [outputs][inputs]   biases [outputs]
 */
#include "gpu.h"
#include "kernels/planes.h"
#include "layer_activation.h"
#include "layers/connected.h"

static int connected_resize_gpu(Layer *l, int batch, LayerState *st, Error *e)
{
    (void)batch, (void)st;
    const Connected *fc = l->priv;
    if (fc->stage.batch_normalize || l->precision != GEMM_FP32)
        return error_set(e, CDL_EUSAGE, "layer %d [connected] with %s has no GPU implementation",
                         l->index, fc->stage.batch_normalize ? "batch_normalize=1" : "bf16");
    return CDL_OK;
}

static void connected_forward_gpu(Layer *l, const StepContext *ctx)
{
    const Connected *fc = l->priv;
    const int batch = ctx->batch;
    float *y = layer_activation_input(l);
    /* y[batch][outputs] = x[batch][inputs] W^T + b */
    gpu_gemm(ctx, 0, 1, batch, fc->outputs, fc->inputs, 1.0f, l->in[0], fc->inputs,
             l->params[CONNECTED_WEIGHTS].data, fc->inputs, 0.0f, y, fc->outputs);
    gpu_note(ctx,
             cuda_add_bias(y, y, l->params[CONNECTED_BIASES].data, batch, fc->outputs, 1,
                           gpu_stream(ctx)),
             "connected bias");
    gpu_layer_activate(l, ctx);
}

static void connected_backward_gpu(Layer *l, const StepContext *ctx)
{
    const Connected *fc = l->priv;
    const int batch = ctx->batch;
    gpu_layer_activation_backward(l, ctx);
    gpu_note(ctx,
             cuda_bias_grad(l->params[CONNECTED_BIASES].grad, l->delta, batch, fc->outputs, 1,
                            gpu_stream(ctx)),
             "connected bias gradient");
    /* dW[outputs][inputs] += delta^T x */
    gpu_gemm(ctx, 1, 0, fc->outputs, fc->inputs, batch, 1.0f, l->delta, fc->outputs, l->in[0],
             fc->inputs, 1.0f, l->params[CONNECTED_WEIGHTS].grad, fc->inputs);
    /* dx[batch][inputs] += delta W, or = where the net left it unzeroed (Layer.in_delta_fresh) */
    if (l->in_delta[0])
        gpu_gemm(ctx, 0, 0, batch, fc->inputs, fc->outputs, 1.0f, l->delta, fc->outputs,
                 l->params[CONNECTED_WEIGHTS].data, fc->inputs, layer_input_delta_beta(l, 0),
                 l->in_delta[0], fc->inputs);
}

/* The family's step on the GPU (cuda/gpu_backend.c looks it up by family). */
const LayerKernels gpu_connected_kernels = {
    .resize = connected_resize_gpu,
    .forward = connected_forward_gpu,
    .backward = connected_backward_gpu,
};
