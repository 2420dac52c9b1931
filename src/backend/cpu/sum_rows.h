/* Column sums of a row-major matrix, the reduction behind bias and per-position gradients. */
#ifndef CDL_SUM_ROWS_H
#define CDL_SUM_ROWS_H

#include <stddef.h>

/* sum[j] += x[0][j] + x[1][j] + ... + x[rows-1][j] for j < cols; x is [rows][cols]. Each sum
 * is accumulated in double in row order, so the result does not depend on the thread count. */
void sum_rows_add(float *sum, const float *x, size_t rows, size_t cols);

#endif
