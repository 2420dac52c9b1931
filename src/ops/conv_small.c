/* Direct convolution of few input channels (ops/conv_small.h). Over the flat output plane, the
 * forward keeps blocks of 4 filters x 16 positions in registers and runs over the taps; the weight
 * gradient keeps 4 filters x 3 taps of sums, one vector of positions each, runs over the plane and
 * adds the lanes at the end. */
#include "ops/conv_small.h"

#include <stdint.h>
#include <string.h>

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define CONV_SMALL_AVX2 1
#endif

enum {
    LANES = 8,
    FWD_FILTERS = 4, /* the forward's block: filters */
    FWD_VECTORS = 3, /* and vectors of LANES positions */
    WG_FILTERS = 4,  /* the weight gradient's block: filters */
    WG_TAPS = 3,     /* and taps */
};

int conv_small_plan(ConvSmall *s, int c, int h, int w, int filters, int size, int pad)
{
    const int oh = h + 2 * pad - size + 1, ow = w + 2 * pad - size + 1;
    if (c * size * size > CONV_SMALL_MAX_TAPS || oh < 1 || ow < 1)
        return 0;
    *s = (ConvSmall){.c = c, .h = h, .w = w, .filters = filters, .size = size, .pad = pad};
    s->oh = oh;
    s->ow = ow;
    s->rows = oh + size - 1;
    return 1;
}

size_t conv_small_buf_floats(const ConvSmall *s)
{
    return (size_t)s->c * s->size * s->rows * s->ow + LANES;
}

/* buf = the shifted planes of x (zero outside the image, and in the slack); off[t] the offset of
 * tap t = (channel, ki, kj) in it. */
static void shifted_planes(const ConvSmall *s, const float *x, float *buf, int *off)
{
    for (int ch = 0; ch < s->c; ch++)
        for (int kj = 0; kj < s->size; kj++) {
            /* columns ox whose source ox + kj - pad lies in [0, w) */
            const int shift = kj - s->pad;
            int lo = shift < 0 ? -shift : 0, hi = s->w - shift;
            hi = hi < s->ow ? hi : s->ow;
            lo = lo < hi ? lo : hi;
            for (int r = 0; r < s->rows; r++) {
                float *dst = buf + (((size_t)ch * s->size + kj) * s->rows + r) * s->ow;
                const int y = r - s->pad;
                if (y < 0 || y >= s->h || lo == hi) {
                    memset(dst, 0, (size_t)s->ow * sizeof *dst);
                    continue;
                }
                const float *src = x + ((size_t)ch * s->h + y) * s->w + shift;
                memset(dst, 0, (size_t)lo * sizeof *dst);
                memcpy(dst + lo, src + lo, (size_t)(hi - lo) * sizeof *dst);
                memset(dst + hi, 0, (size_t)(s->ow - hi) * sizeof *dst);
            }
        }
    memset(buf + conv_small_buf_floats(s) - LANES, 0, LANES * sizeof *buf);
    int t = 0;
    for (int ch = 0; ch < s->c; ch++)
        for (int ki = 0; ki < s->size; ki++)
            for (int kj = 0; kj < s->size; kj++)
                off[t++] = (int)((((size_t)ch * s->size + kj) * s->rows + ki) * s->ow);
}

#ifdef CONV_SMALL_AVX2
/* The lanes below n < LANES set. */
static inline __m256i tail_mask(int n)
{
    static const int32_t bits[2 * LANES] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
    return _mm256_loadu_si256((const __m256i *)(bits + LANES - n));
}

/* out of filters f0 .. f0+nf at positions p0 .. p0 + nv*LANES (clipped to the plane); nf and nv
 * are constants at the main call, so the accumulators stay in registers. */
static inline __attribute__((always_inline)) void forward_block(int nf, int nv, int plane,
                                                                const float *buf, const int *off,
                                                                int taps, const float *w, int p0,
                                                                float *out)
{
    __m256 acc[FWD_FILTERS][FWD_VECTORS], in[FWD_VECTORS];
    for (int f = 0; f < FWD_FILTERS; f++)
        for (int v = 0; v < FWD_VECTORS; v++)
            acc[f][v] = in[v] = _mm256_setzero_ps();
    const float *src = buf + p0;
    for (int t = 0; t < taps; t++) {
#pragma GCC unroll 4
        for (int v = 0; v < nv; v++)
            in[v] = _mm256_loadu_ps(src + off[t] + v * LANES);
#pragma GCC unroll 4
        for (int f = 0; f < nf; f++) {
            const __m256 wv = _mm256_broadcast_ss(w + (size_t)f * taps + t);
#pragma GCC unroll 4
            for (int v = 0; v < nv; v++)
                acc[f][v] = _mm256_fmadd_ps(wv, in[v], acc[f][v]);
        }
    }
#pragma GCC unroll 4
    for (int f = 0; f < nf; f++)
#pragma GCC unroll 4
        for (int v = 0; v < nv; v++) {
            float *dst = out + (size_t)f * plane + p0 + v * LANES;
            const int n = plane - p0 - v * LANES;
            if (n >= LANES)
                _mm256_storeu_ps(dst, acc[f][v]);
            else
                _mm256_maskstore_ps(dst, tail_mask(n), acc[f][v]);
        }
}

