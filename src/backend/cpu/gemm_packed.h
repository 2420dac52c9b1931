/* Matrix products against a pre-packed right operand, for many products with few rows by the
 * same matrix: a recurrent layer's per-step h_{t-1} W_hh^T (OpenBLAS repacks W_hh on every
 * call, which at batch-sized rows costs as much as the multiply-adds). */
#ifndef CDL_GEMM_PACKED_H
#define CDL_GEMM_PACKED_H

#include <stddef.h>

/* Columns per panel of a packed operand. */
#define GEMM_PACKED_PANEL 16

/* Floats that gemm_pack writes for a [k][n] operand: n rounded up to whole panels, times k. */
size_t gemm_packed_floats(int k, int n);

/* packed = op(B) [k][n] in panels of GEMM_PACKED_PANEL columns, each [k][PANEL] row-major, the
 * last one padded with zeros: op(B) is B [k][ldb] or, with trans_b, B^T for B [n][ldb]. */
void gemm_pack(int trans_b, int k, int n, const float *b, int ldb, float *packed);

/* gemm_pack of op(B) [k][n] into rows k0..k0+k of a packed operand of k_total rows (panels of
 * [k_total][PANEL]): a product over stacked operands, such as [W_ih | W_hh]^T, packed from each
 * part; the calling thread packs alone. gemm_pack is k0 = 0, k_total = k. */
void gemm_pack_rows(int trans_b, int k, int n, const float *b, int ldb, int k0, int k_total,
                    float *packed);

/* C[m][n] = A[m][k] op(B) + beta C, beta 0 (C's old contents ignored) or 1, op(B) as gemm_pack
 * packed it; row-major A and C with row strides lda and ldc. Every element of C sums its k
 * products in order k = 0, 1, ..., so the result does not depend on the thread count (large
 * products split their panels over the OpenMP threads). */
void gemm_packed(int m, int n, int k, const float *a, int lda, const float *packed, float beta,
                 float *c, int ldc);

/* gemm_packed's panels p0..p1-1 alone, the columns [p0 * PANEL, min(n, p1 * PANEL)) of C (c and
 * packed still point at column 0), on the calling thread: for a caller that splits the panels of
 * its products over the threads of its own parallel region. */
void gemm_packed_panels(int m, int n, int k, const float *a, int lda, const float *packed, int p0,
                        int p1, float beta, float *c, int ldc);

/* Two whole panels bp0 and bp1 (each [k][PANEL], as gemm_pack lays out a panel; of one packed
 * operand or of two) in one pass over A: c0[m][0..PANEL) = A bp0 + beta c0 and c1 likewise from
 * bp1, both with row stride ldc, the sums as gemm_packed's. For a caller whose panels' outputs
 * lie apart (the fused lstm's gate tiles); AVX-512 runs the two together, which loads each
 * element of A once for two FMAs. */
void gemm_packed_two_panels(int m, int k, const float *a, int lda, const float *bp0,
                            const float *bp1, float beta, float *c0, float *c1, int ldc);

#endif
