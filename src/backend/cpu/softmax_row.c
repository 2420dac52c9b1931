/* One row's softmax, of the values or of the values scaled (backend/cpu/softmax_row.h), in three
 * vector passes: the max, the exponentials and their sum, the scaling; in AVX-512 or AVX2 + FMA
 * intrinsics where the compiler targets them (a row of any length in vector steps, the last one
 * masked), else in loops the compiler vectorises. */
#include "backend/cpu/softmax_row.h"

#include <math.h>

#include "backend/cpu/exp_vec.h"
#include "backend/cpu/lanes16.h"

#if defined(__AVX512F__)
/* y[0..n) = softmax(scale * x[0..n)); returns the sum of the exponentials, *max_out the row's max
 * (the log-sum-exp's parts). */
static float probs_of(const float *x, float *y, size_t n, float scale, float *max_out)
{
    __m512 vmax = _mm512_set1_ps(x[0]);
    for (size_t i = 0; i < n; i += 16) {
        const __mmask16 m = lanes16((long)(n - i));
        vmax = _mm512_mask_max_ps(vmax, m, vmax, _mm512_maskz_loadu_ps(m, x + i));
    }
    *max_out = _mm512_reduce_max_ps(vmax);
    const __m512 max = _mm512_set1_ps(*max_out), s = _mm512_set1_ps(scale);
    __m512 sum = _mm512_setzero_ps();
    for (size_t i = 0; i < n; i += 16) {
        const __mmask16 m = lanes16((long)(n - i));
        const __m512 z = _mm512_mul_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, x + i), max), s);
        /* 0 below e^-87, as the loops below */
        const __mmask16 keep = _mm512_mask_cmp_ps_mask(m, z, _mm512_set1_ps(-87.0f), _CMP_NLT_UQ);
        const __m512 e = _mm512_maskz_mov_ps(keep, exp16(z));
        _mm512_mask_storeu_ps(y + i, m, e);
        sum = _mm512_add_ps(sum, e);
    }
    const float total = _mm512_reduce_add_ps(sum);
    const __m512 inv = _mm512_set1_ps(1.0f / total);
    for (size_t i = 0; i < n; i += 16) {
        const __mmask16 m = lanes16((long)(n - i));
        _mm512_mask_storeu_ps(y + i, m, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, y + i), inv));
    }
    return total;
}
#elif defined(__AVX2__) && defined(__FMA__)
/* The largest of 8 lanes (halves, then pairs, then the last two, as sum8). */
static float max8(__m256 v)
{
    __m128 h = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    h = _mm_max_ps(h, _mm_movehl_ps(h, h));
    return _mm_cvtss_f32(_mm_max_ss(h, _mm_movehdup_ps(h)));
}

/* The AVX-512 form's steps on 8 lanes: whole vectors, then the lanes left (masked loads, which
 * read 0 past n: the max takes the running max there, the sum 0; stored by store_first8). */
static float probs_of(const float *x, float *y, size_t n, float scale, float *max_out)
{
    const size_t whole = n / 8 * 8;
    const __m256i tail = lanes8((long)(n - whole));
    __m256 vmax = _mm256_set1_ps(x[0]);
    for (size_t i = 0; i < whole; i += 8)
        vmax = _mm256_max_ps(vmax, _mm256_loadu_ps(x + i));
    if (whole < n)
        vmax = _mm256_blendv_ps(vmax, _mm256_max_ps(vmax, _mm256_maskload_ps(x + whole, tail)),
                                _mm256_castsi256_ps(tail));
    *max_out = max8(vmax);
    const __m256 max = _mm256_set1_ps(*max_out), s = _mm256_set1_ps(scale);
    const __m256 floor = _mm256_set1_ps(-87.0f); /* 0 below e^-87, as the AVX-512 form */
    __m256 sum = _mm256_setzero_ps();
    for (size_t i = 0; i < whole; i += 8) {
        const __m256 z = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(x + i), max), s);
        const __m256 e = _mm256_and_ps(_mm256_cmp_ps(z, floor, _CMP_NLT_UQ), exp8(z));
        _mm256_storeu_ps(y + i, e);
        sum = _mm256_add_ps(sum, e);
    }
    __m256 e_tail = _mm256_setzero_ps();
    if (whole < n) {
        const __m256 z = _mm256_mul_ps(_mm256_sub_ps(_mm256_maskload_ps(x + whole, tail), max), s);
        const __m256 keep =
            _mm256_and_ps(_mm256_castsi256_ps(tail), _mm256_cmp_ps(z, floor, _CMP_NLT_UQ));
        e_tail = _mm256_and_ps(keep, exp8(z));
        sum = _mm256_add_ps(sum, e_tail);
    }
    const float total = sum8(sum);
    const __m256 inv = _mm256_set1_ps(1.0f / total);
    for (size_t i = 0; i < whole; i += 8)
        _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_loadu_ps(y + i), inv));
    if (whole < n)
        store_first8(y + whole, _mm256_mul_ps(e_tail, inv), (long)(n - whole));
    return total;
}
#else
static float probs_of(const float *x, float *y, size_t n, float scale, float *max_out)
{
    float max = x[0];
#pragma omp simd reduction(max : max)
    for (size_t i = 1; i < n; i++)
        max = x[i] > max ? x[i] : max;
    float sum = 0;
#pragma omp simd reduction(+ : sum)
    for (size_t i = 0; i < n; i++) {
        const float z = (x[i] - max) * scale;
        const float e = z < -87.0f ? 0.0f : exp_vec(z); /* underflows in float, as expf's */
        y[i] = e;
        sum += e;
    }
    const float inv = 1.0f / sum;
#pragma omp simd
    for (size_t i = 0; i < n; i++)
        y[i] *= inv;
    *max_out = max;
    return sum;
}
#endif

double softmax_row_scaled(const float *x, float *y, size_t n, float scale)
{
    float max;
    const float sum = probs_of(x, y, n, scale, &max);
    return (double)scale * max + log((double)sum);
}

double softmax_row(const float *x, float *y, size_t n)
{
    return softmax_row_scaled(x, y, n, 1.0f);
}

void softmax_row_probs(const float *x, float *y, size_t n, float scale)
{
    float max;
    probs_of(x, y, n, scale, &max);
}
