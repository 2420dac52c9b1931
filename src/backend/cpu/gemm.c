/* Matrix multiply through OpenBLAS (row-major cblas_sgemm), and its bf16 operands. */
#include "backend/cpu/gemm.h"

#include <cblas.h>

#include "backend/cpu/bf16.h"
#include "backend/cpu/blas_kernels.h"

void gemm(int trans_a, int trans_b, int m, int n, int k, float alpha, const float *a, int lda,
          const float *b, int ldb, float beta, float *c, int ldc)
{
    if (m <= 0 || n <= 0)
        return;
    blas_choose_kernels(); /* a no-op after cdl_set_threads */
    cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
                trans_b ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

const float *gemm_operand(GemmPrecision p, const float *x, size_t n, float *copy)
{
    if (p == GEMM_FP32)
        return x;
    bf16_round_floats(copy, x, n);
    return copy;
}
