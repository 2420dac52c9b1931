/* [upsample]'s CPU kernels (layers/upsample.c has its meaning): nearest-neighbour upsampling
 * by an integer stride, times scale.
 *
 *   in  [batch][c][h][w]
 *   out [batch][c][h*stride][w*stride]
 */
#include "layers/upsample.h"

static void upsample_forward(Layer *l, const StepContext *ctx)
{
    const Upsample *up = l->priv;
    const float *in = l->in[0];
    const Shape is = l->in_shape, os = l->out_shape;
    const int planes = ctx->batch * os.c, s = up->stride;
#pragma omp parallel for schedule(static) if ((size_t)planes * os.h * os.w >= 65536)
    for (int p = 0; p < planes; p++) {
        const float *src = in + (size_t)p * is.h * is.w;
        float *dst = l->out + (size_t)p * os.h * os.w;
        for (int y = 0; y < os.h; y++)
            for (int x = 0; x < os.w; x++)
                dst[(size_t)y * os.w + x] = up->scale * src[(size_t)(y / s) * is.w + x / s];
    }
}

static void upsample_backward(Layer *l, const StepContext *ctx)
{
    const Upsample *up = l->priv;
    float *in_delta = l->in_delta[0];
    if (!in_delta)
        return;
    const Shape is = l->in_shape, os = l->out_shape;
    const int planes = ctx->batch * os.c, s = up->stride;
#pragma omp parallel for schedule(static) if ((size_t)planes * os.h * os.w >= 65536)
    for (int p = 0; p < planes; p++) {
        float *dsrc = in_delta + (size_t)p * is.h * is.w;
        const float *d = l->delta + (size_t)p * os.h * os.w;
        for (int y = 0; y < os.h; y++)
            for (int x = 0; x < os.w; x++)
                dsrc[(size_t)(y / s) * is.w + x / s] += up->scale * d[(size_t)y * os.w + x];
    }
}

/* The family's step on the CPU (backend/cpu/cpu_backend.c looks it up by family). */
const LayerKernels cpu_upsample_kernels = {
    .forward = upsample_forward,
    .backward = upsample_backward,
};