void conv_small_forward(const ConvSmall *s, const float *x, const float *w, float *out, float *buf)
{
    int off[CONV_SMALL_MAX_TAPS];
    shifted_planes(s, x, buf, off);
    const int taps = s->c * s->size * s->size, plane = s->oh * s->ow;
    const int span = FWD_VECTORS * LANES;
    for (int f0 = 0; f0 < s->filters; f0 += FWD_FILTERS) {
        const int nf = s->filters - f0 < FWD_FILTERS ? s->filters - f0 : FWD_FILTERS;
        const float *wf = w + (size_t)f0 * taps;
        float *of = out + (size_t)f0 * plane;
        for (int p0 = 0; p0 < plane; p0 += span) {
            const int nv = plane - p0 >= span ? FWD_VECTORS : (plane - p0 + LANES - 1) / LANES;
            if (nf == FWD_FILTERS && nv == FWD_VECTORS)
                forward_block(FWD_FILTERS, FWD_VECTORS, plane, buf, off, taps, wf, p0, of);
            else
                forward_block(nf, nv, plane, buf, off, taps, wf, p0, of);
        }
    }
}

/* The lanes of v added in a fixed order. */
static inline float lane_sum(__m256 v)
{
    __m128 q = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    q = _mm_add_ps(q, _mm_movehl_ps(q, q));
    q = _mm_add_ss(q, _mm_movehdup_ps(q));
    return _mm_cvtss_f32(q);
}

/* sums[f][t] = the gradient of filters f0 .. f0+nf (delta at their plane) by taps off[0 .. nt),
 * over the plane. */
static inline __attribute__((always_inline)) void grads_block(int nf, int nt, int plane,
                                                              const float *buf, const int *off,
                                                              const float *delta,
                                                              float sums[WG_FILTERS][WG_TAPS])
{
    __m256 acc[WG_FILTERS][WG_TAPS], in[WG_TAPS];
    for (int f = 0; f < WG_FILTERS; f++)
        for (int t = 0; t < WG_TAPS; t++)
            acc[f][t] = in[t] = _mm256_setzero_ps();
    const int full = plane / LANES * LANES;
    for (int p = 0; p < plane; p += LANES) {
#pragma GCC unroll 4
        for (int t = 0; t < nt; t++)
            in[t] = _mm256_loadu_ps(buf + off[t] + p);
#pragma GCC unroll 4
        for (int f = 0; f < nf; f++) {
            const float *d = delta + (size_t)f * plane + p;
            const __m256 dv =
                p < full ? _mm256_loadu_ps(d) : _mm256_maskload_ps(d, tail_mask(plane - p));
#pragma GCC unroll 4
            for (int t = 0; t < nt; t++)
                acc[f][t] = _mm256_fmadd_ps(dv, in[t], acc[f][t]);
        }
    }
#pragma GCC unroll 4
    for (int f = 0; f < nf; f++)
#pragma GCC unroll 4
        for (int t = 0; t < nt; t++)
            sums[f][t] = lane_sum(acc[f][t]);
}

void conv_small_weight_grads(const ConvSmall *s, const float *x, const float *delta, float beta,
                             float *dw, float *buf)
{
    int off[CONV_SMALL_MAX_TAPS];
    shifted_planes(s, x, buf, off);
    const int taps = s->c * s->size * s->size, plane = s->oh * s->ow;
    for (int f0 = 0; f0 < s->filters; f0 += WG_FILTERS) {
        const int nf = s->filters - f0 < WG_FILTERS ? s->filters - f0 : WG_FILTERS;
        const float *df = delta + (size_t)f0 * plane;
        for (int t0 = 0; t0 < taps; t0 += WG_TAPS) {
            const int nt = taps - t0 < WG_TAPS ? taps - t0 : WG_TAPS;
            float sums[WG_FILTERS][WG_TAPS] = {{0.0f}};
            if (nf == WG_FILTERS && nt == WG_TAPS)
                grads_block(WG_FILTERS, WG_TAPS, plane, buf, off + t0, df, sums);
            else
                grads_block(nf, nt, plane, buf, off + t0, df, sums);
            for (int f = 0; f < nf; f++)
                for (int t = 0; t < nt; t++) {
                    float *g = dw + (size_t)(f0 + f) * taps + t0 + t;
                    *g = beta != 0.0f ? beta * *g + sums[f][t] : sums[f][t];
                }
        }
    }
}
#else
void conv_small_forward(const ConvSmall *s, const float *x, const float *w, float *out, float *buf)
{
    int off[CONV_SMALL_MAX_TAPS];
    shifted_planes(s, x, buf, off);
    const int taps = s->c * s->size * s->size, plane = s->oh * s->ow;
    for (int f = 0; f < s->filters; f++) {
        float *o = out + (size_t)f * plane;
        for (int p = 0; p < plane; p++)
            o[p] = 0.0f;
        for (int t = 0; t < taps; t++) {
            const float wv = w[(size_t)f * taps + t], *src = buf + off[t];
            for (int p = 0; p < plane; p++)
                o[p] += wv * src[p];
        }
    }
}

void conv_small_weight_grads(const ConvSmall *s, const float *x, const float *delta, float beta,
                             float *dw, float *buf)
{
    int off[CONV_SMALL_MAX_TAPS];
    shifted_planes(s, x, buf, off);
    const int taps = s->c * s->size * s->size, plane = s->oh * s->ow;
    for (int f = 0; f < s->filters; f++)
        for (int t = 0; t < taps; t++) {
            const float *d = delta + (size_t)f * plane, *src = buf + off[t];
            float sum = 0.0f;
            for (int p = 0; p < plane; p++)
                sum += d[p] * src[p];
            float *g = dw + (size_t)f * taps + t;
            *g = beta != 0.0f ? beta * *g + sum : sum;
        }
}
#endif
