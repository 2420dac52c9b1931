/* [route]'s GPU kernels (layers/route.c has its meaning): concatenation along channels, the inputs
 * and the output all NCHW or all NHWC (Layer.channels_last: then the blocks copied are each
 * pixel's channels instead of each sample's planes); each input and the output float32 or 16-bit
 * (Layer.in_storage, Layer.storage).
 *
 *   inputs k [batch][c_k][h][w]   all with the same h and w
 *   out      [batch][sum c_k / groups][h][w]   input k's channel group group_id
 */
#include "layers/route.h"
#include "gpu.h"
#include "kernels/copy.h"

/* The rows the copies move blocks of: a sample's (NCHW), or a pixel's (NHWC), whose blocks are
 * the sample's divided by the plane. */
static size_t pixels_per_row(const Layer *l)
{
    return l->channels_last ? (size_t)l->out_shape.h * l->out_shape.w : 1;
}

static void route_forward_gpu(Layer *l, const StepContext *ctx)
{
    const Route *ro = l->priv;
    const size_t per = pixels_per_row(l), out_row = shape_size(l->out_shape) / per;
    const int rows = ctx->batch * (int)per;
    size_t offset = 0;
    for (int k = 0; k < l->n_inputs; k++) {
        const size_t n = route_part(ro, k) / per;
        gpu_note(ctx,
                 cuda_convert_rows(elem_at(l->out, l->storage, offset), l->storage, out_row,
                                   elem_at(l->in[k], l->in_storage[k], ro->group_id * n),
                                   l->in_storage[k], ro->sizes[k] / per, rows, n, 0,
                                   gpu_stream(ctx)),
                 "route forward");
        offset += n;
    }
}

/* Two listed entries may name the same layer: the inputs go one at a time, on one stream. */
static void route_backward_gpu(Layer *l, const StepContext *ctx)
{
    const Route *ro = l->priv;
    const size_t per = pixels_per_row(l), out_row = shape_size(l->out_shape) / per;
    const int rows = ctx->batch * (int)per;
    size_t offset = 0;
    for (int k = 0; k < l->n_inputs; k++) {
        const size_t n = route_part(ro, k) / per;
        if (l->in_delta[k])
            gpu_note(ctx,
                     cuda_convert_rows(elem_at(l->in_delta[k], l->in_storage[k], ro->group_id * n),
                                       l->in_storage[k], ro->sizes[k] / per,
                                       elem_at(l->delta, l->storage, offset), l->storage, out_row,
                                       rows, n, 1, gpu_stream(ctx)),
                     "route backward");
        offset += n;
    }
}

static ChannelsLastUse route_takes_channels_last(const Layer *l, const ExecContext *exec)
{
    (void)l, (void)exec;
    return CHANNELS_LAST_SAME;
}

/* The family's step on the GPU (cuda/gpu_backend.c looks it up by family). */
const LayerKernels gpu_route_kernels = {
    .forward = route_forward_gpu,
    .backward = route_backward_gpu,
    .stores_16bit = 1,
    .takes_channels_last = route_takes_channels_last,
};
