/* [layernorm]'s GPU kernels (layers/layernorm.c has its meaning): each group of n values along the
 * axis (a row's w values, or with channels=1 a position's c values) normalised with the parsed eps,
 * then scaled and shifted (cuda/kernels/layernorm.cu); the backward as the CPU's: the biases'
 * gradient the sums of delta over everything but the axis, the group pass (input gradient)
 * turning delta into delta * x_hat, the scales' gradient its sums. Input and output each float32
 * or 16-bit (Layer.in_storage, Layer.storage); statistics float32.
 *
 *   in, out [batch * groups][n][inner] (layers/channel_axis.h: [batch*c*h][w][1] or
 *   [batch][c][h*w], or channels-last [batch*h*w][c][1], Layer.channels_last)
 *   scales, biases [n]   mean, inv_std [batch * groups][inner]
 */
#include "layers/layernorm.h"

#include "gpu.h"
#include "kernels/layernorm.h"
#include "kernels/planes.h"
#include "kernels/sequence.h"

static void layernorm_forward_gpu(Layer *l, const StepContext *ctx)
{
    const LayerNorm *ln = l->priv;
    const ChannelAxis a = channel_axis_in_layout(ln->axis, l->channels_last);
    const int groups = ctx->batch * a.groups * a.inner;
    gpu_note(ctx,
             cuda_layernorm_forward_rows(l->out, l->storage, ln->mean, ln->inv_std, l->in[0],
                                         l->in_storage[0], l->params[P_SCALES].data,
                                         l->params[P_BIASES].data, groups, a.n, ln->eps,
                                         (size_t)a.n * a.inner, 1, a.inner, gpu_stream(ctx)),
             "layernorm forward");
}

/* Row t of each sample (sequence nets: rows of w values): rows tokens apart, as the statistics. */
static void layernorm_forward_at(Layer *l, const StepContext *ctx, int t)
{
    const LayerNorm *ln = l->priv;
    const size_t n = (size_t)l->in_shape.w, tokens = (size_t)l->in_shape.c * l->in_shape.h;
    gpu_note(ctx,
             cuda_layernorm_forward_rows(
                 elem_at(l->out, l->storage, t * n), l->storage, ln->mean + t, ln->inv_std + t,
                 elem_at(l->in[0], l->in_storage[0], t * n), l->in_storage[0],
                 l->params[P_SCALES].data, l->params[P_BIASES].data, ctx->batch, (int)n, ln->eps,
                 tokens * n, tokens, 1, gpu_stream(ctx)),
             "layernorm forward_at");
}

/* grad [n] += the sums of x [batch * groups][n][inner] (of x_type) over everything but the axis. */
static cudaError_t axis_sums_add(float *grad, const void *x, ElemType x_type, ChannelAxis a,
                                 int batch, cudaStream_t stream)
{
    const int outer = batch * a.groups;
    return a.inner == 1
               ? cuda_column_sums_add_typed(grad, x, x_type, outer, a.n, (size_t)a.n, stream)
               : cuda_bias_grad(grad, x, x_type, outer, a.n, a.inner, 0, stream);
}

static void layernorm_backward_gpu(Layer *l, const StepContext *ctx)
{
    const LayerNorm *ln = l->priv;
    const ChannelAxis a = channel_axis_in_layout(ln->axis, l->channels_last);
    const int groups = ctx->batch * a.groups * a.inner;
    gpu_note(ctx,
             axis_sums_add(l->params[P_BIASES].grad, l->delta, l->storage, a, ctx->batch,
                           gpu_stream(ctx)),
             "layernorm biases gradient");
    gpu_note(ctx,
             cuda_layernorm_backward(l->in_delta[0], l->in[0], l->in_storage[0], l->delta,
                                     l->storage, l->params[P_SCALES].data, ln->mean, ln->inv_std,
                                     groups, a.n, a.inner, gpu_stream(ctx)),
             "layernorm backward");
    gpu_note(ctx,
             axis_sums_add(l->params[P_SCALES].grad, l->delta, l->storage, a, ctx->batch,
                           gpu_stream(ctx)),
             "layernorm scales gradient");
}

static ChannelsLastUse layernorm_takes_channels_last(const Layer *l, const ExecContext *exec)
{
    (void)exec;
    return channel_axis_takes_channels_last(((const LayerNorm *)l->priv)->axis);
}

/* The family's step on the GPU (cuda/gpu_backend.c looks it up by family). */
const LayerKernels gpu_layernorm_kernels = {
    .resize = layernorm_resize,
    .forward = layernorm_forward_gpu,
    .backward = layernorm_backward_gpu,
    .forward_at = layernorm_forward_at,
    .stores_16bit = 1,
    .takes_channels_last = layernorm_takes_channels_last,
};
