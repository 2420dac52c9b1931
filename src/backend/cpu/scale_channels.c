/* [scale_channels]'s CPU kernels (layers/scale_channels.c has its meaning): each plane of `from`
 * times its channel's scale, then the activation.
 *
 *   scale [batch][c][1][1]   input 0
 *   from  [batch][c][h][w]   input 1; also the output shape
 *   out   [batch][c][h][w]
 *
 * In an inference forward from and out may both be in oneDNN's blocked layout instead,
 * [batch][c/L][h][w][L] (L = DNNL_LANES, Layer.blocked), so that a squeeze-excitation's
 * depthwise convolution, [avgpool] and the projection after it pass blocked tensors. */
#include "backend/cpu/dnnl_conv.h"
#include "core/layer.h"

/* Below this many values a parallel region costs more than it saves. */
#define SCALE_CHANNELS_PARALLEL_MIN 65536

static void scale_channels_forward(Layer *l, const StepContext *ctx)
{
    const float *scale = l->in[0], *from = l->in[1];
    float *out = layer_activation_input(l);
    const int planes = ctx->batch * l->out_shape.c;
    const size_t plane = (size_t)l->out_shape.h * l->out_shape.w;
    if (layer_blocked(l, ctx) >> 1 & 1) { /* from and out blocked: L scales side by side */
        const int blocks = planes / DNNL_LANES;
#pragma omp parallel for schedule(static) if ((size_t)planes * plane > SCALE_CHANNELS_PARALLEL_MIN)
        for (int p = 0; p < blocks; p++) {
            const float *s = scale + (size_t)p * DNNL_LANES;
            for (size_t i = (size_t)p * plane; i < (size_t)(p + 1) * plane; i++)
                for (int k = 0; k < DNNL_LANES; k++)
                    out[i * DNNL_LANES + k] = s[k] * from[i * DNNL_LANES + k];
        }
    } else {
#pragma omp parallel for schedule(static) if ((size_t)planes * plane > SCALE_CHANNELS_PARALLEL_MIN)
        for (int p = 0; p < planes; p++)
            for (size_t i = (size_t)p * plane; i < (size_t)(p + 1) * plane; i++)
                out[i] = scale[p] * from[i];
    }
    layer_activate(l, ctx->batch);
}

/* d from += delta * scale; d scale += the plane's sum of delta * from. A plane per iteration: the
 * two inputs may be one layer (then both sums go into one delta, each element from one plane). */
static void scale_channels_backward(Layer *l, const StepContext *ctx)
{
    layer_activation_backward(l, ctx->batch);
    const float *scale = l->in[0], *from = l->in[1], *delta = l->delta;
    float *scale_delta = l->in_delta[0], *from_delta = l->in_delta[1];
    const int planes = ctx->batch * l->out_shape.c;
    const size_t plane = (size_t)l->out_shape.h * l->out_shape.w;
#pragma omp parallel for schedule(static) if ((size_t)planes * plane > SCALE_CHANNELS_PARALLEL_MIN)
    for (int p = 0; p < planes; p++) {
        const size_t begin = (size_t)p * plane, end = begin + plane;
        if (scale_delta) {
            float sum = 0.0f;
            for (size_t i = begin; i < end; i++)
                sum += delta[i] * from[i];
            scale_delta[p] += sum;
        }
        if (from_delta)
            for (size_t i = begin; i < end; i++)
                from_delta[i] += delta[i] * scale[p];
    }
}

/* from (input 1) and the output blocked together, in inference nets, of whole channel blocks;
 * the scales plain (LayerKernels.layout). */
static int scale_channels_layout(const Layer *l, int k)
{
    return k != 0 && !(l->blocked >> LAYER_TRAIN_BIT & 1) && l->out_shape.c % DNNL_LANES == 0
               ? LAYOUT_TIED
               : LAYOUT_PLAIN;
}

/* The family's step on the CPU (backend/cpu/cpu_backend.c looks it up by family). */
const LayerKernels cpu_scale_channels_kernels = {
    .layout = scale_channels_layout,
    .forward = scale_channels_forward,
    .backward = scale_channels_backward,
};
