/* The bias or batch-norm stage on the GPU (layers/bias_norm.h has its meaning and state; the
 * device twin of backend/cpu/bias_norm.h): tensors [batch][channels][spatial] in device memory,
 * or [batch][spatial][channels] where the layer's output is channels-last (Layer.channels_last:
 * x, y, dy and dx all in that layout).
 * Batch norm computes what the CPU's unfused passes compute (backend/cpu/bn_math.h); where the CPU
 * fuses a leaky or relu into them, the GPU runs the stage and then the activation, which gives the
 * same values (the activation's sign is that of the same float y). */
#ifndef CDL_CUDA_BIAS_NORM_H
#define CDL_CUDA_BIAS_NORM_H

#include "gpu.h"
#include "layers/bias_norm.h"

/* Takes the batch norm's device state from st, as the CPU's resize does: x_hat [batch][channels]
 * [spatial], inv_std and mean [channels], and in sync_sums the backward's per-channel sums. With
 * cudnn (a family that runs its batch norm on cuDNN under gpu_engine=cudnn: [convolutional],
 * [batchnorm]), also describes it for cuDNN (cuda/bn_cudnn.h) where bn_cudnn_refusal allows, for
 * st's settings and the types the passes give: x of x_type, y of layer_pre_storage(l), dy of
 * l->storage and dx of x_type; and raises l's scratch to what cuDNN's passes need. Returns CDL_OK,
 * or the error of a failed allocation or descriptor call. */
int gpu_bias_norm_resize(BiasNorm *bn, Layer *l, int batch, LayerState *st, ElemType x_type,
                         int cudnn, Error *e);
/* 1 when the resize described the batch norm for cuDNN (the passes then run it there, unless
 * a pass's settings refuse it: bn_cudnn_takes). */
int gpu_bias_norm_on_cudnn(const BiasNorm *bn);
/* Frees what gpu_bias_norm_resize made outside the net's slabs (cuDNN's descriptors). */
void gpu_bias_norm_release(BiasNorm *bn);
/* y = x + bias, or batch norm in the pass's mode (training: batch statistics, moving the running
 * ones unless ctx->replay); x of x_type and y of y_type, each float32 or 16-bit (the statistics
 * float32). y may equal x (of the same type). On cuDNN where the resize described it and the
 * pass's settings allow (bn_cudnn_takes), else on cdl's kernels. sync_bn (ctx->sync_bn) has no
 * GPU implementation: the pass fails (net_sync reports it). */
void gpu_bias_norm_forward(BiasNorm *bn, Layer *l, const StepContext *ctx, const void *x,
                           ElemType x_type, void *y, ElemType y_type);
/* Adds the parameter gradients of dy = dL/dy (of dy_type, l->storage); with batch norm, dx =
 * dx_beta * dx + dL/dx (of dx_type, the forward's x_type; dx may equal dy; NULL: the input's
 * gradient is not wanted), on the engine the forward ran on; without, dL/dx is dy itself (dx must
 * be dy or NULL). */
void gpu_bias_norm_backward(const BiasNorm *bn, Layer *l, const StepContext *ctx, const void *dy,
                            ElemType dy_type, void *dx, ElemType dx_type, float dx_beta);

#endif
