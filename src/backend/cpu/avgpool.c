/* [avgpool]'s CPU kernels (layers/avgpool.c has its meaning): global average pooling over plain
 * NCHW or oneDNN's blocked nChw8c input, and the windowed average over plain NCHW.
 *
 *   in  [batch][c][h][w]
 *   out [batch][c][1][1], or windowed [batch][c][out_h][out_w]
 */
#include "layers/avgpool.h"
#include "backend/cpu/dnnl_conv.h"
#include "core/layer.h"

/* Below this many input values a parallel region costs more than it saves. */
#define AVGPOOL_PARALLEL_MIN 65536

/* The forward of an input in nChw8c (Layer.blocked): [batch][c/L][h][w][L] (L = DNNL_LANES), the
 * lanes of a block summed side by side; the output plain. */
static void avgpool_forward_blocked(Layer *l, int batch)
{
    const int blocks = batch * l->in_shape.c / DNNL_LANES;
    const size_t spatial = (size_t)l->in_shape.h * l->in_shape.w;
    const float inv = 1.0f / (float)spatial;
#pragma omp parallel for schedule(static) if (blocks * spatial * DNNL_LANES > AVGPOOL_PARALLEL_MIN)
    for (int p = 0; p < blocks; p++) {
        const float *x = l->in[0] + p * spatial * DNNL_LANES;
        float sum[DNNL_LANES] = {0};
        for (size_t k = 0; k < spatial; k++)
            for (int c = 0; c < DNNL_LANES; c++)
                sum[c] += x[k * DNNL_LANES + c];
        for (int c = 0; c < DNNL_LANES; c++)
            l->out[p * DNNL_LANES + c] = sum[c] * inv;
    }
}

/* The rows (or columns) of window i along an axis of extent n, clipped to [0, n): [*lo, *hi). */
static void window_span(const Avgpool *a, int i, int n, int *lo, int *hi)
{
    const int start = i * a->stride - a->padding;
    *lo = start > 0 ? start : 0;
    *hi = start + a->size < n ? start + a->size : n;
}

/* Windowed: each output the sum of its window inside the plane over size*size. */
static void avgpool_window_forward(Layer *l, int batch)
{
    const Avgpool *a = l->priv;
    const Shape in = l->in_shape, out = l->out_shape;
    const int planes = batch * in.c;
    const size_t in_plane = (size_t)in.h * in.w, out_plane = (size_t)out.h * out.w;
    const float inv = 1.0f / (float)(a->size * a->size);
#pragma omp parallel for schedule(static) if (planes * out_plane * a->size * a->size >             \
                                              AVGPOOL_PARALLEL_MIN)
    for (int p = 0; p < planes; p++) {
        const float *x = l->in[0] + p * in_plane;
        float *y = l->out + p * out_plane;
        for (int i = 0; i < out.h; i++) {
            int y0, y1;
            window_span(a, i, in.h, &y0, &y1);
            for (int j = 0; j < out.w; j++) {
                int x0, x1;
                window_span(a, j, in.w, &x0, &x1);
                float sum = 0;
                for (int r = y0; r < y1; r++)
                    for (int c = x0; c < x1; c++)
                        sum += x[r * in.w + c];
                y[i * out.w + j] = sum * inv;
            }
        }
    }
}

/* Windowed: each output's delta over size*size added to its window's inputs, in output order. */
static void avgpool_window_backward(Layer *l, int batch)
{
    const Avgpool *a = l->priv;
    const Shape in = l->in_shape, out = l->out_shape;
    const int planes = batch * in.c;
    const size_t in_plane = (size_t)in.h * in.w, out_plane = (size_t)out.h * out.w;
    const float inv = 1.0f / (float)(a->size * a->size);
#pragma omp parallel for schedule(static) if (planes * out_plane * a->size * a->size >             \
                                              AVGPOOL_PARALLEL_MIN)
    for (int p = 0; p < planes; p++) {
        float *dx = l->in_delta[0] + p * in_plane;
        const float *dy = l->delta + p * out_plane;
        for (int i = 0; i < out.h; i++) {
            int y0, y1;
            window_span(a, i, in.h, &y0, &y1);
            for (int j = 0; j < out.w; j++) {
                int x0, x1;
                window_span(a, j, in.w, &x0, &x1);
                const float d = dy[i * out.w + j] * inv;
                for (int r = y0; r < y1; r++)
                    for (int c = x0; c < x1; c++)
                        dx[r * in.w + c] += d;
            }
        }
    }
}

