/* [reorg]'s CPU kernels (layers/reorg.c has its meaning and darknet's order): a fixed
 * permutation that trades space for channels, with s = stride.
 *
 *   in  [batch][c][h][w]
 *   out [batch][c*s*s][h/s][w/s]
 */
#include "layers/reorg.h"

/* The input index (within a sample) that output index (i, j, k), taken with the input's dims
 * [c][h][w], reads. */
static inline size_t source_index(Shape in, int s, int i, int j, int k)
{
    const int oc = in.c / (s * s), c2 = k % oc, offset = k / oc;
    const size_t w2 = (size_t)i * s + offset % s, h2 = (size_t)j * s + offset / s;
    return w2 + (size_t)in.w * s * (h2 + (size_t)in.h * s * c2);
}

static void reorg_forward(Layer *l, const StepContext *ctx)
{
    const float *in = l->in[0];
    const Shape is = l->in_shape;
    const int s = reorg_stride(l);
    const size_t n = shape_size(is);
    const int planes = ctx->batch * is.c;
#pragma omp parallel for schedule(static) if ((size_t)planes * is.h * is.w >= 65536)
    for (int p = 0; p < planes; p++) {
        const int b = p / is.c, k = p % is.c;
        float *out = l->out + (size_t)p * is.h * is.w;
        const float *src = in + (size_t)b * n;
        for (int j = 0; j < is.h; j++)
            for (int i = 0; i < is.w; i++)
                out[(size_t)j * is.w + i] = src[source_index(is, s, i, j, k)];
    }
}

static void reorg_backward(Layer *l, const StepContext *ctx)
{
    float *in_delta = l->in_delta[0];
    if (!in_delta)
        return;
    const Shape is = l->in_shape;
    const int s = reorg_stride(l);
    const size_t n = shape_size(is);
    /* A permutation: every input value receives exactly one delta, so planes do not race. */
    const int planes = ctx->batch * is.c;
#pragma omp parallel for schedule(static) if ((size_t)planes * is.h * is.w >= 65536)
    for (int p = 0; p < planes; p++) {
        const int b = p / is.c, k = p % is.c;
        const float *d = l->delta + (size_t)p * is.h * is.w;
        float *dsrc = in_delta + (size_t)b * n;
        for (int j = 0; j < is.h; j++)
            for (int i = 0; i < is.w; i++)
                dsrc[source_index(is, s, i, j, k)] += d[(size_t)j * is.w + i];
    }
}

/* The family's step on the CPU (backend/cpu/cpu_backend.c looks it up by family). */
const LayerKernels cpu_reorg_kernels = {
    .forward = reorg_forward,
    .backward = reorg_backward,
};
