/* [dropout]'s and [drop_path]'s CPU kernels (layers/dropout.c has their meaning): inverted dropout
 * in training, a draw per value or per sample, the identity in inference.
 *
 *   in, out [batch][c][h][w]   mask [batch][c][h][w] or [batch]
 */
#include "layers/dropout.h"

#include <string.h>

/* Below this many values a parallel region costs more than it saves. */
#define DROPOUT_PARALLEL_MIN 65536

/* Draws count values of the mask at the key's values at, at + 1, ... and applies them. Value i's
 * draw is computed directly from i, so the loop vectorises and splits across threads with the same
 * mask for any thread count. */
static void drop_run(float *out, float *mask, const float *in, size_t count, uint64_t key,
                     uint64_t at, float p, float scale)
{
#pragma omp parallel for schedule(static) if (count > DROPOUT_PARALLEL_MIN)
    for (size_t i = 0; i < count; i++) {
        mask[i] = rng_uniform_at(key, at + i) < p ? 0.0f : scale;
        out[i] = in[i] * mask[i];
    }
}

static void dropout_forward(Layer *l, const StepContext *ctx)
{
    Dropout *d = l->priv;
    const float *in = l->in[0];
    const size_t sample = shape_size(l->out_shape), n = (size_t)ctx->batch * sample;
    d->mask_is_valid = ctx->train && d->probability > 0;
    if (!d->mask_is_valid) {
        memcpy(l->out, in, n * sizeof *l->out);
        return;
    }
    const uint64_t key = rng_key(ctx->seed, layer_draw_stream(ctx, l));
    const uint64_t stride = dropout_sample_draws(l), first = (uint64_t)ctx->sample_offset * stride;
    float *mask = d->mask, *out = l->out;
    float p = d->probability, scale = d->scale;
    if (d->per_sample) {
        /* [drop_path]: a draw per sample, then each sample times its own */
        for (int b = 0; b < ctx->batch; b++)
            mask[b] = rng_uniform_at(key, first + (uint64_t)b) < p ? 0.0f : scale;
#pragma omp parallel for schedule(static) if (n > DROPOUT_PARALLEL_MIN)
        for (int b = 0; b < ctx->batch; b++)
            for (size_t i = (size_t)b * sample; i < (size_t)(b + 1) * sample; i++)
                out[i] = in[i] * mask[b];
        return;
    }
    /* The pass's values draw in one run where each sample spans its stride, else a run per
     * sample (rows cut, dropout_sample_draws), the runs then split across threads (a run's own
     * loop splits only where it is alone: nested regions run on one thread) */
    const size_t run = stride == sample ? n : sample, runs = n / run;
#pragma omp parallel for schedule(static) if (runs > 1 && n > DROPOUT_PARALLEL_MIN)
    for (size_t r = 0; r < runs; r++)
        drop_run(out + r * run, mask + r * run, in + r * run, run, key,
                 first + r * run / sample * stride, p, scale);
}

/* Inference: row t passes through (sequence nets). */
static void dropout_forward_at(Layer *l, const StepContext *ctx, int t)
{
    const float *in = l->in[0];
    const size_t row = (size_t)l->out_shape.w, sample = shape_size(l->out_shape);
    for (int b = 0; b < ctx->batch; b++) {
        const size_t at = (size_t)b * sample + (size_t)t * row;
        memcpy(l->out + at, in + at, row * sizeof *l->out);
    }
}

static void dropout_backward(Layer *l, const StepContext *ctx)
{
    const Dropout *d = l->priv;
    float *in_delta = l->in_delta[0];
    if (!in_delta)
        return;
    size_t n = (size_t)ctx->batch * shape_size(l->out_shape);
    const float *delta = l->delta, *mask = d->mask;
    if (!d->mask_is_valid) {
#pragma omp parallel for schedule(static) if (n > DROPOUT_PARALLEL_MIN)
        for (size_t i = 0; i < n; i++)
            in_delta[i] += delta[i];
        return;
    }
    const size_t per_draw = dropout_values_per_draw(l);
    if (per_draw > 1) {
#pragma omp parallel for schedule(static) if (n > DROPOUT_PARALLEL_MIN)
        for (int b = 0; b < ctx->batch; b++)
            for (size_t i = (size_t)b * per_draw; i < (size_t)(b + 1) * per_draw; i++)
                in_delta[i] += delta[i] * mask[b];
        return;
    }
#pragma omp parallel for schedule(static) if (n > DROPOUT_PARALLEL_MIN)
    for (size_t i = 0; i < n; i++)
        in_delta[i] += delta[i] * mask[i];
}

/* The family's step on the CPU (backend/cpu/cpu_backend.c looks it up by family, [dropout] and
 * [drop_path] alike). */
const LayerKernels cpu_dropout_kernels = {
    .resize = dropout_resize,
    .forward = dropout_forward,
    .backward = dropout_backward,
    .forward_at = dropout_forward_at,
};
