/* [layernorm]'s CPU kernels (layers/layernorm.c has its meaning): each row of w values
 * normalised, then scaled and shifted.
 *
 *   in, out [batch][rows][w] (rows = c*h)
 *   out[r] = (in[r] - mean(in[r])) / sqrt(var(in[r]) + eps) * scales + biases
 */
#include "layers/layernorm.h"

#include <math.h>

#include "backend/cpu/sum_rows.h"
#include "core/layer.h"

/* Below this many values a parallel region costs more than it saves. */
#define LAYERNORM_PARALLEL_MIN 16384

/* Normalises row r of in into out ([n] each, n = w) and keeps its statistics. */
static void normalize_row(const Layer *l, const float *in, float *out, size_t r)
{
    const LayerNorm *ln = l->priv;
    const size_t n = (size_t)l->in_shape.w;
    const float *x = in + r * n, *scale = l->params[P_SCALES].data;
    const float *bias = l->params[P_BIASES].data;
    float *y = out + r * n;
    float sum = 0;
#pragma omp simd reduction(+ : sum)
    for (size_t j = 0; j < n; j++)
        sum += x[j];
    const float mean = sum / (float)n;
    float squares = 0;
#pragma omp simd reduction(+ : squares)
    for (size_t j = 0; j < n; j++)
        squares += (x[j] - mean) * (x[j] - mean);
    const float inv_std = 1.0f / sqrtf(squares / (float)n + ln->eps);
#pragma omp simd
    for (size_t j = 0; j < n; j++)
        y[j] = (x[j] - mean) * inv_std * scale[j] + bias[j];
    ln->mean[r] = mean;
    ln->inv_std[r] = inv_std;
}

static void layernorm_forward(Layer *l, const StepContext *ctx)
{
    const float *in = l->in[0];
    const long rows = (long)ctx->batch * l->in_shape.c * l->in_shape.h;
#pragma omp parallel for schedule(static) if (rows * l->in_shape.w > LAYERNORM_PARALLEL_MIN)
    for (long r = 0; r < rows; r++)
        normalize_row(l, in, l->out, (size_t)r);
}

static void layernorm_forward_at(Layer *l, const StepContext *ctx, int t)
{
    const float *in = l->in[0];
    const size_t tokens = (size_t)l->in_shape.c * (size_t)l->in_shape.h;
    for (int b = 0; b < ctx->batch; b++)
        normalize_row(l, in, l->out, (size_t)b * tokens + (size_t)t);
}

/* With x_hat the normalised input and g = dy * scales, per row of n values:
 *   dx = inv_std * (g - mean(g) - x_hat * mean(g * x_hat))
 *   dbiases += sum over rows of dy, dscales += sum over rows of dy * x_hat
 * The row pass overwrites l->delta (dy, no longer needed by then) with dy * x_hat, so that both
 * parameter gradients are plain column sums. */
static void layernorm_backward(Layer *l, const StepContext *ctx)
{
    const LayerNorm *ln = l->priv;
    const float *in = l->in[0], *scale = l->params[P_SCALES].data;
    float *dx_all = l->in_delta[0];
    const size_t n = (size_t)l->in_shape.w;
    const long rows = (long)ctx->batch * l->in_shape.c * l->in_shape.h;

    sum_rows_add(l->params[P_BIASES].grad, l->delta, (size_t)rows, n);
#pragma omp parallel for schedule(static) if (rows * (long)n > LAYERNORM_PARALLEL_MIN)
    for (long r = 0; r < rows; r++) {
        const float *x = in + r * n;
        float *dy = l->delta + r * n;
        const float mean = ln->mean[r], inv_std = ln->inv_std[r];
        float sum_g = 0, sum_g_x_hat = 0;
#pragma omp simd reduction(+ : sum_g, sum_g_x_hat)
        for (size_t j = 0; j < n; j++) {
            const float g = dy[j] * scale[j];
            sum_g += g;
            sum_g_x_hat += g * (x[j] - mean) * inv_std;
        }
        const float mean_g = sum_g / (float)n, mean_g_x_hat = sum_g_x_hat / (float)n;
        if (dx_all) {
            float *dx = dx_all + r * n;
#pragma omp simd
            for (size_t j = 0; j < n; j++)
                dx[j] +=
                    inv_std * (dy[j] * scale[j] - mean_g - (x[j] - mean) * inv_std * mean_g_x_hat);
        }
#pragma omp simd
        for (size_t j = 0; j < n; j++)
            dy[j] *= (x[j] - mean) * inv_std;
    }
    sum_rows_add(l->params[P_SCALES].grad, l->delta, (size_t)rows, n);
}

/* The family's step on the CPU (backend/cpu/cpu_backend.c looks it up by family). */
const LayerKernels cpu_layernorm_kernels = {
    .resize = layernorm_resize,
    .forward = layernorm_forward,
    .backward = layernorm_backward,
    .forward_at = layernorm_forward_at,
};
