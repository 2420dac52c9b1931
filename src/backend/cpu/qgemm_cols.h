/* The int8 product of a quantized convolution in its own layout: weights times the im2col
 * columns, output channels by positions, without transposing either side. The AVX2 kernel
 * multiplies uint8 codes by int8 weights with vpmaddubsw, whose int16 sums of two products
 * cannot saturate here: codes are 7-bit (backend/cpu/quantize.h), so |a1 w1 + a2 w2| <= 2 * 127 *
 * 128 = 32512 < 2^15.
 *
 *   x      [k][ldx] floats, m columns (positions) used: the input, quantized on the grid xq by
 *          qgemm_cols_quantize into panels of 16 positions by groups of 4 values of k,
 *          xp[m_pad/16][k_pad/4][16][4] uint8, xp[J][K][i][t] = code(x[4K + t][16J + i]),
 *          zero pad (k_pad = qgemm_k_padded(k), m_pad = m rounded up to 16)
 *   w      [n][k] int8, packed once by qgemm_cols_pack as wp[n][k_pad], zero pad
 *   c      [n][ldc] int32, c[j][i] = sum_k w[j][k] * code(x[k][i]), exact
 *          (|c| <= k * 127 * 128 < 2^31 for k <= QGEMM_MAX_K)
 *
 * The C kernel and the AVX2 kernel give the same, exact, result; so do the two quantizers. */
#ifndef CDL_OPS_QGEMM_COLS_H
#define CDL_OPS_QGEMM_COLS_H

#include <stddef.h>
#include <stdint.h>

#include "backend/cpu/quantize.h"

/* Bytes of qgemm_cols_pack's wp for n rows of k values. */
size_t qgemm_cols_weight_bytes(int n, int k);
/* Bytes of qgemm_cols_quantize's xp for m positions of k values. */
size_t qgemm_cols_input_bytes(int m, int k);

/* wp = w [n][k] in rows of qgemm_k_padded(k) values (see above). */
void qgemm_cols_pack(const int8_t *w, int n, int k, int8_t *wp);

/* xp = the codes of x [k][ldx] (m columns) on the grid xq, in panels (see above): on AVX2
 * where the CPU has it, else in C; qgemm_cols_quantize_scalar and _avx2 are the two. */
void qgemm_cols_quantize(const float *x, int ldx, int m, int k, QuantParams xq, uint8_t *xp);
void qgemm_cols_quantize_scalar(const float *x, int ldx, int m, int k, QuantParams xq, uint8_t *xp);
void qgemm_cols_quantize_avx2(const float *x, int ldx, int m, int k, QuantParams xq, uint8_t *xp);

/* c[n][ldc] = wp * xp (see above), on AVX2 where the CPU has it, else in C; threaded over
 * blocks of positions when large and not already inside a parallel region. */
void qgemm_cols_s32(int m, int n, int k, const uint8_t *xp, const int8_t *wp, int32_t *c, int ldc);
/* The same product by one kernel, over positions [i0, i1) (i0 a multiple of 16) of c. */
void qgemm_cols_s32_scalar(int i0, int i1, int n, int k, const uint8_t *xp, const int8_t *wp,
                           int32_t *c, int ldc);
void qgemm_cols_s32_avx2(int i0, int i1, int n, int k, const uint8_t *xp, const int8_t *wp,
                         int32_t *c, int ldc);

#endif
