/* [connected]'s GPU kernels (layers/connected.c has its meaning): a cuBLAS product, the bias or
 * batch-norm stage (cuda/bias_norm.h, one channel per output), then the activation; input and
 * output each float32 or 16-bit (Layer.in_storage, Layer.storage: a 16-bit input is the product's
 * operand as it is). int8 weights are refused at resize.
 *
 *   in [batch][inputs]   out [batch][outputs]   weights [outputs][inputs]   biases [outputs]
 */
#include "layers/connected.h"
#include "bias_norm.h"
#include "gpu.h"
#include "layer_activation.h"

static int connected_resize_gpu(Layer *l, int batch, LayerState *st, Error *e)
{
    Connected *fc = l->priv;
    if (l->quant)
        return error_set(e, CDL_EUSAGE,
                         "layer %d [connected] with int8 weights has no GPU implementation",
                         l->index);
    const size_t in = (size_t)batch * fc->inputs, out = (size_t)batch * fc->outputs;
    const size_t weights = (size_t)fc->outputs * fc->inputs;
    gpu_reserve_scratch(l, batch, 0, size_max(size_max(in, out), weights));
    /* its batch norm (over the batch alone) on cdl's kernels whatever the engine */
    return gpu_bias_norm_resize(&fc->stage, l, batch, st, l->storage, 0, e);
}

static void connected_forward_gpu(Layer *l, const StepContext *ctx)
{
    Connected *fc = l->priv;
    const int batch = ctx->batch;
    /* out[batch][outputs] = x[batch][inputs] W^T, then the stage into the activation's input */
    gpu_gemm_typed(ctx, l->precision, 0, 1, batch, fc->outputs, fc->inputs, 1.0f, l->in[0],
                   l->in_storage[0], fc->inputs, l->params[CONNECTED_WEIGHTS].data, ELEM_F32,
                   fc->inputs, 0.0f, l->out, l->storage, fc->outputs);
    gpu_bias_norm_forward(&fc->stage, l, ctx, l->out, l->storage, layer_activation_input(l),
                          layer_pre_storage(l));
    gpu_layer_activate(l, ctx);
}

static void connected_backward_gpu(Layer *l, const StepContext *ctx)
{
    const Connected *fc = l->priv;
    const int batch = ctx->batch;
    gpu_layer_activation_backward(l, ctx);
    gpu_bias_norm_backward(&fc->stage, l, ctx, l->delta, l->storage, l->delta, l->storage, 0.0f);
    /* dW[outputs][inputs] += delta^T x */
    gpu_gemm_typed(ctx, l->precision, 1, 0, fc->outputs, fc->inputs, batch, 1.0f, l->delta,
                   l->storage, fc->outputs, l->in[0], l->in_storage[0], fc->inputs, 1.0f,
                   l->params[CONNECTED_WEIGHTS].grad, ELEM_F32, fc->inputs);
    /* dx[batch][inputs] += delta W, or = where the net left it unzeroed (Layer.in_delta_fresh) */
    if (l->in_delta[0])
        gpu_gemm_typed(ctx, l->precision, 0, 0, batch, fc->inputs, fc->outputs, 1.0f, l->delta,
                       l->storage, fc->outputs, l->params[CONNECTED_WEIGHTS].data, ELEM_F32,
                       fc->inputs, layer_input_delta_beta(l, 0), l->in_delta[0], l->in_storage[0],
                       fc->inputs);
}

/* The family's step on the GPU (cuda/gpu_backend.c looks it up by family). */
const LayerKernels gpu_connected_kernels = {
    .resize = connected_resize_gpu,
    .forward = connected_forward_gpu,
    .backward = connected_backward_gpu,
    .stores_16bit = 1,
};
