/* [shuffle]'s GPU kernels (layers/shuffle.c has its meaning): a permutation of each sample's
 * channel planes (shuffle_source), the input and the output each NCHW or NHWC
 * (Layer.in_channels_last, Layer.channels_last).
 *
 *   in, out [batch][c][h][w]
 */
#include "layers/shuffle.h"
#include "gpu.h"
#include "spatial_maps.h"

static void shuffle_forward_gpu(Layer *l, const StepContext *ctx)
{
    const Shape s = l->in_shape;
    gpu_note(ctx,
             cuda_shuffle_forward(forward_map(l), forward_planes(l, ctx->batch), s.h * s.w,
                                  ((const Shuffle *)l->priv)->groups, gpu_stream(ctx)),
             "shuffle forward");
}

static void shuffle_backward_gpu(Layer *l, const StepContext *ctx)
{
    if (!l->in_delta[0])
        return;
    const Shape s = l->in_shape;
    gpu_note(ctx,
             cuda_shuffle_backward(backward_map(l), backward_planes(l, ctx->batch), s.h * s.w,
                                   ((const Shuffle *)l->priv)->groups, gpu_stream(ctx)),
             "shuffle backward");
}

static ChannelsLastUse shuffle_takes_channels_last(const Layer *l, const ExecContext *exec)
{
    (void)l, (void)exec;
    return CHANNELS_LAST_EITHER;
}

/* The family's step on the GPU (cuda/gpu_backend.c looks it up by family). */
const LayerKernels gpu_shuffle_kernels = {
    .forward = shuffle_forward_gpu,
    .backward = shuffle_backward_gpu,
    .stores_16bit = 1,
    .takes_channels_last = shuffle_takes_channels_last,
};
