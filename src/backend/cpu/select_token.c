/* [select_token]'s CPU kernels (layers/select_token.c has its meaning): row index of each sample
 * copied out, and its delta added back.
 *
 *   in [batch][T][C]   out [batch][C]
 */
#include <string.h>

#include "core/layer.h"

static void select_token_forward(Layer *l, const StepContext *ctx)
{
    const size_t c = (size_t)l->in_shape.w, sample = shape_size(l->in_shape);
    const size_t at = (size_t) * (const int *)l->priv * c;
    for (int b = 0; b < ctx->batch; b++)
        memcpy(l->out + (size_t)b * c, l->in[0] + (size_t)b * sample + at, c * sizeof *l->out);
}

static void select_token_backward(Layer *l, const StepContext *ctx)
{
    float *dx = l->in_delta[0];
    if (!dx)
        return;
    const size_t c = (size_t)l->in_shape.w, sample = shape_size(l->in_shape);
    const size_t at = (size_t) * (const int *)l->priv * c;
    for (int b = 0; b < ctx->batch; b++)
        for (size_t k = 0; k < c; k++)
            dx[(size_t)b * sample + at + k] += l->delta[(size_t)b * c + k];
}

/* The family's step on the CPU (backend/cpu/cpu_backend.c looks it up by family). */
const LayerKernels cpu_select_token_kernels = {
    .forward = select_token_forward,
    .backward = select_token_backward,
};
