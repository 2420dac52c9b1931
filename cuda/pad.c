/* [pad]'s GPU kernels (layers/pad.c has its meaning): each plane copied into a larger one filled
 * with the value; the backward takes the input's window of the delta.
 *
 *   in  [batch][c][h][w]
 *   out [batch][c][oh][ow]   in at row top, column left
 */
#include "layers/pad.h"
#include "gpu.h"
#include "spatial_maps.h"

/* The planes of l's mini-batch and where its input sits in the output's. */
static PadDims pad_dims(const Layer *l, const StepContext *ctx)
{
    const Pad *p = l->priv;
    const Shape i = l->in_shape, o = l->out_shape;
    return (PadDims){ctx->batch * i.c, i.h, i.w, o.h, o.w, p->top, p->left};
}

static void pad_forward_gpu(Layer *l, const StepContext *ctx)
{
    gpu_note(ctx,
             cuda_pad_forward(forward_map(l), pad_dims(l, ctx), ((const Pad *)l->priv)->value,
                              gpu_stream(ctx)),
             "pad forward");
}

static void pad_backward_gpu(Layer *l, const StepContext *ctx)
{
    if (!l->in_delta[0])
        return;
    gpu_note(ctx, cuda_pad_backward(backward_map(l), pad_dims(l, ctx), gpu_stream(ctx)),
             "pad backward");
}

/* The family's step on the GPU (cuda/gpu_backend.c looks it up by family). */
const LayerKernels gpu_pad_kernels = {
    .forward = pad_forward_gpu,
    .backward = pad_backward_gpu,
    .stores_16bit = 1,
};
