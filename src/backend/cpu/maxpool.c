/* [maxpool]'s CPU kernels (layers/maxpool.c has its meaning): max over size x size windows of
 * plain NCHW or oneDNN's blocked nChw8c input, the argmax of each output kept for backward; in an
 * int8 chain, of uint8 codes in nhwc; after an int8 convolution, of its float32 nhwc output.
 *
 *   in  [batch][c][h][w]
 *   out [batch][c][(h + padding - size)/stride + 1][(w + padding - size)/stride + 1]
 */
#include "layers/maxpool.h"

#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <string.h>

#include "backend/cpu/dnnl_conv.h"

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

/* Below this many window reads a parallel region costs more than it saves. */
#define MAXPOOL_PARALLEL_MIN 32768

static int maxpool_resize(Layer *l, int batch, LayerState *st, Error *e)
{
    (void)e;
    Maxpool *m = l->priv;
    m->argmax = layer_state_bytes(st, (size_t)batch * shape_size(l->out_shape) * sizeof *m->argmax);
    /* a row of nhwc maxima per thread (maxpool_forward_nhwc) */
    m->row_threads = l->nhwc_from ? omp_get_max_threads() : 0;
    m->rows = layer_work_floats(st, (size_t)m->row_threads * l->out_shape.w * l->out_shape.c);
    return CDL_OK;
}

/* 1 when v takes the window's maximum from best: greater, or NaN (as PyTorch's max_pool2d, a
 * window with a NaN gives NaN, at the last NaN's index, not the largest of its numbers). */
static inline int beats(float v, float best)
{
    return (v > best) | (v != v); /* |, not ||: no branch in the vector loops */
}

/* One step of a window's scan: v at input index v_at becomes *best (at *best_at) if it beats it. */
static inline void keep_max(float v, int v_at, float *best, int *best_at)
{
    const int takes = beats(v, *best);
    *best_at = takes ? v_at : *best_at;
    *best = takes ? v : *best;
}

/* The maximum of the window rows [ys, ye) x columns [xs, xe) of a plane iw wide into *best, its
 * index into *best_at (the first of equal values; with nan_aware, a constant at each call, the
 * last NaN as keep_max's). Without nan_aware the scan compares by v > best alone, which compiles
 * to selects: beats' NaN test makes the scalar code branch (resnet18's 3x3 windows 2.7-7x
 * slower), so maxpool_plane takes it only for a plane that holds a NaN. */
static inline __attribute__((always_inline)) void scan_window(const float *in, int iw, int ys,
                                                              int ye, int xs, int xe, int nan_aware,
                                                              float *best, int *best_at)
{
    float b = -INFINITY;
    int at = ys * iw + xs;
    for (int y = ys; y < ye; y++)
        for (int x = xs; x < xe; x++) {
            const float v = in[y * iw + x];
            const int takes = nan_aware ? beats(v, b) : v > b;
            at = takes ? y * iw + x : at;
            b = takes ? v : b;
        }
    *best = b;
    *best_at = at;
}

/* Output rows [i0, i1) and columns [j0, j1) of one input plane's output plane. Inlined with a
 * constant `size` for the common 2x2 and 3x3 windows, so that the loops over a window that lies
 * wholly inside the input unroll; windows crossing the border are clipped. */
static inline __attribute__((always_inline)) void
maxpool_plane_sized(const float *in, int ih, int iw, float *out, int *argmax, int ow, int i0,
                    int i1, int j0, int j1, int size, int stride, int offset, int nan_aware)
{
    for (int i = i0; i < i1; i++) {
        int y0 = i * stride - offset;
        int ys = y0 > 0 ? y0 : 0, ye = y0 + size < ih ? y0 + size : ih;
        int rows_inside = ys == y0 && ye == y0 + size;
        for (int j = j0; j < j1; j++) {
            int x0 = j * stride - offset;
            float best;
            int best_at;
            if (rows_inside && x0 >= 0 && x0 + size <= iw) {
                scan_window(in, iw, y0, y0 + size, x0, x0 + size, nan_aware, &best, &best_at);
            } else {
                int xs = x0 > 0 ? x0 : 0, xe = x0 + size < iw ? x0 + size : iw;
                scan_window(in, iw, ys, ye, xs, xe, nan_aware, &best, &best_at);
            }
            out[i * ow + j] = best;
            argmax[i * ow + j] = best_at;
        }
    }
}

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>

