/* A layer's activation on the GPU (the device twin of backend/cpu/layer_activation.c): l->out =
 * f(l->pre), and dL/d(out) into dL/d(pre) in l->delta; out and delta of the layer's storage, pre
 * of layer_pre_storage's. */
#include "layer_activation.h"

#include "kernels/layer_activation.h"

void gpu_layer_activate(Layer *l, const StepContext *ctx)
{
    if (!l->pre || l->activation == CDL_ACT_LINEAR)
        return;
    gpu_note(ctx,
             cuda_activation_forward(l->out, l->storage, l->pre, layer_pre_storage(l),
                                     (size_t)ctx->batch * shape_size(l->out_shape),
                                     (int)l->activation, gpu_stream(ctx)),
             "activation forward");
}

void gpu_layer_activation_backward(Layer *l, const StepContext *ctx)
{
    if (l->activation == CDL_ACT_LINEAR)
        return;
    gpu_note(ctx,
             cuda_activation_backward(l->delta, layer_activation_input(l), layer_pre_storage(l),
                                      l->out, l->storage,
                                      (size_t)ctx->batch * shape_size(l->out_shape),
                                      (int)l->activation, gpu_stream(ctx)),
             "activation backward");
}
