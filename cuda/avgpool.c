/* [avgpool]'s GPU kernels (layers/avgpool.c has its meaning): global average pooling, or the
 * windowed average (cuda/kernels/avgpool.h); input and output each float32 or 16-bit
 * (Layer.in_storage, Layer.storage) and NCHW or NHWC (Layer.in_channels_last,
 * Layer.channels_last).
 *
 *   in  [batch][c][h][w]
 *   out [batch][c][1][1], or windowed [batch][c][out_h][out_w]
 */
#include "kernels/avgpool.h"
#include "gpu.h"
#include "kernels/planes.h"
#include "layers/avgpool.h"

static AvgpoolDims window_dims(const Layer *l, int batch)
{
    const Avgpool *a = l->priv;
    return (AvgpoolDims){
        .planes = batch * l->in_shape.c,
        .channels = l->in_shape.c,
        .ih = l->in_shape.h,
        .iw = l->in_shape.w,
        .oh = l->out_shape.h,
        .ow = l->out_shape.w,
        .size = a->size,
        .stride = a->stride,
        .padding = a->padding,
        .in_nhwc = l->in_channels_last[0],
        .out_nhwc = l->channels_last,
    };
}

static void avgpool_forward_gpu(Layer *l, const StepContext *ctx)
{
    if (((const Avgpool *)l->priv)->size) {
        gpu_note(ctx,
                 cuda_avgpool_forward(l->out, l->storage, l->in[0], l->in_storage[0],
                                      window_dims(l, ctx->batch), gpu_stream(ctx)),
                 "avgpool forward");
        return;
    }
    gpu_note(ctx,
             cuda_plane_mean(l->out, l->storage, l->in[0], l->in_storage[0], ctx->batch,
                             l->in_shape.c, l->in_shape.h * l->in_shape.w, l->in_channels_last[0],
                             gpu_stream(ctx)),
             "avgpool forward");
}

static void avgpool_backward_gpu(Layer *l, const StepContext *ctx)
{
    if (!l->in_delta[0])
        return;
    if (((const Avgpool *)l->priv)->size) {
        gpu_note(ctx,
                 cuda_avgpool_backward(l->in_delta[0], l->in_storage[0], l->delta, l->storage,
                                       window_dims(l, ctx->batch), gpu_stream(ctx)),
                 "avgpool backward");
        return;
    }
    gpu_note(ctx,
             cuda_plane_mean_backward(l->in_delta[0], l->in_storage[0], l->delta, l->storage,
                                      ctx->batch, l->in_shape.c, l->in_shape.h * l->in_shape.w,
                                      l->in_channels_last[0], gpu_stream(ctx)),
             "avgpool backward");
}

/* Global pooling reads either layout (its output [batch][c] is the same in both); the windowed
 * one reads and writes either. */
static ChannelsLastUse avgpool_takes_channels_last(const Layer *l, const ExecContext *exec)
{
    (void)l, (void)exec;
    return CHANNELS_LAST_EITHER;
}

/* The family's step on the GPU (cuda/gpu_backend.c looks it up by family). */
const LayerKernels gpu_avgpool_kernels = {
    .forward = avgpool_forward_gpu,
    .backward = avgpool_backward_gpu,
    .stores_16bit = 1,
    .takes_channels_last = avgpool_takes_channels_last,
};
