/* [upsample]'s CPU kernels (layers/upsample.c has its meaning): darknet's nearest-neighbour
 * upsampling by an integer stride, times scale, and its downsampling (a negative stride): each
 * output the sum of its stride x stride window, times scale.
 *
 *   upsampling    in [batch][c][h][w]   out [batch][c][h*stride][w*stride]
 *   downsampling  in [batch][c][h][w]   out [batch][c][h/stride][w/stride]
 *
 * Both directions are one pair of maps between a small plane and a large one: spreading each
 * small value over its window, and gathering each window's sum into its small value. Upsampling
 * spreads forward and gathers backward; downsampling the other way round. */
#include "layers/upsample.h"

/* big [planes][sh*s][sw*s] (=, or += with add) scale * small[planes][sh][sw], each value over its
 * s x s window. */
static void upsample_spread(float *big, const float *small, int planes, int sh, int sw, int s,
                            float scale, int add)
{
    const int bh = sh * s, bw = sw * s;
#pragma omp parallel for schedule(static) if ((size_t)planes * bh * bw >= 65536)
    for (int p = 0; p < planes; p++) {
        const float *src = small + (size_t)p * sh * sw;
        float *dst = big + (size_t)p * bh * bw;
        for (int y = 0; y < bh; y++)
            for (int x = 0; x < bw; x++) {
                const float v = scale * src[(size_t)(y / s) * sw + x / s];
                dst[(size_t)y * bw + x] = add ? dst[(size_t)y * bw + x] + v : v;
            }
    }
}

/* small[planes][sh][sw] (=, or += with add) the sum of scale * big[planes][sh*s][sw*s] over its
 * s x s window, added in darknet's order (row by row across the window). */
static void upsample_gather(float *small, const float *big, int planes, int sh, int sw, int s,
                            float scale, int add)
{
    const int bw = sw * s;
#pragma omp parallel for schedule(static) if ((size_t)planes * sh * sw * s * s >= 65536)
    for (int p = 0; p < planes; p++)
        for (int y = 0; y < sh; y++)
            for (int x = 0; x < sw; x++) {
                const float *window =
                    big + ((size_t)p * sh * s + (size_t)y * s) * bw + (size_t)x * s;
                float *dst = small + ((size_t)p * sh + y) * sw + x;
                float sum = add ? *dst : 0.0f;
                for (int wy = 0; wy < s; wy++)
                    for (int wx = 0; wx < s; wx++)
                        sum += scale * window[(size_t)wy * bw + wx];
                *dst = sum;
            }
}

static void upsample_forward(Layer *l, const StepContext *ctx)
{
    const Upsample *up = l->priv;
    const int planes = ctx->batch * l->out_shape.c;
    if (up->downsample)
        upsample_gather(l->out, l->in[0], planes, l->out_shape.h, l->out_shape.w, up->stride,
                        up->scale, 0);
    else
        upsample_spread(l->out, l->in[0], planes, l->in_shape.h, l->in_shape.w, up->stride,
                        up->scale, 0);
}

static void upsample_backward(Layer *l, const StepContext *ctx)
{
    const Upsample *up = l->priv;
    float *in_delta = l->in_delta[0];
    if (!in_delta)
        return;
    const int planes = ctx->batch * l->out_shape.c;
    if (up->downsample)
        upsample_spread(in_delta, l->delta, planes, l->out_shape.h, l->out_shape.w, up->stride,
                        up->scale, 1);
    else
        upsample_gather(in_delta, l->delta, planes, l->in_shape.h, l->in_shape.w, up->stride,
                        up->scale, 1);
}

/* The family's step on the CPU (backend/cpu/cpu_backend.c looks it up by family). */
const LayerKernels cpu_upsample_kernels = {
    .forward = upsample_forward,
    .backward = upsample_backward,
};