static void avgpool_forward(Layer *l, const StepContext *ctx)
{
    if (((const Avgpool *)l->priv)->size) {
        avgpool_window_forward(l, ctx->batch);
        return;
    }
    if (layer_blocked(l, ctx) & 1) {
        avgpool_forward_blocked(l, ctx->batch);
        return;
    }
    const float *in = l->in[0];
    int planes = ctx->batch * l->in_shape.c;
    size_t spatial = (size_t)l->in_shape.h * l->in_shape.w;
    float inv = 1.0f / (float)spatial;
#pragma omp parallel for schedule(static) if (planes * spatial > AVGPOOL_PARALLEL_MIN)
    for (int p = 0; p < planes; p++) {
        const float *x = in + p * spatial;
        float sum = 0;
#pragma omp simd reduction(+ : sum)
        for (size_t k = 0; k < spatial; k++)
            sum += x[k];
        l->out[p] = sum * inv;
    }
}

/* The backward into an input delta in nChw8c: each block's lanes take their channels'. */
static void avgpool_backward_blocked(Layer *l, int batch)
{
    const int blocks = batch * l->in_shape.c / DNNL_LANES;
    const size_t spatial = (size_t)l->in_shape.h * l->in_shape.w;
    const float inv = 1.0f / (float)spatial;
#pragma omp parallel for schedule(static) if (blocks * spatial * DNNL_LANES > AVGPOOL_PARALLEL_MIN)
    for (int p = 0; p < blocks; p++) {
        float *dx = l->in_delta[0] + p * spatial * DNNL_LANES;
        float d[DNNL_LANES];
        for (int c = 0; c < DNNL_LANES; c++)
            d[c] = l->delta[p * DNNL_LANES + c] * inv;
        for (size_t k = 0; k < spatial; k++)
            for (int c = 0; c < DNNL_LANES; c++)
                dx[k * DNNL_LANES + c] += d[c];
    }
}

static void avgpool_backward(Layer *l, const StepContext *ctx)
{
    float *in_delta = l->in_delta[0];
    if (!in_delta)
        return;
    if (((const Avgpool *)l->priv)->size) {
        avgpool_window_backward(l, ctx->batch);
        return;
    }
    if (layer_blocked(l, ctx) & 1) {
        avgpool_backward_blocked(l, ctx->batch);
        return;
    }
    int planes = ctx->batch * l->in_shape.c;
    size_t spatial = (size_t)l->in_shape.h * l->in_shape.w;
    float inv = 1.0f / (float)spatial;
#pragma omp parallel for schedule(static) if (planes * spatial > AVGPOOL_PARALLEL_MIN)
    for (int p = 0; p < planes; p++) {
        float *dx = in_delta + p * spatial;
        float d = l->delta[p] * inv;
        for (size_t k = 0; k < spatial; k++)
            dx[k] += d;
    }
}

/* Global pooling of whole channel blocks: the input in nChw8c, the output plain
 * (LayerKernels.layout); windowed pooling plain. */
static int avgpool_layout(const Layer *l, int k)
{
    return k == 0 && !((const Avgpool *)l->priv)->size && l->in_shape.c % DNNL_LANES == 0
               ? LAYOUT_FREE
               : LAYOUT_PLAIN;
}

const LayerKernels cpu_avgpool_kernels = {
    .layout = avgpool_layout,
    .forward = avgpool_forward,
    .backward = avgpool_backward,
};
