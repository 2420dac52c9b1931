/* [scale_channels]'s GPU kernels (layers/scale_channels.c has its meaning): each plane of `from`
 * times its channel's scale, then the activation; each input and the output float32 or 16-bit
 * (Layer.in_storage, Layer.storage); `from` and the output NHWC where the layer is channels-last
 * (Layer.channels_last; the scale's 1x1 planes are the same in both layouts).
 *
 *   scale [batch][c][1][1]   input 0
 *   from  [batch][c][h][w]   input 1; also the output shape
 *   out   [batch][c][h][w]
 */
#include "gpu.h"
#include "kernels/planes.h"
#include "layer_activation.h"

static PlaneScaleInputs inputs_of(const Layer *l)
{
    return (PlaneScaleInputs){l->in[1], l->in[0], l->in_storage[1], l->in_storage[0]};
}

static void scale_channels_forward_gpu(Layer *l, const StepContext *ctx)
{
    const Shape o = l->out_shape;
    gpu_note(ctx,
             cuda_plane_scale(layer_activation_input(l), layer_pre_storage(l), inputs_of(l),
                              ctx->batch, o.c, o.h * o.w, l->channels_last, gpu_stream(ctx)),
             "scale_channels forward");
    gpu_layer_activate(l, ctx);
}

static void scale_channels_backward_gpu(Layer *l, const StepContext *ctx)
{
    const Shape o = l->out_shape;
    gpu_layer_activation_backward(l, ctx);
    gpu_note(ctx,
             cuda_plane_scale_backward(l->in_delta[1], l->in_delta[0], l->delta, l->storage,
                                       inputs_of(l), ctx->batch, o.c, o.h * o.w, l->channels_last,
                                       gpu_stream(ctx)),
             "scale_channels backward");
}

/* Elementwise over `from`: NHWC where its inputs and output all are. */
static ChannelsLastUse scale_channels_takes_channels_last(const Layer *l, const ExecContext *exec)
{
    (void)l, (void)exec;
    return CHANNELS_LAST_SAME;
}

/* The family's step on the GPU (cuda/gpu_backend.c looks it up by family). */
const LayerKernels gpu_scale_channels_kernels = {
    .forward = scale_channels_forward_gpu,
    .backward = scale_channels_backward_gpu,
    .stores_16bit = 1,
    .takes_channels_last = scale_channels_takes_channels_last,
};
