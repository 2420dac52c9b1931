/* [layernorm]'s CPU kernels (layers/layernorm.c has its meaning): each group of n values along the
 * axis (a row's w values, or with channels=1 a position's c values) normalised, then scaled and
 * shifted.
 *
 *   in, out [batch * groups][n][inner] (layers/channel_axis.h: [batch*c*h][w][1] or
 *   [batch][c][h*w]); a group x: its n values inner apart
 *   out[x] = (x - mean(x)) / sqrt(var(x) + eps) * scales + biases
 *   mean, inv_std [batch * groups][inner]
 */
#include "layers/layernorm.h"

#include <math.h>

#include "backend/cpu/sum_rows.h"
#include "core/layer.h"

/* Below this many values a parallel region costs more than it saves. */
#define LAYERNORM_PARALLEL_MIN 16384

/* The first value of group g ([batch * groups][inner] order). */
static inline size_t group_start(ChannelAxis a, size_t g)
{
    return g / (size_t)a.inner * (size_t)a.n * (size_t)a.inner + g % (size_t)a.inner;
}

/* Normalises the n values of x (stride apart) into y and returns their statistics; inlined with
 * stride 1 for rows, so that the loops vectorise. */
static inline void normalize_values(const float *x, float *y, size_t n, size_t stride,
                                    const float *scale, const float *bias, float eps,
                                    float *mean_out, float *inv_std_out)
{
    float sum = 0;
#pragma omp simd reduction(+ : sum)
    for (size_t j = 0; j < n; j++)
        sum += x[j * stride];
    const float mean = sum / (float)n;
    float squares = 0;
#pragma omp simd reduction(+ : squares)
    for (size_t j = 0; j < n; j++)
        squares += (x[j * stride] - mean) * (x[j * stride] - mean);
    const float inv_std = 1.0f / sqrtf(squares / (float)n + eps);
#pragma omp simd
    for (size_t j = 0; j < n; j++)
        y[j * stride] = (x[j * stride] - mean) * inv_std * scale[j] + bias[j];
    *mean_out = mean;
    *inv_std_out = inv_std;
}

/* Normalises group g of in into out and keeps its statistics. */
static void normalize_group(const Layer *l, const float *in, float *out, size_t g)
{
    const LayerNorm *ln = l->priv;
    const ChannelAxis a = ln->axis;
    const size_t at = group_start(a, g);
    const float *scale = l->params[P_SCALES].data, *bias = l->params[P_BIASES].data;
    if (a.inner == 1)
        normalize_values(in + at, out + at, (size_t)a.n, 1, scale, bias, ln->eps, &ln->mean[g],
                         &ln->inv_std[g]);
    else
        normalize_values(in + at, out + at, (size_t)a.n, (size_t)a.inner, scale, bias, ln->eps,
                         &ln->mean[g], &ln->inv_std[g]);
}

/* Groups of the mini-batch: [batch * groups][inner]. */
static long group_count(const Layer *l, int batch)
{
    const ChannelAxis a = ((const LayerNorm *)l->priv)->axis;
    return (long)batch * a.groups * a.inner;
}

static void layernorm_forward(Layer *l, const StepContext *ctx)
{
    const float *in = l->in[0];
    const long groups = group_count(l, ctx->batch);
#pragma omp parallel for schedule(static) if (groups * ((LayerNorm *)l->priv)->axis.n >            \
                                              LAYERNORM_PARALLEL_MIN)
    for (long g = 0; g < groups; g++)
        normalize_group(l, in, l->out, (size_t)g);
}

/* Row t of each sample (sequence nets, whose axis is the last: a group per token). */
static void layernorm_forward_at(Layer *l, const StepContext *ctx, int t)
{
    const float *in = l->in[0];
    const size_t tokens = (size_t)l->in_shape.c * (size_t)l->in_shape.h;
    for (int b = 0; b < ctx->batch; b++)
        normalize_group(l, in, l->out, (size_t)b * tokens + (size_t)t);
}

/* The backward of the n values of x (stride apart), dy their dL/dy: dx (NULL: not wanted) += dL/dx,
 * and dy becomes dy * x_hat. With x_hat the normalised input and g = dy * scales:
 *   dx = inv_std * (g - mean(g) - x_hat * mean(g * x_hat)) */
static inline void backward_values(const float *x, float *dy, float *dx, size_t n, size_t stride,
                                   const float *scale, float mean, float inv_std)
{
    float sum_g = 0, sum_g_x_hat = 0;
#pragma omp simd reduction(+ : sum_g, sum_g_x_hat)
    for (size_t j = 0; j < n; j++) {
        const float g = dy[j * stride] * scale[j];
        sum_g += g;
        sum_g_x_hat += g * (x[j * stride] - mean) * inv_std;
    }
    const float mean_g = sum_g / (float)n, mean_g_x_hat = sum_g_x_hat / (float)n;
    if (dx) {
#pragma omp simd
        for (size_t j = 0; j < n; j++)
            dx[j * stride] += inv_std * (dy[j * stride] * scale[j] - mean_g -
                                         (x[j * stride] - mean) * inv_std * mean_g_x_hat);
    }
#pragma omp simd
    for (size_t j = 0; j < n; j++)
        dy[j * stride] *= (x[j * stride] - mean) * inv_std;
}

/* grad [n] += the sums of x [batch * groups][n][inner] over everything but the axis. */
static void axis_sums_add(float *grad, const float *x, ChannelAxis a, int batch)
{
    const size_t outer = (size_t)batch * (size_t)a.groups;
    if (a.inner == 1)
        sum_rows_add(grad, x, outer, (size_t)a.n);
    else
        channel_sums_add(grad, x, NULL, outer, (size_t)a.n, (size_t)a.inner);
}

/* dbiases += the sums of dy over everything but the axis, dscales += those of dy * x_hat: the
 * group pass overwrites l->delta (dy, no longer needed by then) with dy * x_hat, so that both
 * parameter gradients are plain sums. */
static void layernorm_backward(Layer *l, const StepContext *ctx)
{
    const LayerNorm *ln = l->priv;
    const ChannelAxis a = ln->axis;
    const float *in = l->in[0], *scale = l->params[P_SCALES].data;
    float *dx_all = l->in_delta[0];
    const long groups = group_count(l, ctx->batch);

    axis_sums_add(l->params[P_BIASES].grad, l->delta, a, ctx->batch);
#pragma omp parallel for schedule(static) if (groups * a.n > LAYERNORM_PARALLEL_MIN)
    for (long g = 0; g < groups; g++) {
        const size_t at = group_start(a, (size_t)g);
        float *dx = dx_all ? dx_all + at : NULL;
        if (a.inner == 1)
            backward_values(in + at, l->delta + at, dx, (size_t)a.n, 1, scale, ln->mean[g],
                            ln->inv_std[g]);
        else
            backward_values(in + at, l->delta + at, dx, (size_t)a.n, (size_t)a.inner, scale,
                            ln->mean[g], ln->inv_std[g]);
    }
    axis_sums_add(l->params[P_SCALES].grad, l->delta, a, ctx->batch);
}

/* The family's step on the CPU (backend/cpu/cpu_backend.c looks it up by family). */
const LayerKernels cpu_layernorm_kernels = {
    .resize = layernorm_resize,
    .forward = layernorm_forward,
    .backward = layernorm_backward,
    .forward_at = layernorm_forward_at,
};
