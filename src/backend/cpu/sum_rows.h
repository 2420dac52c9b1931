/* Column sums of a row-major matrix and sums over a channel's planes: the reductions behind bias,
 * per-position and per-channel gradients. */
#ifndef CDL_SUM_ROWS_H
#define CDL_SUM_ROWS_H

#include <stddef.h>

/* sum[j] += x[0][j] + x[1][j] + ... + x[rows-1][j] for j < cols; x is [rows][cols]. Each sum
 * is accumulated in double in row order, so the result does not depend on the thread count. */
void sum_rows_add(float *sum, const float *x, size_t rows, size_t cols);

/* sum[k] += the sum over o < outer and i < inner of x[o][k][i] (times y[o][k][i] when y is not
 * NULL) for k < channels; x, y are [outer][channels][inner] (a bias's gradient over the planes of
 * [batch][channels][h*w], a scale's with y the input). Each sum is accumulated in double in memory
 * order, threads split the channels: the result does not depend on the thread count. */
void channel_sums_add(float *sum, const float *x, const float *y, size_t outer, size_t channels,
                      size_t inner);

#endif
