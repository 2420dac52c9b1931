/* Matrix multiply: a thin row-major wrapper over OpenBLAS sgemm. */
#ifndef CDL_GEMM_H
#define CDL_GEMM_H

/* C[m][n] = alpha * op(A)[m][k] * op(B)[k][n] + beta * C, all row-major. op(X) is X, or
 * X transposed when trans_x is non-zero; lda/ldb/ldc are the row strides of A, B and C as
 * stored (so A is [k][lda] when transposed). beta = 0 ignores C's old contents. */
void gemm(int trans_a, int trans_b, int m, int n, int k, float alpha, const float *a, int lda,
          const float *b, int ldb, float beta, float *c, int ldc);

#endif
