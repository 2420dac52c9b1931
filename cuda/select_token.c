/* [select_token]'s GPU kernels (layers/select_token.c has its meaning): row index of each sample
 * copied out (cuda/kernels/copy.h), and its delta added back; the input and its gradient, and the
 * output and its, each float32 or 16-bit (Layer.in_storage, Layer.storage).
 *
 *   in [batch][T][C]   out [batch][C]
 */
#include "gpu.h"
#include "kernels/copy.h"

static void select_token_forward_gpu(Layer *l, const StepContext *ctx)
{
    const size_t c = (size_t)l->in_shape.w, sample = shape_size(l->in_shape);
    const size_t at = (size_t) * (const int *)l->priv * c;
    gpu_note(ctx,
             cuda_convert_rows(l->out, l->storage, c, elem_at(l->in[0], l->in_storage[0], at),
                               l->in_storage[0], sample, ctx->batch, c, 0, gpu_stream(ctx)),
             "select_token forward");
}

static void select_token_backward_gpu(Layer *l, const StepContext *ctx)
{
    if (!l->in_delta[0])
        return;
    const size_t c = (size_t)l->in_shape.w, sample = shape_size(l->in_shape);
    const size_t at = (size_t) * (const int *)l->priv * c;
    gpu_note(ctx,
             cuda_convert_rows(elem_at(l->in_delta[0], l->in_storage[0], at), l->in_storage[0],
                               sample, l->delta, l->storage, c, ctx->batch, c, 1, gpu_stream(ctx)),
             "select_token backward");
}

/* The family's step on the GPU (cuda/gpu_backend.c looks it up by family). */
const LayerKernels gpu_select_token_kernels = {
    .forward = select_token_forward_gpu,
    .backward = select_token_backward_gpu,
    .stores_16bit = 1,
};
