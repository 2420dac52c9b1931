/* Element-wise activation functions and their derivatives. Each kind has its own loop
 * (the switch sits outside), written so that the compiler vectorises it (cdl builds with
 * -fno-trapping-math, without which gcc keeps the selects scalar): the
 * transcendental kinds use branch-free exp/tanh/erfc approximations accurate to a few
 * float ulp, since libm's calls do not vectorise (and libmvec's would make an
 * element's value depend on whether it fell in a vector body or a remainder loop). With AVX-512,
 * GELU (gpt_tiny's MLP) runs on intrinsics instead: 16 lanes with the last vector masked, its
 * two divisions as reciprocal estimates refined by a Newton step; with AVX2 + FMA the same on 8
 * lanes.
 * Large arrays are split across OpenMP threads, unless the call comes from inside a parallel
 * region (a block of backend/cpu/gemm_rows), which runs it on the calling thread. */
#include "backend/cpu/activation.h"

#include <math.h>
#include <omp.h>
#include <string.h>

#include "backend/cpu/exp_vec.h"
#include "backend/cpu/lanes16.h"

/* Below this many elements a parallel region costs more than it saves. */
#define ACTIVATION_PARALLEL_MIN 16384

static inline float sigmoid_vec(float x)
{
    return 1.0f / (1.0f + exp_vec(-x));
}

/* relu6(x + 3), of which torch's hardsigmoid is v / 6 and hardswish x v / 6 (NaN kept: the
 * selects are false for it). */
static inline float relu6_of_x_plus_3(float x)
{
    float v = x + 3.0f;
    v = v < 0 ? 0.0f : v;
    return v > 6.0f ? 6.0f : v;
}

/* tanh(softplus(x)) without forming softplus: with e = e^x, (1+e)^2 = e^(2 softplus),
 * so tanh(softplus(x)) = ((1+e)^2 - 1) / ((1+e)^2 + 1) = e(e+2) / (e(e+2) + 2), which
 * has no cancellation for any x; past x = 20 it is 1 in float, so e is capped there. */
static inline float tanh_softplus(float x)
{
    float e = exp_vec(x < 20.0f ? x : 20.0f);
    float n = e * (e + 2.0f);
    return n / (n + 2.0f);
}

/* e^x - 1 for x <= 0: the Taylor series to x^9 (truncation < 1e-9 relative) above
 * -0.5, where e^x - 1 would cancel; below, e^x - 1 loses at most 1.3 bits. */
static inline float expm1_neg_vec(float x)
{
    float p = 1.0f / 362880.0f;
    p = p * x + 1.0f / 40320.0f;
    p = p * x + 1.0f / 5040.0f;
    p = p * x + 1.0f / 720.0f;
    p = p * x + 1.0f / 120.0f;
    p = p * x + 1.0f / 24.0f;
    p = p * x + 1.0f / 6.0f;
    p = p * x + 0.5f;
    p = p * x + 1.0f;
    float series = p * x;
    float direct = exp_vec(x) - 1.0f;
    return x > -0.5f ? series : direct;
}

/* tanh: the odd Taylor series to x^15 for |x| < 0.5 (truncation < 2e-8 relative), else
 * 1 - 2/(e^2|x| + 1), where tanh >= 0.46 so the subtraction loses at most 1 bit. */
static inline float tanh_vec(float x)
{
    float ax = x < 0 ? -x : x;
    float x2 = x * x;
    float p = -929569.0f / 638512875.0f;
    p = p * x2 + 21844.0f / 6081075.0f;
    p = p * x2 - 1382.0f / 155925.0f;
    p = p * x2 + 62.0f / 2835.0f;
    p = p * x2 - 17.0f / 315.0f;
    p = p * x2 + 2.0f / 15.0f;
    p = p * x2 - 1.0f / 3.0f;
    p = p * x2 + 1.0f;
    float series = p * x;
    float big = 1.0f - 2.0f / (exp_vec(2.0f * ax) + 1.0f);
    big = x < 0 ? -big : big;
    return ax < 0.5f ? series : big;
}

#define INV_SQRT2 0.70710678118654752f
#define INV_SQRT_2PI 0.39894228040143268f

/* Numerical Recipes' erfcc: erfc(z) = t e^(-z^2 + P(t)) for t = 1 / (1 + z/2), P of degree 9
 * with the coefficients ERFC_P[0] (constant) .. ERFC_P[9]; ERFC_PAIR(i) is the pair of terms i
 * and i + 1 on lanes of t, by one multiply-add (fma, set1 its forms). */
