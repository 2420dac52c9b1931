/* A dense layer's products in blocks of rows with its bias and activation passes fused in
 * (backend/cpu/gemm_rows.h): the blocks split over the OpenMP threads; each block's product comes
 * from gemm_packed_panels and its element-wise pass runs on the calling thread (activation_forward
 * and activation_backward open no region inside one, nor does sum_rows_add); the backward's
 * bias gradient sums each block's rows while the block is in cache, then the blocks' sums. */
#include "backend/cpu/gemm_rows.h"

#include <stddef.h>
#include <string.h>

#include "backend/cpu/gemm_packed.h"
#include "backend/cpu/sum_rows.h"

/* Rows per block: a block's rows of A, pre and out stay in L2 between the product and the
 * element-wise pass (48 x 512 floats is 96 KiB). A multiple of the kernel's 6 rows. */
#define GEMM_ROWS_BLOCK 48
/* Below this many multiply-adds a parallel region costs more than it saves. */
#define GEMM_ROWS_PARALLEL_MIN (1 << 20)

/* Blocks of GEMM_ROWS_BLOCK rows in m (the last may be short). */
static int blocks_of(int m)
{
    return (m + GEMM_ROWS_BLOCK - 1) / GEMM_ROWS_BLOCK;
}

static int panels_of(int n)
{
    return (n + GEMM_PACKED_PANEL - 1) / GEMM_PACKED_PANEL;
}

/* Rows of the block starting at row i0 of m (the last block may be short). */
static int block_rows(int m, int i0)
{
    return m - i0 < GEMM_ROWS_BLOCK ? m - i0 : GEMM_ROWS_BLOCK;
}

void gemm_bias_act(int m, int n, int k, const float *a, int lda, const float *packed,
                   const float *bias, ActivationKind act, float *pre, float *out)
{
    if (m <= 0 || n <= 0)
        return;
    const int blocks = blocks_of(m);
#pragma omp parallel for schedule(static) if ((double)m * n * k >= GEMM_ROWS_PARALLEL_MIN)
    for (int b = 0; b < blocks; b++) {
        const int i0 = b * GEMM_ROWS_BLOCK, rows = block_rows(m, i0);
        float *p = pre + (size_t)i0 * n;
        gemm_packed_panels(rows, n, k, a + (size_t)i0 * lda, lda, packed, 0, panels_of(n), 0.0f, p,
                           n);
        for (int r = 0; bias && r < rows; r++) {
            float *pr = p + (size_t)r * n;
#pragma omp simd
            for (int j = 0; j < n; j++)
                pr[j] += bias[j];
        }
        if (act != CDL_ACT_LINEAR)
            activation_forward(p, out + (size_t)i0 * n, (size_t)rows * n, act);
    }
}

size_t gemm_act_backward_sums_floats(int m, int k)
{
    return m > 0 && k > 0 ? (size_t)blocks_of(m) * (size_t)k : 0;
}

void gemm_act_backward(int m, int n, int k, float *delta, const float *pre, const float *out,
                       ActivationKind act, const float *packed, float beta, float *c,
                       float *bias_grad, float *sums)
{
    if (m <= 0 || (!c && !bias_grad && act == CDL_ACT_LINEAR))
        return;
    const int blocks = blocks_of(m);
#pragma omp parallel for schedule(static) if ((double)m * n * k >= GEMM_ROWS_PARALLEL_MIN)
    for (int b = 0; b < blocks; b++) {
        const int i0 = b * GEMM_ROWS_BLOCK, rows = block_rows(m, i0);
        const size_t at = (size_t)i0 * k;
        float *d = delta + at;
        if (act != CDL_ACT_LINEAR)
            activation_backward(pre + at, out + at, d, (size_t)rows * k, act);
        if (bias_grad) {
            float *s = sums + (size_t)b * k;
            memset(s, 0, (size_t)k * sizeof *s);
            sum_rows_add(s, d, (size_t)rows, (size_t)k);
        }
        if (c)
            gemm_packed_panels(rows, n, k, d, k, packed, 0, panels_of(n), beta, c + (size_t)i0 * n,
                               n);
    }
    if (bias_grad)
        sum_rows_add(bias_grad, sums, (size_t)blocks, (size_t)k);
}
