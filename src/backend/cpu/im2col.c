/* im2col / col2im for one image, threaded with OpenMP. Each output element is written by
 * exactly one thread in a fixed order, so results do not depend on the thread count. */
#include "backend/cpu/im2col.h"

#include <stddef.h>
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

/* A "same" convolution (stride 1, output as large as the input) shifts every row of its
 * column matrix by a constant offset: the row is one contiguous copy of the channel plane,
 * then the taps that wrapped around a row edge or fell off the top or bottom are zeroed.
 * This beats a copy per output row at the widths of small images (7, 14, 28). */
static int same_shape(int h, int w, Window2d win, int out_h, int out_w)
{
    return win.stride_h == 1 && win.stride_w == 1 && out_h == h && out_w == w;
}

/* The flat window [p0, p1) of row (ki, kj)'s positions that read inside the plane, and the
 * valid rows [oy0, oy1) and columns [lo, hi) of a same-shape convolution. */
typedef struct Shift {
    int oy0, oy1, lo, hi;
    ptrdiff_t shift, p0, p1;
} Shift;

static Shift same_shift(int h, int w, int ki, int kj, Window2d win)
{
    const int dy = ki - win.pad_h, dx = kj - win.pad_w;
    Shift s;
    s.oy0 = dy < 0 ? -dy : 0;
    s.oy1 = dy > 0 ? h - dy : h;
    if (s.oy1 < s.oy0)
        s.oy1 = s.oy0;
    valid_range(dx, w, 1, w, &s.lo, &s.hi);
    s.shift = (ptrdiff_t)dy * w + dx;
    s.p0 = (ptrdiff_t)s.oy0 * w + s.lo;
    s.p1 = s.oy1 > s.oy0 && s.hi > s.lo ? (ptrdiff_t)(s.oy1 - 1) * w + s.hi : s.p0;
    return s;
}

/* Zeroes the positions of d outside the valid rows and columns of s. */
static inline void zero_outside(float *restrict d, int h, int w, const Shift *s)
{
    if (s->oy0 > 0)
        memset(d, 0, (size_t)s->oy0 * w * sizeof *d);
    if (s->oy1 < h)
        memset(d + (size_t)s->oy1 * w, 0, (size_t)(h - s->oy1) * w * sizeof *d);
    /* Column by column: a row has only a few edge taps, too few for a memset call each. */
    for (int ox = 0; ox < s->lo; ox++)
        for (int oy = s->oy0; oy < s->oy1; oy++)
            d[(size_t)oy * w + ox] = 0.0f;
    for (int ox = s->hi; ox < w; ox++)
        for (int oy = s->oy0; oy < s->oy1; oy++)
            d[(size_t)oy * w + ox] = 0.0f;
}

static void im2col_same(const float *restrict im, int c, int h, int w, Window2d win,
                        float *restrict col, size_t ldcol)
{
    const int taps = window2d_taps(win), rows = c * taps;
    const size_t work = (size_t)rows * h * w;

#pragma omp parallel for schedule(static) if (work >= IM2COL_PARALLEL_MIN)
    for (int r = 0; r < rows; r++) {
        const int kj = r % win.size_w, ki = r % taps / win.size_w, ch = r / taps;
        const Shift s = same_shift(h, w, ki, kj, win);
        float *restrict dst = col + (size_t)r * ldcol;
        if (s.p1 > s.p0)
            memcpy(dst + s.p0, im + (size_t)ch * h * w + (s.p0 + s.shift),
                   (size_t)(s.p1 - s.p0) * sizeof *dst);
        zero_outside(dst, h, w, &s);
    }
}

/* d[ox] = s[ox * stride] for ox in [lo, hi); a constant stride 2 lets the compiler
 * vectorise the gather with shuffles. */
static inline void copy_taps(float *restrict d, const float *restrict s, int lo, int hi, int stride)
{
    if (stride == 2) {
        for (int ox = lo; ox < hi; ox++)
            d[ox] = s[ox * 2];
        return;
    }
    for (int ox = lo; ox < hi; ox++)
        d[ox] = s[ox * stride];
}