static const float ERFC_P[10] = {-1.26551223f, 1.00002368f, 0.37409196f,  0.09678418f,
                                 -0.18628806f, 0.27886807f, -1.13520398f, 1.48851587f,
                                 -0.82215223f, 0.17087277f};
#define ERFC_PAIR(fma, set1, i) fma(set1(ERFC_P[(i) + 1]), t, set1(ERFC_P[i]))

/* The standard normal CDF, Phi(x) = 0.5 erfc(-x/sqrt2), with erfc(z), z >= 0, from
 * the Chebyshev fit of Numerical Recipes' erfcc (relative error < 1.2e-7 for every
 * z >= 0, so the far left tail keeps its precision); erfc(-z) = 2 - erfc(z). */
static inline float normal_cdf_vec(float x)
{
    float z = (x < 0 ? -x : x) * INV_SQRT2;
    float t = 1.0f / (1.0f + 0.5f * z);
    /* the degree-9 polynomial in t by Estrin's scheme (fmaf: see backend/cpu/exp_vec.h) */
#define PAIR(i) ERFC_PAIR(fmaf, , i)
    const float t2 = t * t, t4 = t2 * t2, t8 = t4 * t4;
    const float low = fmaf(PAIR(2), t2, PAIR(0)), mid = fmaf(PAIR(6), t2, PAIR(4));
    const float p = fmaf(PAIR(8), t8, fmaf(mid, t4, low));
#undef PAIR
    float half_erfc = 0.5f * t * exp_vec(fmaf(-0.5f * x, x, p)); /* z^2 with one rounding */
    return x < 0 ? half_erfc : 1.0f - half_erfc;
}

#if defined(__AVX512F__)
/* GELU of 16 lanes as normal_cdf_vec below: 1 / (1 + z/2) by recip16 instead of a division. */
static inline __m512 gelu16(__m512 v)
{
    const __m512 z = _mm512_mul_ps(_mm512_abs_ps(v), _mm512_set1_ps(0.70710678118654752f));
    const __m512 t = recip16(_mm512_fmadd_ps(z, _mm512_set1_ps(0.5f), _mm512_set1_ps(1.0f)));
#define PAIR(i) ERFC_PAIR(_mm512_fmadd_ps, _mm512_set1_ps, i)
    const __m512 t2 = _mm512_mul_ps(t, t), t4 = _mm512_mul_ps(t2, t2), t8 = _mm512_mul_ps(t4, t4);
    const __m512 low = _mm512_fmadd_ps(PAIR(2), t2, PAIR(0)),
                 mid = _mm512_fmadd_ps(PAIR(6), t2, PAIR(4));
    const __m512 p = _mm512_fmadd_ps(PAIR(8), t8, _mm512_fmadd_ps(mid, t4, low));
#undef PAIR
    const __m512 e = exp16(_mm512_fmadd_ps(_mm512_mul_ps(_mm512_set1_ps(-0.5f), v), v, p));
    const __m512 half_erfc = _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(0.5f), t), e);
    const __mmask16 neg = _mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_LT_OQ);
    const __m512 cdf =
        _mm512_mask_blend_ps(neg, _mm512_sub_ps(_mm512_set1_ps(1.0f), half_erfc), half_erfc);
    return _mm512_mul_ps(v, cdf);
}

/* GELU forward, 4 vectors at a time (more loads and stores in flight where the operands are not
 * in the cache), then one at a time with the last masked; every element takes gelu16's steps. */
static void gelu_forward16(const float *x, float *y, size_t n)
{
    size_t i = 0;
    for (; i + 64 <= n; i += 64)
        for (size_t j = i; j < i + 64; j += 16)
            _mm512_storeu_ps(y + j, gelu16(_mm512_loadu_ps(x + j)));
    for (; i < n; i += 16) {
        const __mmask16 m = lanes16((long)(n - i));
        _mm512_mask_storeu_ps(y + i, m, gelu16(_mm512_maskz_loadu_ps(m, x + i)));
    }
}

/* GELU's derivative at 16 lanes v of the forward's output yv, as the scalar loop below: y / x by
 * recip16. */
