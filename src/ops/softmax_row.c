/* One row's softmax, of the values or of the values scaled (ops/softmax_row.h), in three vector
 * passes: the max, the exponentials and their sum, the scaling; softmax_row_probs in AVX-512
 * intrinsics where the compiler targets it. */
#include "ops/softmax_row.h"

#include <math.h>

#include "ops/exp_vec.h"
#include "ops/lanes16.h"

double softmax_row(const float *x, float *y, size_t n)
{
    return softmax_row_scaled(x, y, n, 1.0f);
}

double softmax_row_scaled(const float *x, float *y, size_t n, float scale)
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
    return (double)scale * max + log((double)sum);
}

#if defined(__AVX512F__)
void softmax_row_probs(const float *x, float *y, size_t n, float scale)
{
    __m512 vmax = _mm512_set1_ps(x[0]);
    for (size_t i = 0; i < n; i += 16) {
        const __mmask16 m = lanes16((long)(n - i));
        vmax = _mm512_mask_max_ps(vmax, m, vmax, _mm512_maskz_loadu_ps(m, x + i));
    }
    const __m512 max = _mm512_set1_ps(_mm512_reduce_max_ps(vmax)), s = _mm512_set1_ps(scale);
    __m512 sum = _mm512_setzero_ps();
    for (size_t i = 0; i < n; i += 16) {
        const __mmask16 m = lanes16((long)(n - i));
        const __m512 z = _mm512_mul_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, x + i), max), s);
        /* 0 below e^-87, as softmax_row_scaled */
        const __mmask16 keep = _mm512_mask_cmp_ps_mask(m, z, _mm512_set1_ps(-87.0f), _CMP_NLT_UQ);
        const __m512 e = _mm512_maskz_mov_ps(keep, exp16(z));
        _mm512_mask_storeu_ps(y + i, m, e);
        sum = _mm512_add_ps(sum, e);
    }
    const __m512 inv = _mm512_set1_ps(1.0f / _mm512_reduce_add_ps(sum));
    for (size_t i = 0; i < n; i += 16) {
        const __mmask16 m = lanes16((long)(n - i));
        _mm512_mask_storeu_ps(y + i, m, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, y + i), inv));
    }
}
#else
void softmax_row_probs(const float *x, float *y, size_t n, float scale)
{
    softmax_row_scaled(x, y, n, scale);
}
#endif
