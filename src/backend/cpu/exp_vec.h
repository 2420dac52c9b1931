/* A branch-free float e^x that the compiler vectorises (libm's expf does not), shared by the
 * activation functions, the softmax rows and the fused lstm; with AVX-512 also its 16-lane form
 * and a 16-lane reciprocal, with AVX2 + FMA their 8-lane forms. */
#ifndef CDL_EXP_VEC_H
#define CDL_EXP_VEC_H

#include <math.h>
#include <stdint.h>
#include <string.h>

/* e^x within a few ulp for x in [-87, 88] (clamped outside, where float e^x underflows
 * or overflows anyway): x = n ln2 + r, |r| <= ln2/2, e^r by its degree-7 Taylor
 * polynomial (truncation < 1e-8 relative), 2^n assembled in the exponent bits. The steps are
 * fmaf, one instruction each: cdl builds as ISO C (-std=c11), where gcc fuses no a * b + c on its
 * own. The polynomial goes by Estrin's scheme, 3 multiply-adds deep instead of Horner's 7: the
 * exponential sits at the end of long chains (GELU's erfc, the gates' reciprocal), and a chain
 * longer than what the core keeps in flight limits the speed more than the operation count (AVX2
 * GELU on Zen 3, one process alternating: forward 1.43 -> 1.25 ns an element, backward 1.12 ->
 * 1.03). */
static inline float exp_vec(float x)
{
    x = x < -87.0f ? -87.0f : x;
    x = x > 88.0f ? 88.0f : x;
    /* Round x/ln2 to the nearest integer: adding 1.5*2^23 pushes the fraction out. */
    float n = fmaf(x, 1.44269504088896341f, 12582912.0f) - 12582912.0f;
    float r = fmaf(-n, 0.693145751953125f, x); /* ln2 split in a part exact in float */
    r = fmaf(-n, 1.42860682030941723e-6f, r);  /* and the rest */
    /* 1 + (r + r^2 (1/2 + r/6) + r^4 (1/24 + r/120 + r^2 (1/720 + r/5040))): pairs of terms, the
     * pairs by r^2, the halves by r^4, and the 1 last, so that its rounding comes once */
    const float r2 = r * r, r4 = r2 * r2;
    const float low = fmaf(fmaf(1.0f / 6.0f, r, 0.5f), r2, r);
    const float high =
        fmaf(fmaf(1.0f / 5040.0f, r, 1.0f / 720.0f), r2, fmaf(1.0f / 120.0f, r, 1.0f / 24.0f));
    const float p = fmaf(high, r4, low) + 1.0f;
    n = n == n ? n : 0.0f; /* NaN in, NaN out (through p), but no NaN-to-int conversion */
    int32_t bits = ((int32_t)n + 127) << 23;
    float scale;
    memcpy(&scale, &bits, sizeof scale);
    return p * scale;
}

#if defined(__AVX512F__)
#include <immintrin.h>

/* exp_vec on 16 lanes: the same steps, so each lane gets exp_vec's bits (checked on every float),
 * but 2^n by scalef, which returns NaN for a NaN n. The clamps take x as their second operand,
 * the one max and min return when either is NaN, so that NaN in gives NaN out as in exp_vec. */
static inline __m512 exp16(__m512 x)
{
    x = _mm512_min_ps(_mm512_set1_ps(88.0f), _mm512_max_ps(_mm512_set1_ps(-87.0f), x));
    const __m512 shift = _mm512_set1_ps(12582912.0f);
    const __m512 n =
        _mm512_sub_ps(_mm512_fmadd_ps(x, _mm512_set1_ps(1.44269504088896341f), shift), shift);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693145751953125f), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(1.42860682030941723e-6f), r);
    const __m512 r2 = _mm512_mul_ps(r, r), r4 = _mm512_mul_ps(r2, r2);
#define PAIR(c1, c0) _mm512_fmadd_ps(_mm512_set1_ps(c1), r, _mm512_set1_ps(c0))
    const __m512 low = _mm512_fmadd_ps(PAIR(1.0f / 6.0f, 0.5f), r2, r);
    const __m512 high =
        _mm512_fmadd_ps(PAIR(1.0f / 5040.0f, 1.0f / 720.0f), r2, PAIR(1.0f / 120.0f, 1.0f / 24.0f));
#undef PAIR
    const __m512 p = _mm512_add_ps(_mm512_fmadd_ps(high, r4, low), _mm512_set1_ps(1.0f));
    return _mm512_scalef_ps(p, n);
}

/* 1 / d: the 14-bit reciprocal estimate and one Newton step (within an ulp or so of the
 * division, which costs several times as much on 16 lanes). */
static inline __m512 recip16(__m512 d)
{
    const __m512 r = _mm512_rcp14_ps(d);
    return _mm512_fmadd_ps(r, _mm512_fnmadd_ps(d, r, _mm512_set1_ps(1.0f)), r);
}
#elif defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>

/* exp_vec on 8 lanes: the same steps, so each lane gets exp_vec's bits (checked on every float);
 * the clamps take x as their second operand, as exp16's. */
static inline __m256 exp8(__m256 x)
{
    x = _mm256_min_ps(_mm256_set1_ps(88.0f), _mm256_max_ps(_mm256_set1_ps(-87.0f), x));
    const __m256 shift = _mm256_set1_ps(12582912.0f);
    __m256 n =
        _mm256_sub_ps(_mm256_fmadd_ps(x, _mm256_set1_ps(1.44269504088896341f), shift), shift);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693145751953125f), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(1.42860682030941723e-6f), r);
    const __m256 r2 = _mm256_mul_ps(r, r), r4 = _mm256_mul_ps(r2, r2);
#define PAIR(c1, c0) _mm256_fmadd_ps(_mm256_set1_ps(c1), r, _mm256_set1_ps(c0))
    const __m256 low = _mm256_fmadd_ps(PAIR(1.0f / 6.0f, 0.5f), r2, r);
    const __m256 high =
        _mm256_fmadd_ps(PAIR(1.0f / 5040.0f, 1.0f / 720.0f), r2, PAIR(1.0f / 120.0f, 1.0f / 24.0f));
#undef PAIR
    const __m256 p = _mm256_add_ps(_mm256_fmadd_ps(high, r4, low), _mm256_set1_ps(1.0f));
    n = _mm256_and_ps(n, _mm256_cmp_ps(n, n, _CMP_ORD_Q)); /* NaN: 0, as exp_vec */
    const __m256i bits =
        _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvttps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(p, _mm256_castsi256_ps(bits));
}

/* 1 / d: the 12-bit reciprocal estimate and one Newton step (within an ulp or two of the
 * division, which costs several times as much). */
static inline __m256 recip8(__m256 d)
{
    const __m256 r = _mm256_rcp_ps(d);
    return _mm256_fmadd_ps(r, _mm256_fnmadd_ps(d, r, _mm256_set1_ps(1.0f)), r);
}
#endif

#endif
