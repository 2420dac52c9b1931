/* The softmax of one row of values, vectorised, for the softmax layer and attention. */
#ifndef CDL_SOFTMAX_ROW_H
#define CDL_SOFTMAX_ROW_H

#include <stddef.h>

/* y[0..n) = softmax(x[0..n)) = exp(x - max) / sum exp(x - max), n >= 1, y may be x; returns
 * the log-sum-exp max + log(sum exp(x - max)). e^x is exp_vec (backend/cpu/exp_vec.h, a few float
 * ulp), 0 below e^-87 (where float underflows anyway), and the sums run in a fixed order for a
 * given n, so the result is deterministic. */
double softmax_row(const float *x, float *y, size_t n);

/* y[0..n) = softmax(scale * x[0..n)) for scale > 0, as softmax_row (which is scale 1):
 * exp(scale * (x - max)) / sum; returns scale * max + log(sum). */
double softmax_row_scaled(const float *x, float *y, size_t n, float scale);

/* y[0..n) = softmax(scale * x[0..n)) as softmax_row_scaled, without the log-sum-exp: attention's
 * rows. All three run 16 lanes at a time with AVX-512, 8 with AVX2 + FMA, the last vector masked
 * (a row of any length runs vector steps only), else loops the compiler vectorises. */
void softmax_row_probs(const float *x, float *y, size_t n, float scale);

#endif
