/* [cost]'s CPU kernels (layers/cost.c has its meaning): the probabilities passed through,
 * forward and backward.
 *
 *   in, out [batch][c][h][w]
 */
#include "core/layer.h"

#include <string.h>

static void cost_forward(Layer *l, const StepContext *ctx)
{
    memcpy(l->out, l->in[0], (size_t)ctx->batch * shape_size(l->out_shape) * sizeof *l->out);
}

/* The softmax before computes its gradient from the labels; without labels this is the
 * identity's gradient. */
static void cost_backward(Layer *l, const StepContext *ctx)
{
    float *in_delta = l->in_delta[0];
    if (!in_delta)
        return;
    const size_t n = (size_t)ctx->batch * shape_size(l->out_shape);
    for (size_t i = 0; i < n; i++)
        in_delta[i] += l->delta[i];
}

/* The family's step on the CPU (backend/cpu/cpu_backend.c looks it up by family). */
const LayerKernels cpu_cost_kernels = {
    .forward = cost_forward,
    .backward = cost_backward,
};
