/* [pad]'s CPU kernels (layers/pad.c has its meaning): each plane copied into a larger one filled
 * with the value; the backward takes the input's window of the delta.
 *
 *   in  [batch][c][h][w]
 *   out [batch][c][oh][ow]   in at row top, column left
 */
#include "layers/pad.h"

#include <string.h>

/* Below this many values a parallel region costs more than it saves. */
#define PAD_PARALLEL_MIN 65536

static void pad_forward(Layer *l, const StepContext *ctx)
{
    const Pad *p = l->priv;
    const Shape i = l->in_shape, o = l->out_shape;
    const int planes = ctx->batch * i.c;
    const size_t out_plane = (size_t)o.h * o.w, in_plane = (size_t)i.h * i.w;
#pragma omp parallel for schedule(static) if ((size_t)planes * out_plane >= PAD_PARALLEL_MIN)
    for (int q = 0; q < planes; q++) {
        float *out = l->out + (size_t)q * out_plane;
        const float *in = l->in[0] + (size_t)q * in_plane;
        for (size_t k = 0; k < out_plane; k++)
            out[k] = p->value;
        for (int y = 0; y < i.h; y++)
            memcpy(out + (size_t)(y + p->top) * o.w + p->left, in + (size_t)y * i.w,
                   (size_t)i.w * sizeof(float));
    }
}

static void pad_backward(Layer *l, const StepContext *ctx)
{
    float *in_delta = l->in_delta[0];
    if (!in_delta)
        return;
    const Pad *p = l->priv;
    const Shape i = l->in_shape, o = l->out_shape;
    const int planes = ctx->batch * i.c;
    const size_t out_plane = (size_t)o.h * o.w, in_plane = (size_t)i.h * i.w;
#pragma omp parallel for schedule(static) if ((size_t)planes * out_plane >= PAD_PARALLEL_MIN)
    for (int q = 0; q < planes; q++) {
        const float *delta = l->delta + (size_t)q * out_plane + (size_t)p->top * o.w + p->left;
        float *d = in_delta + (size_t)q * in_plane;
        for (int y = 0; y < i.h; y++)
            for (int x = 0; x < i.w; x++)
                d[(size_t)y * i.w + x] += delta[(size_t)y * o.w + x];
    }
}

/* The family's step on the CPU (backend/cpu/cpu_backend.c looks it up by family). */
const LayerKernels cpu_pad_kernels = {
    .forward = pad_forward,
    .backward = pad_backward,
};
