/* [crop]'s CPU kernels (layers/crop.c has its meaning): a window of the input, the centre in
 * inference and a random one per sample in training, scaled and shifted.
 *
 *   in  [batch][c][h][w]
 *   out [batch][c][crop_height][crop_width]
 */
#include "layers/crop.h"

static int crop_resize(Layer *l, int batch, LayerState *st, Error *e)
{
    (void)e;
    Crop *cr = l->priv;
    cr->windows = layer_state_bytes(st, (size_t)batch * 3 * sizeof *cr->windows);
    return CDL_OK;
}

/* Chooses each sample's window: the centre in inference, random ones in training. */
static void choose_windows(const Layer *l, const StepContext *ctx, Crop *cr)
{
    const int spare_h = l->in_shape.h - l->out_shape.h, spare_w = l->in_shape.w - l->out_shape.w;
    const uint64_t key = rng_key(ctx->seed, layer_draw_stream(ctx, l));
    for (int b = 0; b < ctx->batch; b++) {
        int *win = cr->windows + 3 * b;
        if (!ctx->train) {
            win[0] = spare_h / 2, win[1] = spare_w / 2, win[2] = 0;
            continue;
        }
        Rng r; /* the sample's own stream: its window does not depend on its rank */
        rng_seed(&r, key, (uint64_t)(ctx->sample_offset + b));
        win[0] = (int)rng_below(&r, (uint32_t)spare_h + 1);
        win[1] = (int)rng_below(&r, (uint32_t)spare_w + 1);
        win[2] = cr->flip && rng_below(&r, 2);
    }
}

/* The input index of output column x of a window starting at column x0 (mirrored or not). */
static inline int source_column(int x, int x0, int mirrored, int out_w)
{
    return x0 + (mirrored ? out_w - 1 - x : x);
}

static void crop_forward(Layer *l, const StepContext *ctx)
{
    Crop *cr = l->priv;
    choose_windows(l, ctx, cr);
    const float *in = l->in[0];
    const Shape is = l->in_shape, os = l->out_shape;
    const int planes = ctx->batch * os.c;
#pragma omp parallel for schedule(static) if ((size_t)planes * os.h * os.w >= 65536)
    for (int p = 0; p < planes; p++) {
        const int *win = cr->windows + 3 * (p / os.c);
        const float *src = in + (size_t)p * is.h * is.w;
        float *dst = l->out + (size_t)p * os.h * os.w;
        for (int y = 0; y < os.h; y++)
            for (int x = 0; x < os.w; x++)
                dst[y * os.w + x] =
                    src[(size_t)(win[0] + y) * is.w + source_column(x, win[1], win[2], os.w)] *
                        cr->scale +
                    cr->shift;
    }
}

static void crop_backward(Layer *l, const StepContext *ctx)
{
    const Crop *cr = l->priv;
    float *in_delta = l->in_delta[0];
    if (!in_delta)
        return;
    const Shape is = l->in_shape, os = l->out_shape;
    const int planes = ctx->batch * os.c;
#pragma omp parallel for schedule(static) if ((size_t)planes * os.h * os.w >= 65536)
    for (int p = 0; p < planes; p++) {
        const int *win = cr->windows + 3 * (p / os.c);
        float *dsrc = in_delta + (size_t)p * is.h * is.w;
        const float *d = l->delta + (size_t)p * os.h * os.w;
        for (int y = 0; y < os.h; y++)
            for (int x = 0; x < os.w; x++)
                dsrc[(size_t)(win[0] + y) * is.w + source_column(x, win[1], win[2], os.w)] +=
                    d[y * os.w + x] * cr->scale;
    }
}

/* The family's step on the CPU (backend/cpu/cpu_backend.c looks it up by family). */
const LayerKernels cpu_crop_kernels = {
    .resize = crop_resize,
    .forward = crop_forward,
    .backward = crop_backward,
};
