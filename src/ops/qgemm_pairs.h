/* The int8 product of a quantized convolution in its own layout: weights times the im2col
 * columns, output channels by positions, without transposing either side. Both operands are
 * widened to int16 pairs of consecutive k, so that one vpmaddwd lane (AVX2) sums two exact
 * products; every value keeps its 8 bits (uint8 codes, int8 weights) and nothing saturates.
 *
 *   x      [k][ldx] floats, m columns (positions) used: the input, quantized on the grid xq by
 *          qgemm_pairs_quantize into panels of 16 positions,
 *          xp[m_pad/16][k_pad/2][16][2] int16, xp[J][K][i][t] = code(x[2K + t][16J + i]),
 *          zero pad (k_pad = k rounded up to even, m_pad = m rounded up to 16)
 *   w      [n][k] int8, packed once by qgemm_pairs_pack as wp[n][k_pad] int16, zero pad
 *   c      [n][ldc] int32, c[j][i] = sum_k w[j][k] * code(x[k][i]), exact
 *          (|c| <= k * 255 * 128 < 2^31 for k <= QGEMM_MAX_K)
 *
 * The C kernel and the AVX2 kernel give the same, exact, result; so do the two quantizers. */
#ifndef CDL_OPS_QGEMM_PAIRS_H
#define CDL_OPS_QGEMM_PAIRS_H

#include <stddef.h>
#include <stdint.h>

#include "ops/quantize.h"

/* k rounded up to even: the int16 values of a packed weight row. */
static inline int qgemm_pairs_k(int k)
{
    return (k + 1) & ~1;
}
/* Bytes of qgemm_pairs_pack's wp for n rows of k values. */
size_t qgemm_pairs_weight_bytes(int n, int k);
/* Bytes of qgemm_pairs_quantize's xp for m positions of k values. */
size_t qgemm_pairs_input_bytes(int m, int k);

/* wp = w [n][k] as int16 rows of qgemm_pairs_k(k) values (see above). */
void qgemm_pairs_pack(const int8_t *w, int n, int k, int16_t *wp);

/* xp = the codes of x [k][ldx] (m columns) on the grid xq, in panels (see above): on AVX2
 * where the CPU has it, else in C; qgemm_pairs_quantize_scalar and _avx2 are the two. */
void qgemm_pairs_quantize(const float *x, int ldx, int m, int k, QuantParams xq, int16_t *xp);
void qgemm_pairs_quantize_scalar(const float *x, int ldx, int m, int k, QuantParams xq,
                                 int16_t *xp);
void qgemm_pairs_quantize_avx2(const float *x, int ldx, int m, int k, QuantParams xq, int16_t *xp);

/* c[n][ldc] = wp * xp (see above), on AVX2 where the CPU has it, else in C; threaded over
 * blocks of positions when large and not already inside a parallel region. */
void qgemm_pairs_s32(int m, int n, int k, const int16_t *xp, const int16_t *wp, int32_t *c,
                     int ldc);
/* The same product by one kernel, over positions [i0, i1) (i0 a multiple of 16) of c. */
void qgemm_pairs_s32_scalar(int i0, int i1, int n, int k, const int16_t *xp, const int16_t *wp,
                            int32_t *c, int ldc);
void qgemm_pairs_s32_avx2(int i0, int i1, int n, int k, const int16_t *xp, const int16_t *wp,
                          int32_t *c, int ldc);

#endif