static inline __m512 gelu_grad16(__m512 v, __m512 yv)
{
    const __mmask16 big = _mm512_cmp_ps_mask(_mm512_abs_ps(v), _mm512_set1_ps(1e-30f), _CMP_GT_OQ);
    /* past 1e30 the estimate's reciprocal may flush to 0: there Phi is 1 (or 0, y = -0) */
    const __mmask16 huge = _mm512_cmp_ps_mask(_mm512_abs_ps(v), _mm512_set1_ps(1e30f), _CMP_GT_OQ);
    __m512 cdf = _mm512_mask_blend_ps(big, _mm512_set1_ps(0.5f), _mm512_mul_ps(yv, recip16(v)));
    cdf = _mm512_mask_blend_ps(
        huge, cdf,
        _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_GT_OQ),
                            _mm512_set1_ps(1.0f)));
    const __m512 e = exp16(_mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(-0.5f), v), v));
    return _mm512_fmadd_ps(_mm512_mul_ps(v, _mm512_set1_ps(0.39894228040143268f)), e, cdf);
}

/* GELU backward, 4 vectors at a time (more loads in flight: its operands come from memory, not
 * the cache), then one at a time with the last masked; every element takes gelu_grad16's steps. */
static void gelu_backward16(const float *x, const float *y, float *d, size_t n)
{
    size_t i = 0;
    for (; i + 64 <= n; i += 64)
        for (size_t j = i; j < i + 64; j += 16)
            _mm512_storeu_ps(
                d + j, _mm512_mul_ps(_mm512_loadu_ps(d + j),
                                     gelu_grad16(_mm512_loadu_ps(x + j), _mm512_loadu_ps(y + j))));
    for (; i < n; i += 16) {
        const __mmask16 m = lanes16((long)(n - i));
        const __m512 g =
            gelu_grad16(_mm512_maskz_loadu_ps(m, x + i), _mm512_maskz_loadu_ps(m, y + i));
        _mm512_mask_storeu_ps(d + i, m, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, d + i), g));
    }
}
#elif defined(__AVX2__) && defined(__FMA__)
/* gelu16 on 8 lanes, the reciprocal by recip8. */
static inline __m256 gelu8(__m256 v)
{
    const __m256 sign = _mm256_set1_ps(-0.0f);
    const __m256 z = _mm256_mul_ps(_mm256_andnot_ps(sign, v), _mm256_set1_ps(0.70710678118654752f));
    const __m256 t = recip8(_mm256_fmadd_ps(z, _mm256_set1_ps(0.5f), _mm256_set1_ps(1.0f)));
#define PAIR(i) ERFC_PAIR(_mm256_fmadd_ps, _mm256_set1_ps, i)
    const __m256 t2 = _mm256_mul_ps(t, t), t4 = _mm256_mul_ps(t2, t2), t8 = _mm256_mul_ps(t4, t4);
    const __m256 low = _mm256_fmadd_ps(PAIR(2), t2, PAIR(0)),
                 mid = _mm256_fmadd_ps(PAIR(6), t2, PAIR(4));
    const __m256 p = _mm256_fmadd_ps(PAIR(8), t8, _mm256_fmadd_ps(mid, t4, low));
#undef PAIR
    const __m256 e = exp8(_mm256_fmadd_ps(_mm256_mul_ps(_mm256_set1_ps(-0.5f), v), v, p));
    const __m256 half_erfc = _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(0.5f), t), e);
    const __m256 neg = _mm256_cmp_ps(v, _mm256_setzero_ps(), _CMP_LT_OQ);
    const __m256 cdf =
        _mm256_blendv_ps(_mm256_sub_ps(_mm256_set1_ps(1.0f), half_erfc), half_erfc, neg);
    return _mm256_mul_ps(v, cdf);
}

/* gelu_grad16 on 8 lanes. */
static inline __m256 gelu_grad8(__m256 v, __m256 yv)
{
    const __m256 av = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), v);
    const __m256 big = _mm256_cmp_ps(av, _mm256_set1_ps(1e-30f), _CMP_GT_OQ);
    const __m256 huge = _mm256_cmp_ps(av, _mm256_set1_ps(1e30f), _CMP_GT_OQ);
    __m256 cdf = _mm256_blendv_ps(_mm256_set1_ps(0.5f), _mm256_mul_ps(yv, recip8(v)), big);
    const __m256 pos = _mm256_cmp_ps(v, _mm256_setzero_ps(), _CMP_GT_OQ);
    cdf = _mm256_blendv_ps(cdf, _mm256_and_ps(pos, _mm256_set1_ps(1.0f)), huge);
    const __m256 e = exp8(_mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(-0.5f), v), v));
    return _mm256_fmadd_ps(_mm256_mul_ps(v, _mm256_set1_ps(0.39894228040143268f)), e, cdf);
}

