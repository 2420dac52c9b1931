/* Matrix multiply through OpenBLAS (row-major cblas_sgemm), and its rounded operands. */
#include "backend/cpu/gemm.h"

#include <cblas.h>

#include "backend/cpu/bf16.h"
#include "backend/cpu/blas_kernels.h"
#include "backend/cpu/round.h"

void gemm(int trans_a, int trans_b, int m, int n, int k, float alpha, const float *a, int lda,
          const float *b, int ldb, float beta, float *c, int ldc)
{
    if (m <= 0 || n <= 0)
        return;
    blas_choose_kernels(); /* a no-op after cdl_set_threads */
    if (m == 1) { /* one row (a batch-1 connected layer): OpenBLAS 0.3.21's sgemm packs all of B */
        cblas_sgemv(CblasRowMajor, trans_b ? CblasNoTrans : CblasTrans, trans_b ? n : k,
                    trans_b ? k : n, alpha, b, ldb, a, trans_a ? lda : 1, beta, c, 1);
        return;
    }
    cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
                trans_b ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

const float *gemm_operand(GemmPrecision p, const float *x, size_t n, float *copy)
{
    switch (p) {
    case GEMM_FP32:
        return x;
    case GEMM_BF16:
        bf16_round_floats(copy, x, n);
        break;
    case GEMM_TF32:
        for (size_t i = 0; i < n; i++)
            copy[i] = tf32_round(x[i]);
        break;
    case GEMM_FP16:
        for (size_t i = 0; i < n; i++)
            copy[i] = fp16_round(x[i]);
        break;
    }
    return copy;
}
