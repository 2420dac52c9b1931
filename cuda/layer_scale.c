/* [layer_scale]'s GPU kernels (layers/layer_scale.c has its meaning): each channel times its
 * scale (kernels/planes.cu). The input and its gradient float32 or 16-bit (Layer.in_storage), the
 * output and its gradient too (Layer.storage): each value read into float, rounded once stored.
 *
 *   in, out [outer][n][inner]: [batch][c][h*w] in an image net ([batch*h*w][c][1] channels-last,
 *   Layer.channels_last), [batch*T][w][1] in a sequence net
 *   scales [n]
 */
#include "layers/layer_scale.h"

#include "gpu.h"
#include "kernels/planes.h"

/* The layer's axis in its tensors' layout (NCHW, or NHWC: Layer.channels_last). */
static ChannelAxis axis_of(const Layer *l)
{
    return channel_axis_in_layout(((const LayerScale *)l->priv)->axis, l->channels_last);
}

static void layer_scale_forward_gpu(Layer *l, const StepContext *ctx)
{
    const ChannelAxis a = axis_of(l);
    gpu_note(ctx,
             cuda_channel_scale(l->out, l->storage, l->in[0], l->in_storage[0], l->params[0].data,
                                ctx->batch * a.groups, a.n, a.inner, 0, gpu_stream(ctx)),
             "layer_scale forward");
}

static void layer_scale_backward_gpu(Layer *l, const StepContext *ctx)
{
    const ChannelAxis a = axis_of(l);
    const int outer = ctx->batch * a.groups;
    if (l->params[0].grad)
        gpu_note(ctx,
                 cuda_scale_grad(l->params[0].grad, l->delta, l->storage, l->in[0],
                                 l->in_storage[0], outer, a.n, a.inner, gpu_stream(ctx)),
                 "layer_scale scales gradient");
    if (l->in_delta[0])
        gpu_note(ctx,
                 cuda_channel_scale(l->in_delta[0], l->in_storage[0], l->delta, l->storage,
                                    l->params[0].data, outer, a.n, a.inner, 1, gpu_stream(ctx)),
                 "layer_scale backward");
}

static ChannelsLastUse layer_scale_takes_channels_last(const Layer *l, const ExecContext *exec)
{
    (void)exec;
    return channel_axis_takes_channels_last(((const LayerScale *)l->priv)->axis);
}

/* The family's step on the GPU (cuda/gpu_backend.c looks it up by family). */
const LayerKernels gpu_layer_scale_kernels = {
    .forward = layer_scale_forward_gpu,
    .backward = layer_scale_backward_gpu,
    .stores_16bit = 1,
    .takes_channels_last = layer_scale_takes_channels_last,
};