/* The lanes below n <= 8 set. */
static inline __m256i lanes_below(int n)
{
    static const int32_t bits[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
    return _mm256_loadu_si256((const __m256i *)(bits + 8 - n));
}

/* The even (*even) and odd (*odd) floats of row[0 .. m), m <= 16 (lane i of *even row[2i], of
 * *odd row[2i + 1]); the lanes from m on hold -infinity, or with whole (row[0 .. 16) readable, as
 * masked loads are slow on AMD) whatever follows. */
static inline void deinterleave(const float *row, int m, int whole, __m256 *even, __m256 *odd)
{
    __m256 lo, hi;
    if (whole) {
        lo = _mm256_loadu_ps(row);
        hi = _mm256_loadu_ps(row + 8);
    } else {
        const __m256 ninf = _mm256_set1_ps(-INFINITY);
        const int lo_n = m < 8 ? m : 8, hi_n = m - lo_n;
        lo = _mm256_blendv_ps(ninf, _mm256_maskload_ps(row, lanes_below(lo_n)),
                              _mm256_castsi256_ps(lanes_below(lo_n)));
        hi = _mm256_blendv_ps(ninf, _mm256_maskload_ps(row + 8, lanes_below(hi_n)),
                              _mm256_castsi256_ps(lanes_below(hi_n)));
    }
    *even = _mm256_castpd_ps(
        _mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(2, 0, 2, 0))),
                              _MM_SHUFFLE(3, 1, 2, 0)));
    *odd = _mm256_castpd_ps(
        _mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(3, 1, 3, 1))),
                              _MM_SHUFFLE(3, 1, 2, 0)));
}

/* v (at input index v_at, per lane) becomes *best (at *at) in the lanes where it beats it. */
static inline void keep_max_lanes(__m256 v, __m256i v_at, __m256 *best, __m256i *at)
{
    const __m256 gt = _mm256_or_ps(_mm256_cmp_ps(v, *best, _CMP_GT_OQ),
                                   _mm256_cmp_ps(v, v, _CMP_UNORD_Q)); /* beats */
    *at = _mm256_castps_si256(
        _mm256_blendv_ps(_mm256_castsi256_ps(*at), _mm256_castsi256_ps(v_at), gt));
    *best = _mm256_blendv_ps(*best, v, gt);
}

/* The size x size (2 or 3) stride-2 windows that start at (2i - offset, 2j - offset) and lie
 * inside the input, output rows [i0, i1) and columns [j0, j1) of the oh x ow output plane (input
 * ih x iw): the same comparisons in the same order as maxpool_plane_sized (row by row, each row
 * left to right; a later value wins only when it beats the maximum so far), 8 columns a vector,
 * each window row's floats loaded whole and split into even and odd columns. */
static void maxpool_plane_stride2(const float *in, int ih, int iw, float *out, int *argmax, int oh,
                                  int ow, int size, int offset, int i0, int i1, int j0, int j1)
{
    const __m256i lane2 = _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14);
    const size_t plane = (size_t)ih * iw;
    for (int i = i0; i < i1; i++) {
        const int y0 = 2 * i - offset;
        for (int j = j0; j < j1; j += 8) {
            const int n = j1 - j < 8 ? j1 - j : 8, x0 = 2 * j - offset;
            __m256 best = _mm256_set1_ps(-INFINITY);
            __m256i at = _mm256_add_epi32(_mm256_set1_epi32(y0 * iw + x0), lane2);
            for (int dy = 0; dy < size; dy++)
                for (int dx = 0; dx < size; dx += 2) {
                    /* columns x0 + dx + 2k (even) and + 1 (odd) of the n windows: 2n floats,
                     * 2n - 1 where the odd ones lie beyond the window */
                    const size_t first = (size_t)(y0 + dy) * iw + x0 + dx;
                    const int m = dx + 1 < size ? 2 * n : 2 * n - 1;
                    __m256 even, odd;
                    deinterleave(in + first, m, first + 16 <= plane, &even, &odd);
                    const __m256i even_at = _mm256_add_epi32(_mm256_set1_epi32((int)first), lane2);
                    keep_max_lanes(even, even_at, &best, &at);
                    if (dx + 1 < size)
                        keep_max_lanes(odd, _mm256_add_epi32(even_at, _mm256_set1_epi32(1)), &best,
                                       &at);
                }
            /* Whole vectors (masked stores are slow on AMD) while they end inside the plane:
             * the lanes beyond n fall on outputs written after this one (the border windows
             * after all of these). */
            float *o = out + (size_t)i * ow + j;
            int *o_at = argmax + (size_t)i * ow + j;
            if ((size_t)i * ow + j + 8 <= (size_t)oh * ow) {
                _mm256_storeu_ps(o, best);
                _mm256_storeu_si256((__m256i *)o_at, at);
            } else {
                float best_n[8];
                int at_n[8];
                _mm256_storeu_ps(best_n, best);
                _mm256_storeu_si256((__m256i *)at_n, at);
                memcpy(o, best_n, (size_t)n * sizeof *o);
                memcpy(o_at, at_n, (size_t)n * sizeof *o_at);
            }
        }
    }
}
#else
/* The size x size stride-2 windows that start at (2i - offset, 2j - offset) and lie inside the
 * input, output rows [i0, i1) and columns [j0, j1) of the oh x ow output plane (input ih x iw):
 * the same comparisons in the same order as maxpool_plane_sized, written so that the compiler
 * vectorises the columns. */
