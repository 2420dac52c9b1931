/* [layer_scale]'s CPU kernels (layers/layer_scale.c has its meaning): each channel times its
 * scale.
 *
 *   in, out [outer][n][inner]: [batch][c][h*w] in an image net, [batch*T][w][1] in a sequence net
 *   scales [n]
 */
#include "layers/layer_scale.h"

#include "backend/cpu/sum_rows.h"

/* Below this many values a parallel region costs more than it saves. */
#define LAYER_SCALE_PARALLEL_MIN 65536

/* dst[r][i] (+)= scales[r % n] * src[r][i] over the rows r of the mini-batch ([outer * n][inner]):
 * the forward (written) and the input gradient (added). */
static void scale_rows(float *dst, const float *src, const Layer *l, int batch, int add)
{
    const ChannelAxis a = ((const LayerScale *)l->priv)->axis;
    const float *scale = l->params[0].data;
    const long rows = (long)batch * a.groups * a.n;
#pragma omp parallel for schedule(static) if (rows * a.inner > LAYER_SCALE_PARALLEL_MIN)
    for (long r = 0; r < rows; r++) {
        const float k = scale[r % a.n];
        const size_t at = (size_t)r * (size_t)a.inner;
#pragma omp simd
        for (size_t i = at; i < at + (size_t)a.inner; i++)
            dst[i] = (add ? dst[i] : 0.0f) + k * src[i];
    }
}

static void layer_scale_forward(Layer *l, const StepContext *ctx)
{
    scale_rows(l->out, l->in[0], l, ctx->batch, 0);
}

/* d in += delta * scales; d scales[k] += the sum of delta * in over channel k's values. */
static void layer_scale_backward(Layer *l, const StepContext *ctx)
{
    const ChannelAxis a = ((const LayerScale *)l->priv)->axis;
    if (l->params[0].grad)
        channel_sums_add(l->params[0].grad, l->delta, l->in[0],
                         (size_t)ctx->batch * (size_t)a.groups, (size_t)a.n, (size_t)a.inner);
    if (l->in_delta[0])
        scale_rows(l->in_delta[0], l->delta, l, ctx->batch, 1);
}

/* The family's step on the CPU (backend/cpu/cpu_backend.c looks it up by family). */
const LayerKernels cpu_layer_scale_kernels = {
    .forward = layer_scale_forward,
    .backward = layer_scale_backward,
};
