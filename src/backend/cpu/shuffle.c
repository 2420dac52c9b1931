/* [shuffle]'s CPU kernels (layers/shuffle.c has its meaning): a permutation of each sample's
 * channel planes (shuffle_source).
 *
 *   in, out [batch][c][h][w]
 */
#include "layers/shuffle.h"

#include <string.h>

/* Below this many values a parallel region costs more than it saves. */
#define SHUFFLE_PARALLEL_MIN 65536

static void shuffle_forward(Layer *l, const StepContext *ctx)
{
    const Shape s = l->in_shape;
    const int groups = ((const Shuffle *)l->priv)->groups, planes = ctx->batch * s.c;
    const size_t plane = (size_t)s.h * s.w;
#pragma omp parallel for schedule(static) if ((size_t)planes * plane >= SHUFFLE_PARALLEL_MIN)
    for (int p = 0; p < planes; p++) {
        const int b = p / s.c, from = b * s.c + shuffle_source(p % s.c, s.c, groups);
        memcpy(l->out + (size_t)p * plane, l->in[0] + (size_t)from * plane, plane * sizeof(float));
    }
}

/* A permutation: every input plane receives exactly one output plane's delta. */
static void shuffle_backward(Layer *l, const StepContext *ctx)
{
    float *in_delta = l->in_delta[0];
    if (!in_delta)
        return;
    const Shape s = l->in_shape;
    const int groups = ((const Shuffle *)l->priv)->groups, planes = ctx->batch * s.c;
    const size_t plane = (size_t)s.h * s.w;
#pragma omp parallel for schedule(static) if ((size_t)planes * plane >= SHUFFLE_PARALLEL_MIN)
    for (int p = 0; p < planes; p++) {
        const int b = p / s.c, from = b * s.c + shuffle_source(p % s.c, s.c, groups);
        float *d = in_delta + (size_t)from * plane;
        const float *delta = l->delta + (size_t)p * plane;
        for (size_t i = 0; i < plane; i++)
            d[i] += delta[i];
    }
}

/* The family's step on the CPU (backend/cpu/cpu_backend.c looks it up by family). */
const LayerKernels cpu_shuffle_kernels = {
    .forward = shuffle_forward,
    .backward = shuffle_backward,
};
