/* [positional]'s CPU kernels (layers/positional.c has its meaning): a learned positional
 * embedding added to each token.
 *
 *   in, out [batch][T][C]   out[b][t] = in[b][t] + weights[t]
 *   weights [T][C]
 */
#include <stddef.h>

#include "backend/cpu/sum_rows.h"
#include "core/layer.h"

/* Below this many values a parallel region costs more than it saves. */
#define POSITIONAL_PARALLEL_MIN 32768

static void positional_forward(Layer *l, const StepContext *ctx)
{
    const float *in = l->in[0], *w = l->params[0].data;
    const size_t sample = shape_size(l->out_shape);
    /* a sample per task, vector code within (collapse(2) left the loop scalar) */
#pragma omp parallel for schedule(static) if (ctx->batch * sample > POSITIONAL_PARALLEL_MIN)
    for (int b = 0; b < ctx->batch; b++) {
        float *out = l->out + b * sample;
        const float *x = in + b * sample;
#pragma omp simd
        for (size_t i = 0; i < sample; i++)
            out[i] = x[i] + w[i];
    }
}

static void positional_forward_at(Layer *l, const StepContext *ctx, int t)
{
    const float *in = l->in[0];
    const size_t row = (size_t)l->out_shape.w, sample = shape_size(l->out_shape);
    const float *w = l->params[0].data + (size_t)t * row;
    for (int b = 0; b < ctx->batch; b++) {
        const size_t at = (size_t)b * sample + (size_t)t * row;
        for (size_t j = 0; j < row; j++)
            l->out[at + j] = in[at + j] + w[j];
    }
}

/* dweights[t] += sum_b delta[b][t]; the input delta gets delta unchanged. */
static void positional_backward(Layer *l, const StepContext *ctx)
{
    const size_t sample = shape_size(l->out_shape), n = (size_t)ctx->batch * sample;
    sum_rows_add(l->params[0].grad, l->delta, (size_t)ctx->batch, sample);
    float *dx = l->in_delta[0];
    if (!dx)
        return;
#pragma omp parallel for schedule(static) if (n > POSITIONAL_PARALLEL_MIN)
    for (size_t i = 0; i < n; i++)
        dx[i] += l->delta[i];
}

/* The family's step on the CPU (backend/cpu/cpu_backend.c looks it up by family). */
const LayerKernels cpu_positional_kernels = {
    .forward = positional_forward,
    .backward = positional_backward,
    .forward_at = positional_forward_at,
};
