/* [layernorm]'s GPU kernels (layers/layernorm.c has its meaning): each row of w values
 * normalised with the parsed eps, then scaled and shifted (cuda/kernels/layernorm.cu); the
 * backward as the CPU's: the biases' gradient the column sums of delta, the row pass (input
 * gradient) turning delta into delta * x_hat, the scales' gradient its column sums.
 *
 *   in, out [batch][rows][w] (rows = c*h)   scales, biases [w]   mean, inv_std [batch][rows]
 */
#include "layers/layernorm.h"

#include "gpu.h"
#include "kernels/layernorm.h"
#include "kernels/sequence.h"

static void layernorm_forward_gpu(Layer *l, const StepContext *ctx)
{
    const LayerNorm *ln = l->priv;
    const int n = l->in_shape.w, rows = ctx->batch * l->in_shape.c * l->in_shape.h;
    gpu_note(ctx,
             cuda_layernorm_forward_rows(l->out, ln->mean, ln->inv_std, l->in[0],
                                         l->params[P_SCALES].data, l->params[P_BIASES].data, rows,
                                         n, ln->eps, (size_t)n, 1, CUDA_R_32F, gpu_stream(ctx)),
             "layernorm forward");
}

/* Row t of each sample: rows tokens apart, as the statistics. */
static void layernorm_forward_at(Layer *l, const StepContext *ctx, int t)
{
    const LayerNorm *ln = l->priv;
    const size_t n = (size_t)l->in_shape.w, tokens = (size_t)l->in_shape.c * l->in_shape.h;
    gpu_note(ctx,
             cuda_layernorm_forward_rows(l->out + t * n, ln->mean + t, ln->inv_std + t,
                                         l->in[0] + t * n, l->params[P_SCALES].data,
                                         l->params[P_BIASES].data, ctx->batch, (int)n, ln->eps,
                                         tokens * n, tokens, CUDA_R_32F, gpu_stream(ctx)),
             "layernorm forward_at");
}

static void layernorm_backward_gpu(Layer *l, const StepContext *ctx)
{
    const LayerNorm *ln = l->priv;
    const int n = l->in_shape.w, rows = ctx->batch * l->in_shape.c * l->in_shape.h;
    gpu_note(ctx,
             cuda_column_sums_add(l->params[P_BIASES].grad, l->delta, rows, n, gpu_stream(ctx)),
             "layernorm biases gradient");
    gpu_note(ctx,
             cuda_layernorm_backward(l->in_delta[0], l->delta, l->in[0], l->params[P_SCALES].data,
                                     ln->mean, ln->inv_std, rows, n, gpu_stream(ctx)),
             "layernorm backward");
    gpu_note(ctx,
             cuda_column_sums_add(l->params[P_SCALES].grad, l->delta, rows, n, gpu_stream(ctx)),
             "layernorm scales gradient");
}

/* The family's step on the GPU (cuda/gpu_backend.c looks it up by family). */
const LayerKernels gpu_layernorm_kernels = {
    .resize = layernorm_resize,
    .forward = layernorm_forward_gpu,
    .backward = layernorm_backward_gpu,
    .forward_at = layernorm_forward_at,
};
