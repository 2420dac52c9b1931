/* im2col / col2im for one image, threaded with OpenMP. Each output element is written by
 * exactly one thread in a fixed order, so results do not depend on the thread count. */
#include "ops/im2col.h"

#include <string.h>

/* Below this many column floats a parallel region costs more than it saves. */
#define IM2COL_PARALLEL_MIN 16384

/* The range [lo, hi) of output columns ox whose tap ox*stride + off lies inside [0, w). */
static void valid_range(int off, int w, int stride, int out_w, int *lo, int *hi)
{
    int l = off >= 0 ? 0 : (-off + stride - 1) / stride;
    int h = w - off <= 0 ? 0 : (w - 1 - off) / stride + 1;
    if (h > out_w)
        h = out_w;
    if (l > h)
        l = h;
    *lo = l;
    *hi = h;
}

void im2col(const float *restrict im, int c, int h, int w, int size, int stride, int pad,
            float *restrict col, size_t ldcol)
{
    const int out_h = conv_out_size(h, size, stride, pad);
    const int out_w = conv_out_size(w, size, stride, pad);
    const int rows = c * size * size;
    const size_t work = (size_t)rows * (size_t)out_h * (size_t)out_w;

#pragma omp parallel for schedule(static) if (work >= IM2COL_PARALLEL_MIN)
    for (int r = 0; r < rows; r++) {
        const int kj = r % size, ki = (r / size) % size, ch = r / (size * size);
        const int off = kj - pad;
        const float *restrict src = im + (size_t)ch * h * w;
        float *restrict dst = col + (size_t)r * ldcol;
        int lo, hi;
        valid_range(off, w, stride, out_w, &lo, &hi);
        for (int oy = 0; oy < out_h; oy++) {
            float *restrict d = dst + (size_t)oy * out_w;
            const int iy = oy * stride - pad + ki;
            if (iy < 0 || iy >= h) {
                memset(d, 0, (size_t)out_w * sizeof *d);
                continue;
            }
            const float *restrict s = src + (size_t)iy * w;
            for (int ox = 0; ox < lo; ox++)
                d[ox] = 0.0f;
            if (stride == 1) {
                memcpy(d + lo, s + lo + off, (size_t)(hi - lo) * sizeof *d);
            } else {
                for (int ox = lo; ox < hi; ox++)
                    d[ox] = s[ox * stride + off];
            }
            for (int ox = hi; ox < out_w; ox++)
                d[ox] = 0.0f;
        }
    }
}

void col2im(const float *restrict col, int c, int h, int w, int size, int stride, int pad,
            size_t ldcol, float *restrict im)
{
    const int out_h = conv_out_size(h, size, stride, pad);
    const int out_w = conv_out_size(w, size, stride, pad);
    const size_t work = (size_t)c * size * size * (size_t)out_h * (size_t)out_w;

    /* Parallel over image rows (channel, iy): a row gathers from every (ki, kj) tap that
     * lands on it, so no two threads ever add into the same pixel. */
#pragma omp parallel for schedule(static) if (work >= IM2COL_PARALLEL_MIN)
    for (int row = 0; row < c * h; row++) {
        const int ch = row / h, iy = row % h;
        float *restrict dst = im + (size_t)row * w;
        for (int ki = 0; ki < size; ki++) {
            const int t = iy + pad - ki;
            if (t < 0 || t % stride)
                continue;
            const int oy = t / stride;
            if (oy >= out_h)
                continue;
            for (int kj = 0; kj < size; kj++) {
                const int off = kj - pad;
                const size_t r = ((size_t)ch * size + ki) * size + kj;
                const float *restrict s = col + r * ldcol + (size_t)oy * out_w;
                int lo, hi;
                valid_range(off, w, stride, out_w, &lo, &hi);
                if (stride == 1) {
                    for (int ox = lo; ox < hi; ox++)
                        dst[ox + off] += s[ox];
                } else {
                    for (int ox = lo; ox < hi; ox++)
                        dst[ox * stride + off] += s[ox];
                }
            }
        }
    }
}
