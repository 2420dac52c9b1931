/* [convolutional]'s depthwise layers on the CPU (one input channel per group, conv.c chooses):
 * direct loops, their gemms would be a single row each. Filter f reads input channel
 * f / (filters/groups) only. Square windows only (conv.c sends others to im2col + gemm): size
 * is Conv.win's size_h, as are the stride and padding.
 *
 *   in [batch][c][h][w] -> out [batch][filters][out_h][out_w], weights [filters][1][size][size]
 */
#include "backend/cpu/conv.h"

/* The range [lo, hi) of output columns ox whose tap ox*stride + off lies inside [0, w). */
static void valid_columns(int off, int w, int stride, int out_w, int *lo, int *hi)
{
    int a = off >= 0 ? 0 : (-off + stride - 1) / stride;
    int b = w - off <= 0 ? 0 : (w - 1 - off) / stride + 1;
    if (b > out_w)
        b = out_w;
    *lo = a < b ? a : b;
    *hi = b;
}

void conv_depthwise_forward(const Layer *l, const float *x, float *out, int batch)
{
    const Conv *cv = l->priv;
    const Shape in = l->in_shape;
    const int fg = cv->filters / cv->groups, size = cv->win.size_h, stride = cv->win.stride_h;
    const int pad = cv->win.pad_h, out_h = l->out_shape.h, out_w = l->out_shape.w;
    const float *w = conv_weights(l, cv->cpu);
    const int planes = batch * cv->filters;

#pragma omp parallel for schedule(static) if (l->flops * batch >= CONV_PARALLEL_MIN)
    for (int bf = 0; bf < planes; bf++) {
        const int b = bf / cv->filters, f = bf % cv->filters;
        const float *restrict src = x + ((size_t)b * in.c + f / fg) * in.h * in.w;
        const float *restrict wf = w + (size_t)f * size * size;
        float *restrict dst = out + (size_t)bf * out_h * out_w;
        for (int oy = 0; oy < out_h; oy++) {
            float *restrict o = dst + (size_t)oy * out_w;
            for (int ox = 0; ox < out_w; ox++)
                o[ox] = 0.0f;
            for (int ki = 0; ki < size; ki++) {
                const int iy = oy * stride - pad + ki;
                if (iy < 0 || iy >= in.h)
                    continue;
                const float *restrict row = src + (size_t)iy * in.w;
                for (int kj = 0; kj < size; kj++) {
                    const int off = kj - pad;
                    const float wv = wf[ki * size + kj];
                    int lo, hi;
                    valid_columns(off, in.w, stride, out_w, &lo, &hi);
                    if (stride == 1) {
                        for (int ox = lo; ox < hi; ox++)
                            o[ox] += wv * row[ox + off];
                    } else {
                        for (int ox = lo; ox < hi; ox++)
                            o[ox] += wv * row[ox * stride + off];
                    }
                }
            }
        }
    }
}

/* Weight and input gradients; parallel over input channels, each of which owns its
 * filters' weight gradients and its slice of dx, so no two threads touch one value. */
void conv_depthwise_backward(const Layer *l, const float *x, float *dx, int batch)
{
    const Conv *cv = l->priv;
    const Shape in = l->in_shape;
    const int fg = cv->filters / cv->groups, size = cv->win.size_h, stride = cv->win.stride_h;
    const int pad = cv->win.pad_h, out_h = l->out_shape.h, out_w = l->out_shape.w;
    const size_t in_hw = (size_t)in.h * in.w, out_hw = (size_t)out_h * out_w;
    const float *w = conv_weights(l, cv->cpu);
    float *dw = l->params[CONV_WEIGHTS].grad;

#pragma omp parallel for schedule(static) if (l->flops * batch >= CONV_PARALLEL_MIN)
    for (int ch = 0; ch < in.c; ch++) {
        for (int f = ch * fg; f < (ch + 1) * fg; f++) {
            for (int ki = 0; ki < size; ki++) {
                for (int kj = 0; kj < size; kj++) {
                    const int off = kj - pad;
                    const float wv = w[((size_t)f * size + ki) * size + kj];
                    int lo, hi;
                    valid_columns(off, in.w, stride, out_w, &lo, &hi);
                    double acc = 0.0;
                    for (int b = 0; b < batch; b++) {
                        const float *src = x + ((size_t)b * in.c + ch) * in_hw;
                        const float *d = l->delta + ((size_t)b * cv->filters + f) * out_hw;
                        float *dxc = dx ? dx + ((size_t)b * in.c + ch) * in_hw : NULL;
                        for (int oy = 0; oy < out_h; oy++) {
                            const int iy = oy * stride - pad + ki;
                            if (iy < 0 || iy >= in.h)
                                continue;
                            const float *restrict row = src + (size_t)iy * in.w;
                            const float *restrict drow = d + (size_t)oy * out_w;
                            float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
                            for (int ox = lo; ox < hi; ox++)
                                sum += drow[ox] * row[ox * stride + off];
                            acc += sum;
                            if (!dxc)
                                continue;
                            float *restrict dxrow = dxc + (size_t)iy * in.w;
                            for (int ox = lo; ox < hi; ox++)
                                dxrow[ox * stride + off] += wv * drow[ox];
                        }
                    }
                    dw[((size_t)f * size + ki) * size + kj] += (float)acc;
                }
            }
        }
    }
}
