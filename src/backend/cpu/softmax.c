/* [softmax]'s CPU kernels (layers/softmax.c has its meaning, the loss's formula included): a
 * softmax per row and the cross-entropy loss, with its fused gradient.
 *
 *   in, out [batch][groups][n]   labels [batch][groups]
 */
#include "layers/softmax.h"

#include "backend/cpu/softmax_row.h"
#include "core/layer.h"

/* Below this many values a parallel region costs more than it saves. */
#define SOFTMAX_PARALLEL_MIN 32768

/* The label smoothing in effect: the cfg's in training, none in eval mode. */
static float smoothing_of(const Layer *l, const StepContext *ctx)
{
    return ctx->train ? ((const Softmax *)l->priv)->label_smoothing : 0.0f;
}

/* One sample's loss from its inputs x [n] and their log-sum-exp (see the top of the file). */
static double sample_loss(const float *x, size_t n, double log_sum_exp, int label, double smoothing)
{
    double loss = (1 - smoothing) * (log_sum_exp - x[label]);
    if (smoothing > 0) {
        float total = 0;
#pragma omp simd reduction(+ : total)
        for (size_t i = 0; i < n; i++)
            total += x[i];
        loss += smoothing * (log_sum_exp - (double)total / (double)n);
    }
    return loss;
}

static int softmax_resize(Layer *l, int batch, LayerState *st, Error *e)
{
    (void)e;
    Softmax *sm = l->priv;
    sm->row_loss = layer_work_floats(st, (size_t)batch * (size_t)sm->groups);
    return CDL_OK;
}

/* Each row's softmax in parallel, with its loss (0 for a label outside [0, n)) in row_loss;
 * the losses are summed in row order after, so the total does not depend on the threads. */
static void softmax_forward(Layer *l, const StepContext *ctx)
{
    const Softmax *sm = l->priv;
    const float *in = l->in[0];
    const size_t groups = (size_t)sm->groups;
    const size_t n = shape_size(l->out_shape) / groups;
    const int rows = ctx->batch * (int)groups;
    const int *labels = ctx->labels;
    const double smoothing = smoothing_of(l, ctx);
    float *row_loss = sm->row_loss;
#pragma omp parallel for schedule(static) if (rows * n > SOFTMAX_PARALLEL_MIN)
    for (int r = 0; r < rows; r++) {
        const double log_sum_exp = softmax_row(in + r * n, l->out + r * n, n);
        if (labels) {
            const int label = labels[r];
            row_loss[r] = label >= 0 && (size_t)label < n
                              ? (float)sample_loss(in + r * n, n, log_sum_exp, label, smoothing)
                              : 0.0f;
        }
    }
    if (!labels)
        return;
    double loss = 0;
    for (int r = 0; r < rows; r++)
        loss += row_loss[r];
    *ctx->loss += (float)(loss / ctx->loss_divisor);
}

/* Row t of every sample (sequence nets; no loss). */
static void softmax_forward_at(Layer *l, const StepContext *ctx, int t)
{
    const float *in = l->in[0];
    const size_t groups = (size_t)((const Softmax *)l->priv)->groups;
    const size_t n = shape_size(l->out_shape) / groups;
    for (int b = 0; b < ctx->batch; b++) {
        const size_t at = ((size_t)b * groups + (size_t)t) * n;
        softmax_row(in + at, l->out + at, n);
    }
}

static void softmax_backward(Layer *l, const StepContext *ctx)
{
    float *in_delta = l->in_delta[0];
    if (!in_delta)
        return;
    const size_t groups = (size_t)((const Softmax *)l->priv)->groups;
    const size_t n = shape_size(l->out_shape) / groups;
    const int rows = ctx->batch * (int)groups;
    const int *labels = ctx->labels;
    const float inv_divisor = ctx->grad_scale / ctx->loss_divisor, smoothing = smoothing_of(l, ctx);
    /* The smoothed target's weights: every class, and the label on top. */
    const float all_weight = smoothing / (float)n * inv_divisor;
    const float label_weight = (1.0f - smoothing) * inv_divisor;
#pragma omp parallel for schedule(static) if (rows * n > SOFTMAX_PARALLEL_MIN)
    for (int r = 0; r < rows; r++) {
        const float *p = l->out + r * n;
        float *dx = in_delta + r * n;
        if (labels) {
            int label = labels[r];
            if (label < 0 || (size_t)label >= n)
                continue;
            for (size_t i = 0; i < n; i++)
                dx[i] += p[i] * inv_divisor - all_weight;
            dx[label] -= label_weight;
        } else {
            /* dL/dx_i = p_i (dL/dp_i - sum_j p_j dL/dp_j) */
            const float *dy = l->delta + r * n;
            float dot = 0;
#pragma omp simd reduction(+ : dot)
            for (size_t i = 0; i < n; i++)
                dot += p[i] * dy[i];
            for (size_t i = 0; i < n; i++)
                dx[i] += p[i] * (dy[i] - dot);
        }
    }
}

/* The family's step on the CPU (backend/cpu/cpu_backend.c looks it up by family). */
const LayerKernels cpu_softmax_kernels = {
    .resize = softmax_resize,
    .forward = softmax_forward,
    .backward = softmax_backward,
    .forward_at = softmax_forward_at,
};
