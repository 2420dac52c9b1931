/* Matrix multiply: a thin row-major wrapper over OpenBLAS sgemm, and the precision its operands
 * are taken in. */
#ifndef CDL_GEMM_H
#define CDL_GEMM_H

#include <stddef.h>

#include "core/precision.h"

/* C[m][n] = alpha * op(A)[m][k] * op(B)[k][n] + beta * C, all row-major. op(X) is X, or
 * X transposed when trans_x is non-zero; lda/ldb/ldc are the row strides of A, B and C as
 * stored (so A is [k][lda] when transposed). beta = 0 ignores C's old contents. */
void gemm(int trans_a, int trans_b, int m, int n, int k, float alpha, const float *a, int lda,
          const float *b, int ldb, float beta, float *c, int ldc);

/* An operand x[0..n) of gemm as precision p takes it: x itself in GEMM_FP32 (copy unused, may
 * be NULL); in GEMM_BF16, GEMM_TF32 or GEMM_FP16 copy[0..n), filled with x rounded to that
 * format (bf16.h, round.h; copy may be x, to round in place). gemm on such operands is the
 * product in precision p: every product of two such values is exact in float32, so only the
 * order of the float32 sums can differ from a native kernel (the GPU's tensor cores). Each operand
 * is rounded once however many gemm calls read it (a convolution's weights serve every image of the
 * batch). */
const float *gemm_operand(GemmPrecision p, const float *x, size_t n, float *copy);

#endif