static void maxpool_plane_stride2(const float *in, int ih, int iw, float *out, int *argmax, int oh,
                                  int ow, int size, int offset, int i0, int i1, int j0, int j1)
{
    (void)ih, (void)oh;
    for (int i = i0; i < i1; i++) {
        const int y0 = 2 * i - offset;
        float *restrict o = out + (size_t)i * ow;
        int *restrict at = argmax + (size_t)i * ow;
#pragma omp simd
        for (int j = j0; j < j1; j++) {
            const int x0 = 2 * j - offset;
            float best = -INFINITY;
            int best_at = y0 * iw + x0;
            for (int dy = 0; dy < size; dy++)
                for (int dx = 0; dx < size; dx++)
                    keep_max(in[(y0 + dy) * iw + x0 + dx], (y0 + dy) * iw + x0 + dx, &best,
                             &best_at);
            o[j] = best;
            at[j] = best_at;
        }
    }
}
#endif

/* 1 when the n values at x hold a NaN. */
static int any_nan(const float *x, size_t n)
{
    int nan = 0;
#pragma omp simd reduction(| : nan)
    for (size_t i = 0; i < n; i++)
        nan |= x[i] != x[i];
    return nan;
}

/* 1 when maxpool_plane_stride2 takes m's windows (2x2 or 3x3, stride 2) and some lie wholly
 * inside the ih x iw input: output rows [*i0, *i1) and columns [*j0, *j1) (oh x ow in all). */
static int stride2_inside(const Maxpool *m, int ih, int iw, int oh, int ow, int *i0, int *i1,
                          int *j0, int *j1)
{
    const int offset = m->padding / 2;
    if ((m->size != 2 && m->size != 3) || m->stride != 2 || ih + offset < m->size ||
        iw + offset < m->size)
        return 0;
    /* the first window from the input's first row (column), the last that ends inside it */
    *i0 = *j0 = (offset + 1) / 2;
    *i1 = (ih + offset - m->size) / 2 + 1;
    *j1 = (iw + offset - m->size) / 2 + 1;
    *i1 = *i1 < oh ? *i1 : oh;
    *j1 = *j1 < ow ? *j1 : ow;
    return *i1 > *i0 && *j1 > *j0;
}

/* One input plane's output plane; nan_aware (a constant at each call) as scan_window's. */
static inline __attribute__((always_inline)) void maxpool_plane_as(const Maxpool *m,
                                                                   const float *in, int ih, int iw,
                                                                   float *out, int *argmax, int oh,
                                                                   int ow, int nan_aware)
{
    int offset = m->padding / 2;
    int i0, i1, j0, j1;
    if (stride2_inside(m, ih, iw, oh, ow, &i0, &i1, &j0, &j1)) {
        /* the windows inside (NaN-aware always: their vector compares cost nothing more), then
         * those that cross the border: the rows above and below, the columns left and right */
        maxpool_plane_stride2(in, ih, iw, out, argmax, oh, ow, m->size, offset, i0, i1, j0, j1);
        maxpool_plane_sized(in, ih, iw, out, argmax, ow, 0, i0, 0, ow, m->size, 2, offset,
                            nan_aware);
        maxpool_plane_sized(in, ih, iw, out, argmax, ow, i0, i1, 0, j0, m->size, 2, offset,
                            nan_aware);
        maxpool_plane_sized(in, ih, iw, out, argmax, ow, i0, i1, j1, ow, m->size, 2, offset,
                            nan_aware);
        maxpool_plane_sized(in, ih, iw, out, argmax, ow, i1, oh, 0, ow, m->size, 2, offset,
                            nan_aware);
    } else if (m->size == 2) {
        maxpool_plane_sized(in, ih, iw, out, argmax, ow, 0, oh, 0, ow, 2, m->stride, offset,
                            nan_aware);
    } else if (m->size == 3) {
        maxpool_plane_sized(in, ih, iw, out, argmax, ow, 0, oh, 0, ow, 3, m->stride, offset,
                            nan_aware);
    } else {
        maxpool_plane_sized(in, ih, iw, out, argmax, ow, 0, oh, 0, ow, m->size, m->stride, offset,
                            nan_aware);
    }
}

