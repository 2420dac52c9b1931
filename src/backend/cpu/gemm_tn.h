/* The weight-gradient product C = A^T B + beta C over a long inner dimension (the rows of a
 * batch): a dense layer's dW = delta^T x, a recurrent layer's [x, h_prev]^T dL/da. */
#ifndef CDL_GEMM_TN_H
#define CDL_GEMM_TN_H

/* C[m][n] = A^T B + beta C for A [k][m] and B [k][n], row-major with row strides lda, ldb and
 * ldc; beta 0 (C's old contents ignored) or 1. With AVX-512 an own kernel: every element of C
 * adds its k products to its old value (beta 1) or to zero in order k = 0, 1, ..., so the result
 * does not depend on the thread count (C's tiles split over the OpenMP threads). Else OpenBLAS
 * sgemm (backend/cpu/gemm). */
void gemm_tn(int m, int n, int k, const float *a, int lda, const float *b, int ldb, float beta,
             float *c, int ldc);

#endif
