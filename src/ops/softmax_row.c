/* One row's softmax, of the values or of the values scaled (ops/softmax_row.h), in three vector
 * passes: the max, the exponentials and their sum, the scaling. */
#include "ops/softmax_row.h"

#include <math.h>

#include "ops/exp_vec.h"

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