/* maxpool_plane_as, NaN-aware only where the input plane holds a NaN. */
static void maxpool_plane(const Maxpool *m, const float *in, int ih, int iw, float *out,
                          int *argmax, int oh, int ow)
{
    if (any_nan(in, (size_t)ih * iw))
        maxpool_plane_as(m, in, ih, iw, out, argmax, oh, ow, 1);
    else
        maxpool_plane_as(m, in, ih, iw, out, argmax, oh, ow, 0);
}

/* The forward in nChw8c (Layer.blocked): per block of L channels, the maxima of the L lanes of
 * each window, clipped as maxpool_plane's; with argmax ([batch][c/L][out_h][out_w][L], L =
 * DNNL_LANES, NULL in inference) each lane's input plane index, ties to the first as
 * maxpool_plane's. */
static void maxpool_forward_blocked(const Maxpool *m, const float *in, float *out, int *argmax,
                                    int blocks, int ih, int iw, int oh, int ow)
{
    const int offset = m->padding / 2;
#pragma omp parallel for schedule(                                                                 \
    static) if ((double)blocks * oh * ow * DNNL_LANES * m->size * m->size > MAXPOOL_PARALLEL_MIN)
    for (int p = 0; p < blocks; p++)
        for (int i = 0; i < oh; i++)
            for (int j = 0; j < ow; j++) {
                const int y0 = i * m->stride - offset, x0 = j * m->stride - offset;
                const int ys = y0 < 0 ? 0 : y0, xs = x0 < 0 ? 0 : x0;
                float best[DNNL_LANES];
                int at[DNNL_LANES];
                for (int c = 0; c < DNNL_LANES; c++) {
                    best[c] = -INFINITY;
                    at[c] = ys * iw + xs;
                }
                for (int y = ys; y < y0 + m->size && y < ih; y++)
                    for (int x = xs; x < x0 + m->size && x < iw; x++) {
                        const float *v = in + (((size_t)p * ih + y) * iw + x) * DNNL_LANES;
#pragma omp simd
                        for (int c = 0; c < DNNL_LANES; c++)
                            keep_max(v[c], y * iw + x, &best[c], &at[c]);
                    }
                const size_t o = (((size_t)p * oh + i) * ow + j) * DNNL_LANES;
                memcpy(out + o, best, sizeof best);
                if (argmax)
                    memcpy(argmax + o, at, sizeof at);
            }
}

/* The backward of maxpool_forward_blocked's training pass: each output's gradient added at its
 * lane's argmax, one thread per block (windows overlap within it). */
static void maxpool_backward_blocked(const Maxpool *m, const float *delta, float *in_delta,
                                     int fresh, int blocks, size_t in_plane, size_t out_plane)
{
#pragma omp parallel for schedule(static) if (blocks * out_plane * DNNL_LANES >                    \
                                              MAXPOOL_PARALLEL_MIN)
    for (int p = 0; p < blocks; p++) {
        float *dst = in_delta + p * in_plane * DNNL_LANES;
        const float *src = delta + p * out_plane * DNNL_LANES;
        const int *at = m->argmax + p * out_plane * DNNL_LANES;
        if (fresh)
            memset(dst, 0, in_plane * DNNL_LANES * sizeof *dst);
        for (size_t k = 0; k < out_plane * DNNL_LANES; k += DNNL_LANES)
            for (int c = 0; c < DNNL_LANES; c++)
                dst[(size_t)at[k + c] * DNNL_LANES + c] += src[k + c];
    }
}

