/* [avgpool]'s GPU kernels (layers/avgpool.c has its meaning): global average pooling.
 *
 *   in  [batch][c][h][w]   out [batch][c][1][1]
 */
#include "gpu.h"
#include "kernels/planes.h"

static void avgpool_forward_gpu(Layer *l, const StepContext *ctx)
{
    gpu_note(ctx,
             cuda_plane_mean(l->out, l->in[0], ctx->batch * l->in_shape.c,
                             l->in_shape.h * l->in_shape.w, gpu_stream(ctx)),
             "avgpool forward");
}

static void avgpool_backward_gpu(Layer *l, const StepContext *ctx)
{
    if (!l->in_delta[0])
        return;
    gpu_note(ctx,
             cuda_plane_mean_backward(l->in_delta[0], l->delta, ctx->batch * l->in_shape.c,
                                      l->in_shape.h * l->in_shape.w, gpu_stream(ctx)),
             "avgpool backward");
}

/* The family's step on the GPU (cuda/gpu_backend.c looks it up by family). */
const LayerKernels gpu_avgpool_kernels = {
    .forward = avgpool_forward_gpu,
    .backward = avgpool_backward_gpu,
};
