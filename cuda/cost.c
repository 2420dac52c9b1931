/* [cost]'s GPU kernels (layers/cost.c has its meaning): the probabilities passed through, forward
 * and backward; input and output each float32 or 16-bit (Layer.in_storage, Layer.storage).
 *
 *   in, out [batch][c][h][w]
 */
#include "gpu.h"
#include "kernels/copy.h"

static void cost_forward_gpu(Layer *l, const StepContext *ctx)
{
    const size_t n = (size_t)ctx->batch * shape_size(l->out_shape);
    gpu_note(ctx,
             cuda_convert_rows(l->out, l->storage, n, l->in[0], l->in_storage[0], n, 1, n, 0,
                               gpu_stream(ctx)),
             "cost forward");
}

/* The softmax before computes its gradient from the labels; without labels this is the
 * identity's gradient. */
static void cost_backward_gpu(Layer *l, const StepContext *ctx)
{
    if (!l->in_delta[0])
        return;
    const size_t n = (size_t)ctx->batch * shape_size(l->out_shape);
    gpu_note(ctx,
             cuda_convert_rows(l->in_delta[0], l->in_storage[0], n, l->delta, l->storage, n, 1, n,
                               1, gpu_stream(ctx)),
             "cost backward");
}

/* The family's step on the GPU (cuda/gpu_backend.c looks it up by family). */
const LayerKernels gpu_cost_kernels = {
    .forward = cost_forward_gpu,
    .backward = cost_backward_gpu,
    .stores_16bit = 1,
};