/* The forward in an int8 chain (Layer.codes_from): the maxima of uint8 codes, in [batch][h][w][c]
 * (nhwc) as oneDNN's int8 convolutions write and read them, windows clipped as maxpool_plane's.
 * Quantization keeps the order, so these are the codes of the float maxima. */
static void maxpool_forward_codes(const Maxpool *m, const uint8_t *in, uint8_t *out, int batch,
                                  int c, int ih, int iw, int oh, int ow)
{
    const int offset = m->padding / 2;
#pragma omp parallel for schedule(static) if ((double)batch * oh * ow * c * m->size * m->size >    \
                                              MAXPOOL_PARALLEL_MIN)
    for (int b = 0; b < batch; b++)
        for (int i = 0; i < oh; i++)
            for (int j = 0; j < ow; j++) {
                const int y0 = i * m->stride - offset, x0 = j * m->stride - offset;
                uint8_t *best = out + (((size_t)b * oh + i) * ow + j) * c;
                memset(best, 0, (size_t)c); /* the smallest code */
                for (int y = y0 < 0 ? 0 : y0; y < y0 + m->size && y < ih; y++)
                    for (int x = x0 < 0 ? 0 : x0; x < x0 + m->size && x < iw; x++) {
                        const uint8_t *v = in + (((size_t)b * ih + y) * iw + x) * c;
#pragma omp simd
                        for (int k = 0; k < c; k++)
                            best[k] = v[k] > best[k] ? v[k] : best[k];
                    }
            }
}

/* The maxima of one window position for channels [0, c) (c a multiple of 16) of the nhwc input
 * rows: best[k] = max over the window (clipped as maxpool_plane's, a NaN winning), the 16 lanes
 * of a block in registers while its window is read. */
static inline void window_max_nhwc(const float *in, int c, int iw, int ys, int ye, int xs, int xe,
                                   float *best)
{
    for (int c0 = 0; c0 < c; c0 += 16) {
#if defined(__AVX512F__)
        __m512 b = _mm512_set1_ps(-INFINITY);
        for (int y = ys; y < ye; y++)
            for (int x = xs; x < xe; x++) {
                const __m512 v = _mm512_loadu_ps(in + ((size_t)y * iw + x) * c + c0);
                const __mmask16 takes = _mm512_cmp_ps_mask(v, b, _CMP_GT_OQ) |
                                        _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q); /* beats */
                b = _mm512_mask_mov_ps(b, takes, v);
            }
        _mm512_storeu_ps(best + c0, b);
#else
        float b[16];
        for (int k = 0; k < 16; k++)
            b[k] = -INFINITY;
        for (int y = ys; y < ye; y++)
            for (int x = xs; x < xe; x++) {
                const float *v = in + ((size_t)y * iw + x) * c + c0;
#pragma omp simd
                for (int k = 0; k < 16; k++)
                    b[k] = beats(v[k], b[k]) ? v[k] : b[k];
            }
        memcpy(best + c0, b, sizeof b);
#endif
    }
}

/* The inference forward of a float32 nhwc input ([batch][h][w][c], c a multiple of 16,
 * Layer.nhwc_from: a convolution's own layout on oneDNN, layer_nhwc_in) into the plain NCHW output,
 * a row of outputs at a time: their maxima in nhwc (window_max_nhwc) in row [ow][c] of the layer's
 * work, then transposed into the c planes; as many threads as resize gave rows. */
static void maxpool_forward_nhwc(const Maxpool *m, const float *in, float *out, float *rows,
                                 int batch, int c, int ih, int iw, int oh, int ow)
{
    const int offset = m->padding / 2;
    const size_t plane = (size_t)oh * ow;
#pragma omp parallel for collapse(2) schedule(static) num_threads(                                 \
    m->row_threads) if ((double)batch * plane * c * m->size * m->size > MAXPOOL_PARALLEL_MIN)
    for (int b = 0; b < batch; b++)
        for (int i = 0; i < oh; i++) {
            float *row = rows + (size_t)omp_get_thread_num() * ow * c;
            const int y0 = i * m->stride - offset;
            const int ys = y0 < 0 ? 0 : y0, ye = y0 + m->size < ih ? y0 + m->size : ih;
            for (int j = 0; j < ow; j++) {
                const int x0 = j * m->stride - offset;
                const int xs = x0 < 0 ? 0 : x0, xe = x0 + m->size < iw ? x0 + m->size : iw;
                window_max_nhwc(in + (size_t)b * ih * iw * c, c, iw, ys, ye, xs, xe,
                                row + (size_t)j * c);
            }
            for (int k = 0; k < c; k++) {
                float *o = out + ((size_t)b * c + k) * plane + (size_t)i * ow;
                for (int j = 0; j < ow; j++)
                    o[j] = row[(size_t)j * c + k];
            }
        }
}

