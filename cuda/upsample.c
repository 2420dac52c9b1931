/* [upsample]'s GPU kernels (layers/upsample.c has its meaning): nearest-neighbour upsampling by
 * an integer stride, times scale (darknet's negative stride is refused at parse).
 *
 *   in  [batch][c][h][w]
 *   out [batch][c][h*stride][w*stride]
 */
#include "layers/upsample.h"
#include "gpu.h"
#include "kernels/spatial.h"

static void upsample_forward_gpu(Layer *l, const StepContext *ctx)
{
    const Upsample *up = l->priv;
    gpu_note(ctx,
             cuda_upsample_forward(l->out, l->in[0], ctx->batch * l->in_shape.c, l->in_shape.h,
                                   l->in_shape.w, up->stride, up->scale, gpu_stream(ctx)),
             "upsample forward");
}

static void upsample_backward_gpu(Layer *l, const StepContext *ctx)
{
    const Upsample *up = l->priv;
    if (!l->in_delta[0])
        return;
    gpu_note(ctx,
             cuda_upsample_backward(l->in_delta[0], l->delta, ctx->batch * l->in_shape.c,
                                    l->in_shape.h, l->in_shape.w, up->stride, up->scale,
                                    gpu_stream(ctx)),
             "upsample backward");
}

/* The family's step on the GPU (cuda/gpu_backend.c looks it up by family). */
const LayerKernels gpu_upsample_kernels = {
    .forward = upsample_forward_gpu,
    .backward = upsample_backward_gpu,
};