/* GELU forward and backward on 8 lanes at a time, the last vector masked. */
static void gelu_forward8(const float *x, float *y, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, gelu8(_mm256_loadu_ps(x + i)));
    if (i < n) {
        const __m256i m = lanes8((long)(n - i));
        _mm256_maskstore_ps(y + i, m, gelu8(_mm256_maskload_ps(x + i, m)));
    }
}

static void gelu_backward8(const float *x, const float *y, float *d, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 g = gelu_grad8(_mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i));
        _mm256_storeu_ps(d + i, _mm256_mul_ps(_mm256_loadu_ps(d + i), g));
    }
    if (i < n) {
        const __m256i m = lanes8((long)(n - i));
        const __m256 g = gelu_grad8(_mm256_maskload_ps(x + i, m), _mm256_maskload_ps(y + i, m));
        _mm256_maskstore_ps(d + i, m, _mm256_mul_ps(_mm256_maskload_ps(d + i, m), g));
    }
}
#endif

static void forward_range(const float *x, float *y, size_t n, ActivationKind a)
{
    size_t i;
    switch (a) {
    case CDL_ACT_LINEAR:
        if (y != x)
            memmove(y, x, n * sizeof *y);
        break;
    case CDL_ACT_RELU:
        /* x < 0 ? 0 : x, not x > 0 ? x : 0: NaN stays NaN and -0 stays -0, as torch.relu */
#pragma omp simd /* y may be x (in place): element i reads only x[i] */
        for (i = 0; i < n; i++)
            y[i] = x[i] < 0 ? 0.0f : x[i];
        break;
    case CDL_ACT_LEAKY:
#pragma omp simd
        for (i = 0; i < n; i++)
            y[i] = x[i] > 0 ? x[i] : 0.1f * x[i];
        break;
    case CDL_ACT_LOGISTIC:
        for (i = 0; i < n; i++)
            y[i] = sigmoid_vec(x[i]);
        break;
    case CDL_ACT_TANH:
        for (i = 0; i < n; i++)
            y[i] = tanh_vec(x[i]);
        break;
    case CDL_ACT_ELU:
        for (i = 0; i < n; i++)
            y[i] = x[i] > 0 ? x[i] : expm1_neg_vec(x[i]);
        break;
    case CDL_ACT_RELU6:
        for (i = 0; i < n; i++) {
            float v = x[i] < 0 ? 0.0f : x[i]; /* NaN and -0 kept, as relu */
            y[i] = v > 6.0f ? 6.0f : v;
        }
        break;
    case CDL_ACT_GELU:
#if defined(__AVX512F__)
        gelu_forward16(x, y, n);
#elif defined(__AVX2__) && defined(__FMA__)
        gelu_forward8(x, y, n);
#else
        for (i = 0; i < n; i++)
            y[i] = x[i] * normal_cdf_vec(x[i]);
#endif
        break;
    case CDL_ACT_SWISH:
        for (i = 0; i < n; i++)
            y[i] = x[i] * sigmoid_vec(x[i]);
        break;
    case CDL_ACT_MISH:
        for (i = 0; i < n; i++)
            y[i] = x[i] * tanh_softplus(x[i]);
        break;
    case CDL_ACT_HARDSWISH:
#pragma omp simd
        for (i = 0; i < n; i++)
            y[i] = x[i] * relu6_of_x_plus_3(x[i]) / 6.0f;
        break;
    case CDL_ACT_HARDSIGMOID:
#pragma omp simd
        for (i = 0; i < n; i++)
            y[i] = relu6_of_x_plus_3(x[i]) / 6.0f;
        break;
    case CDL_ACT_COUNT:
        break;
    }
}

