/* Small matrix products on the calling thread with the left operand read through two strides,
 * so that it is a matrix or a transposed one: attention's per-head products ([T][D] by [D][T]
 * and [T][T] by [T][D] at D = 32), where OpenBLAS's call and packing cost about what the
 * multiply-adds do. */
#ifndef CDL_GEMM_STRIDED_H
#define CDL_GEMM_STRIDED_H

#include <stddef.h>

/* C[m][n] = alpha A B + beta C, beta 0 (C's old contents ignored) or 1: A [m][k] with element
 * (r, i) at a[r * a_row + i * a_col] (A itself: a_row = lda, a_col = 1; its transpose: 1, lda),
 * B [k][n] row-major with row stride ldb, C with row stride ldc. Every element sums its k
 * products in order i = 0, 1, ..., then is scaled by alpha. */
void gemm_strided(int m, int n, int k, float alpha, const float *a, size_t a_row, size_t a_col,
                  const float *b, size_t ldb, float beta, float *c, size_t ldc);

/* tr[cols][rows] (row stride ldt) = x^T for x [rows][cols] (row stride ldx): the right operand of
 * a product by a transposed matrix (attention's K^T and V^T), exact. */
void gemm_strided_transpose(int rows, int cols, const float *x, size_t ldx, float *tr, size_t ldt);

#endif