static void maxpool_forward(Layer *l, const StepContext *ctx)
{
    const Maxpool *m = l->priv;
    const float *in = l->in[0];
    int planes = ctx->batch * l->in_shape.c;
    int ih = l->in_shape.h, iw = l->in_shape.w, oh = l->out_shape.h, ow = l->out_shape.w;
    size_t in_plane = (size_t)ih * iw, out_plane = (size_t)oh * ow;
    if (layer_nhwc_in(l, ctx)) {
        maxpool_forward_nhwc(m, in, l->out, m->rows, ctx->batch, l->in_shape.c, ih, iw, oh, ow);
        return;
    }
    if (l->codes_from) {
        maxpool_forward_codes(m, (const uint8_t *)in, (uint8_t *)l->out, ctx->batch, l->in_shape.c,
                              ih, iw, oh, ow);
        return;
    }
    if (layer_blocked(l, ctx) & 1) {
        maxpool_forward_blocked(m, in, l->out, ctx->train ? m->argmax : NULL, planes / DNNL_LANES,
                                ih, iw, oh, ow);
        return;
    }
    double work = (double)planes * (double)out_plane * m->size * m->size;
#pragma omp parallel for schedule(static) if (work > MAXPOOL_PARALLEL_MIN)
    for (int p = 0; p < planes; p++)
        maxpool_plane(m, in + p * in_plane, ih, iw, l->out + p * out_plane,
                      m->argmax + p * out_plane, oh, ow);
}

static void maxpool_backward(Layer *l, const StepContext *ctx)
{
    const Maxpool *m = l->priv;
    float *in_delta = l->in_delta[0];
    if (!in_delta)
        return;
    int planes = ctx->batch * l->in_shape.c;
    size_t in_plane = (size_t)l->in_shape.h * l->in_shape.w;
    size_t out_plane = (size_t)l->out_shape.h * l->out_shape.w;
    /* A fresh delta (Layer.in_delta_fresh) is zeroed plane by plane here, while the plane is in
     * cache. */
    const int fresh = l->in_delta_fresh[0];
    if (layer_blocked(l, ctx) & 1) {
        maxpool_backward_blocked(m, l->delta, in_delta, fresh, planes / DNNL_LANES, in_plane,
                                 out_plane);
        return;
    }
    /* Windows overlap within a plane, never across planes: one thread per plane. */
#pragma omp parallel for schedule(static) if (planes * out_plane > MAXPOOL_PARALLEL_MIN)
    for (int p = 0; p < planes; p++) {
        float *dst = in_delta + p * in_plane;
        const float *src = l->delta + p * out_plane;
        const int *at = m->argmax + p * out_plane;
        if (fresh)
            memset(dst, 0, in_plane * sizeof *dst);
        for (size_t k = 0; k < out_plane; k++)
            dst[at[k]] += src[k];
    }
}

/* Whole channel blocks: input and output in nChw8c together (LayerKernels.layout). */
static int maxpool_layout(const Layer *l, int k)
{
    (void)k;
    return l->in_shape.c % DNNL_LANES ? LAYOUT_PLAIN : LAYOUT_TIED;
}

/* Maxima of codes are the codes of the maxima (maxpool_forward_codes). */
static int maxpool_passes_codes(const Layer *l)
{
    (void)l;
    return 1;
}

/* maxpool_forward_nhwc takes whole blocks of 16 channels. */
static int maxpool_takes_nhwc(const Layer *l)
{
    return l->in_shape.c % 16 == 0;
}

/* The family's step on the CPU (backend/cpu/cpu_backend.c looks it up by family). */
const LayerKernels cpu_maxpool_kernels = {
    .resize = maxpool_resize,
    .layout = maxpool_layout,
    .passes_codes = maxpool_passes_codes,
    .takes_nhwc = maxpool_takes_nhwc,
    .forward = maxpool_forward,
    .backward = maxpool_backward,
};
