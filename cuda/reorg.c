/* [reorg]'s GPU kernels (layers/reorg.c has its meaning and darknet's order): a fixed permutation
 * that trades space for channels, with s = stride.
 *
 *   in  [batch][c][h][w]
 *   out [batch][c*s*s][h/s][w/s]
 */
#include "layers/reorg.h"
#include "gpu.h"
#include "spatial_maps.h"

static void reorg_forward_gpu(Layer *l, const StepContext *ctx)
{
    const Shape is = l->in_shape;
    gpu_note(ctx,
             cuda_reorg_forward(forward_map(l), ctx->batch, is.c, is.h, is.w, reorg_stride(l),
                                gpu_stream(ctx)),
             "reorg forward");
}

static void reorg_backward_gpu(Layer *l, const StepContext *ctx)
{
    if (!l->in_delta[0])
        return;
    const Shape is = l->in_shape;
    gpu_note(ctx,
             cuda_reorg_backward(backward_map(l), ctx->batch, is.c, is.h, is.w, reorg_stride(l),
                                 gpu_stream(ctx)),
             "reorg backward");
}

/* The family's step on the GPU (cuda/gpu_backend.c looks it up by family). */
const LayerKernels gpu_reorg_kernels = {
    .forward = reorg_forward_gpu,
    .backward = reorg_backward_gpu,
    .stores_16bit = 1,
};
