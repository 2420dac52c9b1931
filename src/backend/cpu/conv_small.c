/* Direct convolution of few input channels (backend/cpu/conv_small.h). Over the flat output plane,
 * the forward keeps blocks of filters x 3 vectors of positions in registers (8 x 48 with AVX-512, 4
 * x 24 with AVX2) and runs over the taps; the weight gradient keeps filters x taps of sums (4 x 6,
 * 4 x 3), one vector of positions each, runs over the plane and adds the lanes at the end. */
#include "backend/cpu/conv_small.h"

#include <string.h>

#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))
#include <immintrin.h>

#include "backend/cpu/lanes16.h"
#define CONV_SMALL_VECTOR 1
#endif

/* The blocks of accumulators fill most of the vector registers: 24 of AVX-512's 32, 12 of AVX2's
 * 16. (AVX-512's weight gradient measured 1.7x faster with 4 x 6 than with 4 x 3, 1.2x faster
 * than with 8 x 3; its forward 1.2x faster with 8 x 3 than with 4 x 6.) */
enum {
    FWD_VECTORS = 3, /* the forward's block: vectors of LANES positions */
    WG_FILTERS = 4,  /* the weight gradient's block: filters */
#ifdef __AVX512F__
    LANES = 16,
    FWD_FILTERS = 8, /* the forward's block: filters */
    WG_TAPS = 6,     /* the weight gradient's block: taps */
#else
    LANES = 8,
    FWD_FILTERS = 4,
    WG_TAPS = 3,
#endif
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

#ifdef CONV_SMALL_VECTOR
/* One vector of LANES floats: AVX-512 where the compiler targets it, else AVX2 + FMA. */
#ifdef __AVX512F__
typedef __m512 Vec;
static inline Vec vec_zero(void)
{
    return _mm512_setzero_ps();
}
static inline Vec vec_load(const float *p)
{
    return _mm512_loadu_ps(p);
}
static inline Vec vec_broadcast(const float *p)
{
    return _mm512_set1_ps(*p);
}
static inline Vec vec_fma(Vec a, Vec b, Vec c)
{
    return _mm512_fmadd_ps(a, b, c);
}
static inline void vec_store(float *p, Vec v)
{
    _mm512_storeu_ps(p, v);
}
/* The first n < LANES floats at p, the rest 0; v's first n stored at p. */
static inline Vec vec_load_part(const float *p, int n)
{
    return _mm512_maskz_loadu_ps((__mmask16)((1u << n) - 1), p);
}
static inline void vec_store_part(float *p, Vec v, int n)
{
    _mm512_mask_storeu_ps(p, (__mmask16)((1u << n) - 1), v);
}
/* The lanes of v added in a fixed order. */
static inline float vec_sum(Vec v)
{
    const __m256 h =
        _mm256_add_ps(_mm512_castps512_ps256(v),
                      _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
    __m128 q = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
    q = _mm_add_ps(q, _mm_movehl_ps(q, q));
    q = _mm_add_ss(q, _mm_movehdup_ps(q));
    return _mm_cvtss_f32(q);
}
#else
typedef __m256 Vec;
static inline Vec vec_zero(void)
{
    return _mm256_setzero_ps();
}
static inline Vec vec_load(const float *p)
{
    return _mm256_loadu_ps(p);
}
static inline Vec vec_broadcast(const float *p)
{
    return _mm256_broadcast_ss(p);
}
static inline Vec vec_fma(Vec a, Vec b, Vec c)
{
    return _mm256_fmadd_ps(a, b, c);
}
static inline void vec_store(float *p, Vec v)
{
    _mm256_storeu_ps(p, v);
}
/* The first n < LANES floats at p, the rest 0; v's first n stored at p (backend/cpu/lanes16.h). */
static inline Vec vec_load_part(const float *p, int n)
{
    return _mm256_maskload_ps(p, lanes8(n));
}
static inline void vec_store_part(float *p, Vec v, int n)
{
    store_first8(p, v, n);
}
/* The lanes of v added in a fixed order. */
static inline float vec_sum(Vec v)
{
    return sum8(v);
}
#endif

/* out of filters f0 .. f0+nf at positions p0 .. p0 + nv*LANES (clipped to the plane); nf and nv
 * are constants at the main call, so the accumulators stay in registers. */
static inline __attribute__((always_inline)) void forward_block(int nf, int nv, int plane,
                                                                const float *buf, const int *off,
                                                                int taps, const float *w, int p0,
                                                                float *out)
{
    Vec acc[FWD_FILTERS][FWD_VECTORS], in[FWD_VECTORS];
    for (int f = 0; f < FWD_FILTERS; f++)
        for (int v = 0; v < FWD_VECTORS; v++)
            acc[f][v] = in[v] = vec_zero();
    const float *src = buf + p0;
    for (int t = 0; t < taps; t++) {
#pragma GCC unroll 8
        for (int v = 0; v < nv; v++)
            in[v] = vec_load(src + off[t] + v * LANES);
#pragma GCC unroll 8
        for (int f = 0; f < nf; f++) {
            const Vec wv = vec_broadcast(w + (size_t)f * taps + t);
#pragma GCC unroll 8
            for (int v = 0; v < nv; v++)
                acc[f][v] = vec_fma(wv, in[v], acc[f][v]);
        }
    }
#pragma GCC unroll 8
    for (int f = 0; f < nf; f++)
#pragma GCC unroll 8
        for (int v = 0; v < nv; v++) {
            float *dst = out + (size_t)f * plane + p0 + v * LANES;
            const int n = plane - p0 - v * LANES;
            if (n >= LANES)
                vec_store(dst, acc[f][v]);
            else
                vec_store_part(dst, acc[f][v], n);
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

/* sums[f][t] = the gradient of filters f0 .. f0+nf (delta at their plane) by taps off[0 .. nt),
 * over the plane. */
static inline __attribute__((always_inline)) void grads_block(int nf, int nt, int plane,
                                                              const float *buf, const int *off,
                                                              const float *delta,
                                                              float sums[WG_FILTERS][WG_TAPS])
{
    Vec acc[WG_FILTERS][WG_TAPS], in[WG_TAPS];
    for (int f = 0; f < WG_FILTERS; f++)
        for (int t = 0; t < WG_TAPS; t++)
            acc[f][t] = in[t] = vec_zero();
    const int full = plane / LANES * LANES;
    for (int p = 0; p < plane; p += LANES) {
#pragma GCC unroll 8
        for (int t = 0; t < nt; t++)
            in[t] = vec_load(buf + off[t] + p);
#pragma GCC unroll 8
        for (int f = 0; f < nf; f++) {
            const float *d = delta + (size_t)f * plane + p;
            const Vec dv = p < full ? vec_load(d) : vec_load_part(d, plane - p);
#pragma GCC unroll 8
            for (int t = 0; t < nt; t++)
                acc[f][t] = vec_fma(dv, in[t], acc[f][t]);
        }
    }
#pragma GCC unroll 8
    for (int f = 0; f < nf; f++)
#pragma GCC unroll 8
        for (int t = 0; t < nt; t++)
            sums[f][t] = vec_sum(acc[f][t]);
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