void im2col(const float *restrict im, int c, int h, int w, Window2d win, float *restrict col,
            size_t ldcol)
{
    const int out_h = window_out_extent(h, win.size_h, win.stride_h, win.pad_h);
    const int out_w = window_out_extent(w, win.size_w, win.stride_w, win.pad_w);
    const int taps = window2d_taps(win), rows = c * taps;
    const size_t work = (size_t)rows * (size_t)out_h * (size_t)out_w;
    if (same_shape(h, w, win, out_h, out_w)) {
        im2col_same(im, c, h, w, win, col, ldcol);
        return;
    }

#pragma omp parallel for schedule(static) if (work >= IM2COL_PARALLEL_MIN)
    for (int r = 0; r < rows; r++) {
        const int kj = r % win.size_w, ki = r % taps / win.size_w, ch = r / taps;
        const int off = kj - win.pad_w;
        const float *restrict src = im + (size_t)ch * h * w;
        float *restrict dst = col + (size_t)r * ldcol;
        int lo, hi;
        valid_range(off, w, win.stride_w, out_w, &lo, &hi);
        for (int oy = 0; oy < out_h; oy++) {
            float *restrict d = dst + (size_t)oy * out_w;
            const int iy = oy * win.stride_h - win.pad_h + ki;
            if (iy < 0 || iy >= h) {
                memset(d, 0, (size_t)out_w * sizeof *d);
                continue;
            }
            copy_taps(d, src + (size_t)iy * w + off, lo, hi, win.stride_w);
        }
        /* The edge taps column by column: a memset call per row costs more than its stores. */
        for (int ox = 0; ox < lo; ox++)
            for (int oy = 0; oy < out_h; oy++)
                dst[(size_t)oy * out_w + ox] = 0.0f;
        for (int ox = hi; ox < out_w; ox++)
            for (int oy = 0; oy < out_h; oy++)
                dst[(size_t)oy * out_w + ox] = 0.0f;
    }
}

/* Each channel adds its rows in (ki, kj) order, as the row-wise loop below does, so both
 * give every pixel the same sums. */
static void col2im_same(float *restrict col, int c, int h, int w, Window2d win, size_t ldcol,
                        float *restrict im)
{
    const int taps = window2d_taps(win);
    const size_t work = (size_t)c * taps * h * w;

#pragma omp parallel for schedule(static) if (work >= IM2COL_PARALLEL_MIN)
    for (int ch = 0; ch < c; ch++) {
        for (int k = 0; k < taps; k++) {
            const Shift s = same_shift(h, w, k / win.size_w, k % win.size_w, win);
            float *restrict src = col + ((size_t)ch * taps + k) * ldcol;
            zero_outside(src, h, w, &s);
            if (s.p1 <= s.p0)
                continue;
            float *restrict from = src + s.p0, *restrict to =
                                                   im + (size_t)ch * h * w + (s.p0 + s.shift);
            const ptrdiff_t n = s.p1 - s.p0;
#pragma omp simd
            for (ptrdiff_t i = 0; i < n; i++)
                to[i] += from[i];
        }
    }
}

void col2im(float *restrict col, int c, int h, int w, Window2d win, size_t ldcol,
            float *restrict im)
{
    const int out_h = window_out_extent(h, win.size_h, win.stride_h, win.pad_h);
    const int out_w = window_out_extent(w, win.size_w, win.stride_w, win.pad_w);
    const int taps = window2d_taps(win);
    const size_t work = (size_t)c * taps * (size_t)out_h * (size_t)out_w;
    if (same_shape(h, w, win, out_h, out_w)) {
        col2im_same(col, c, h, w, win, ldcol, im);
        return;
    }

    /* Parallel over channels, each adding its rows (ki, kj) in order: every pixel sums its
     * taps in the same order whatever the thread count. */
#pragma omp parallel for schedule(static) if (work >= IM2COL_PARALLEL_MIN)
    for (int ch = 0; ch < c; ch++) {
        float *restrict plane = im + (size_t)ch * h * w;
        for (int k = 0; k < taps; k++) {
            const int ki = k / win.size_w, off = k % win.size_w - win.pad_w;
            const float *restrict rows = col + ((size_t)ch * taps + k) * ldcol;
            int lo, hi;
            valid_range(off, w, win.stride_w, out_w, &lo, &hi);
            for (int oy = 0; oy < out_h; oy++) {
                const int iy = oy * win.stride_h - win.pad_h + ki;
                if (iy < 0 || iy >= h)
                    continue;
                const float *restrict s = rows + (size_t)oy * out_w;
                float *restrict d = plane + (size_t)iy * w;
                /* A runtime stride keeps this loop scalar: vector loads of d that overlap
                 * the previous tap's stores stall on store forwarding (1.6x slower). */
                for (int ox = lo; ox < hi; ox++)
                    d[ox * win.stride_w + off] += s[ox];
            }
        }
    }
}