static void backward_range(const float *x, const float *y, float *d, size_t n, ActivationKind a)
{
    size_t i;
    switch (a) {
    case CDL_ACT_LINEAR:
    case CDL_ACT_COUNT:
        break;
    case CDL_ACT_RELU:
#pragma omp simd
        for (i = 0; i < n; i++)
            d[i] = y[i] > 0 ? d[i] : 0.0f;
        break;
    case CDL_ACT_LEAKY:
#pragma omp simd
        for (i = 0; i < n; i++)
            d[i] *= y[i] > 0 ? 1.0f : 0.1f;
        break;
    case CDL_ACT_LOGISTIC:
        for (i = 0; i < n; i++)
            d[i] *= y[i] * (1.0f - y[i]);
        break;
    case CDL_ACT_TANH:
        for (i = 0; i < n; i++)
            d[i] *= 1.0f - y[i] * y[i];
        break;
    case CDL_ACT_ELU:
        for (i = 0; i < n; i++)
            d[i] *= x[i] > 0 ? 1.0f : y[i] + 1.0f;
        break;
    case CDL_ACT_RELU6:
        for (i = 0; i < n; i++)
            d[i] = (x[i] > 0 && x[i] < 6.0f) ? d[i] : 0.0f;
        break;
    case CDL_ACT_GELU:
        /* Phi(x) + x phi(x) with Phi = y / x from the forward (one exp instead of two; within
         * 2 ulp of normal_cdf_vec); near 0, where y / x loses its bits, Phi = 1/2. */
#if defined(__AVX512F__)
        gelu_backward16(x, y, d, n);
#elif defined(__AVX2__) && defined(__FMA__)
        gelu_backward8(x, y, d, n);
#else
#pragma omp simd
        for (i = 0; i < n; i++) {
            float v = x[i], av = v < 0 ? -v : v;
            float cdf = av > 1e-30f ? y[i] / v : 0.5f;
            d[i] *= fmaf(v * INV_SQRT_2PI, exp_vec(-0.5f * v * v), cdf);
        }
#endif
        break;
    case CDL_ACT_SWISH:
        /* s + x s (1 - s) = s + y (1 - s), with 1 - s = e^-x s exact where s ~ 1 */
        for (i = 0; i < n; i++) {
            float e = exp_vec(-x[i]);
            float s = 1.0f / (1.0f + e);
            d[i] *= s + y[i] * e * s;
        }
        break;
    case CDL_ACT_MISH:
        /* t + x (1 - t^2) sigmoid(x) with t = n / (n + 2) as in tanh_softplus, so
         * 1 - t^2 = 4 (n + 1) / (n + 2)^2 without cancellation where t ~ 1. */
        for (i = 0; i < n; i++) {
            float v = x[i];
            float e = exp_vec(v < 20.0f ? v : 20.0f);
            float num = e * (e + 2.0f), den = num + 2.0f;
            float t = num / den;
            float one_minus_t2 = 4.0f * (num + 1.0f) / (den * den);
            d[i] *= t + v * one_minus_t2 * sigmoid_vec(v);
        }
        break;
    case CDL_ACT_HARDSWISH:
        /* torch's choice at the kinks: x / 3 + 1/2 on [-3, 3], so -1/2 at -3 and 3/2 at 3 */
#pragma omp simd
        for (i = 0; i < n; i++)
            d[i] = x[i] < -3.0f ? 0.0f : x[i] <= 3.0f ? d[i] * (x[i] / 3.0f + 0.5f) : d[i];
        break;
    case CDL_ACT_HARDSIGMOID:
        /* 1/6 strictly inside (-3, 3), 0 at and beyond the kinks, as torch */
#pragma omp simd
        for (i = 0; i < n; i++)
            d[i] = x[i] > -3.0f && x[i] < 3.0f ? d[i] * (1.0f / 6.0f) : 0.0f;
        break;
    }
}

/* The [begin, end) slice of n elements that thread `tid` of `nth` handles, in whole
 * 16-float blocks so that vector loops start aligned with the others' boundaries. */
static void thread_slice(size_t n, size_t *begin, size_t *end)
{
    size_t nth = (size_t)omp_get_num_threads(), tid = (size_t)omp_get_thread_num();
    size_t blocks = (n + 15) / 16;
    size_t per = (blocks + nth - 1) / nth;
    size_t b = tid * per * 16, e = b + per * 16;
    *begin = b < n ? b : n;
    *end = e < n ? e : n;
}

void activation_forward(const float *x, float *y, size_t n, ActivationKind a)
{
    if (a == CDL_ACT_LINEAR && x == y)
        return;
    if (n <= ACTIVATION_PARALLEL_MIN || omp_in_parallel()) {
        forward_range(x, y, n, a);
        return;
    }
#pragma omp parallel
    {
        size_t begin, end;
        thread_slice(n, &begin, &end);
        forward_range(x + begin, y + begin, end - begin, a);
    }
}

void activation_backward(const float *x, const float *y, float *delta, size_t n, ActivationKind a)
{
    if (a == CDL_ACT_LINEAR)
        return;
    if (n <= ACTIVATION_PARALLEL_MIN || omp_in_parallel()) {
        backward_range(x, y, delta, n, a);
        return;
    }
#pragma omp parallel
    {
        size_t begin, end;
        thread_slice(n, &begin, &end);
        backward_range(x + begin, y + begin, delta + begin, end - begin, a);
    }
}
