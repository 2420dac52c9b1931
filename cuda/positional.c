/* [positional]'s GPU kernels (layers/positional.c has its meaning): a learned positional
 * embedding added to each token (cuda/kernels/sequence.cu); input and output each float32 or
 * 16-bit (Layer.in_storage, Layer.storage).
 *
 *   in, out [batch][T][C]   out[b][t] = in[b][t] + weights[t]
 *   weights [T][C]
 */
#include "gpu.h"
#include "kernels/copy.h"
#include "kernels/sequence.h"

static void positional_forward_gpu(Layer *l, const StepContext *ctx)
{
    const size_t sample = shape_size(l->out_shape);
    gpu_note(ctx,
             cuda_add_row_vector_typed(l->out, l->storage, l->in[0], l->in_storage[0],
                                       l->params[0].data, ctx->batch, (int)sample, sample,
                                       gpu_stream(ctx)),
             "positional forward");
}

static void positional_forward_at(Layer *l, const StepContext *ctx, int t)
{
    const size_t row = (size_t)l->out_shape.w, sample = shape_size(l->out_shape);
    const size_t at = (size_t)t * row;
    gpu_note(ctx,
             cuda_add_row_vector_typed(elem_at(l->out, l->storage, at), l->storage,
                                       elem_at(l->in[0], l->in_storage[0], at), l->in_storage[0],
                                       l->params[0].data + at, ctx->batch, (int)row, sample,
                                       gpu_stream(ctx)),
             "positional forward_at");
}

/* dweights[t] += sum_b delta[b][t]; the input delta gets delta unchanged. */
static void positional_backward_gpu(Layer *l, const StepContext *ctx)
{
    const size_t sample = shape_size(l->out_shape);
    gpu_note(ctx,
             cuda_column_sums_add_typed(l->params[0].grad, l->delta, l->storage, ctx->batch,
                                        (int)sample, sample, gpu_stream(ctx)),
             "positional weights gradient");
    if (l->in_delta[0])
        gpu_note(ctx,
                 cuda_convert_rows(l->in_delta[0], l->in_storage[0], 0, l->delta, l->storage, 0, 1,
                                   (size_t)ctx->batch * sample, 1, gpu_stream(ctx)),
                 "positional input gradient");
}

/* The family's step on the GPU (cuda/gpu_backend.c looks it up by family). */
const LayerKernels gpu_positional_kernels = {
    .forward = positional_forward_gpu,
    .backward = positional_backward_gpu,
    .forward_at = positional_forward_at,
    .stores_16bit = 1,
};
