/* [upsample]'s GPU kernels (layers/upsample.c has its meaning): nearest-neighbour upsampling by
 * an integer stride, times scale, or with a negative stride the sum of each window, times scale;
 * the same spread and gather maps as backend/cpu/upsample.c, the input and the output each NCHW
 * or NHWC (Layer.in_channels_last, Layer.channels_last).
 *
 *   upsampling    in [batch][c][h][w]   out [batch][c][h*stride][w*stride]
 *   downsampling  in [batch][c][h][w]   out [batch][c][h/stride][w/stride]
 */
#include "layers/upsample.h"
#include "gpu.h"
#include "spatial_maps.h"

static void upsample_forward_gpu(Layer *l, const StepContext *ctx)
{
    const Upsample *up = l->priv;
    const SpatialPlanes planes = forward_planes(l, ctx->batch);
    const cudaError_t err =
        up->downsample
            ? cuda_upsample_gather(forward_map(l), planes, l->out_shape.h, l->out_shape.w,
                                   up->stride, up->scale, 0, gpu_stream(ctx))
            : cuda_upsample_spread(forward_map(l), planes, l->in_shape.h, l->in_shape.w, up->stride,
                                   up->scale, 0, gpu_stream(ctx));
    gpu_note(ctx, err, "upsample forward");
}

static void upsample_backward_gpu(Layer *l, const StepContext *ctx)
{
    const Upsample *up = l->priv;
    if (!l->in_delta[0])
        return;
    const SpatialPlanes planes = backward_planes(l, ctx->batch);
    const cudaError_t err =
        up->downsample
            ? cuda_upsample_spread(backward_map(l), planes, l->out_shape.h, l->out_shape.w,
                                   up->stride, up->scale, 1, gpu_stream(ctx))
            : cuda_upsample_gather(backward_map(l), planes, l->in_shape.h, l->in_shape.w,
                                   up->stride, up->scale, 1, gpu_stream(ctx));
    gpu_note(ctx, err, "upsample backward");
}

static ChannelsLastUse upsample_takes_channels_last(const Layer *l, const ExecContext *exec)
{
    (void)l, (void)exec;
    return CHANNELS_LAST_EITHER;
}

/* The family's step on the GPU (cuda/gpu_backend.c looks it up by family). */
const LayerKernels gpu_upsample_kernels = {
    .forward = upsample_forward_gpu,
    .backward = upsample_backward_gpu,
    .stores_16bit = 1,
    .takes_channels_last = upsample_takes_channels_last,
};
