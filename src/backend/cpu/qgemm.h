/* The int8 matrix product of quantized layers: uint8 activations times int8 weights summed in
 * int32, on AVX-512 VNNI (vpdpbusd) when the CPU has it, else AVX2 (vpmaddwd), else portable C;
 * and the float
 * product built on it, which quantizes its input and dequantizes its output.
 *
 *   a      [m][lda] uint8, k values used per row (lda >= qgemm_k_padded(k); the pad is ignored)
 *   w      [n][k] int8 weights, packed once by qgemm_pack into 16-column panels:
 *          packed[n_pad/16][k_pad/4][16][4], packed[J][K][j][t] = w[16J + j][4K + t], zero pad
 *   c      [m][ldc] int32, c[i][j] = sum_k a[i][k] * w[j][k], exact (no saturation: each sum
 *          of 4 products is at most 4 * 255 * 127, and k <= QGEMM_MAX_K keeps c in int32)
 *
 * Every kernel gives the same, exact, result. */
#ifndef CDL_OPS_QGEMM_H
#define CDL_OPS_QGEMM_H

#include <stddef.h>
#include <stdint.h>

#include "backend/cpu/quantize.h"

/* |c| <= k * 255 * 128 < 2^31. */
#define QGEMM_MAX_K 65536

/* Values per packed row: k rounded up to a multiple of 4. */
static inline int qgemm_k_padded(int k)
{
    return (k + 3) & ~3;
}
/* Bytes of qgemm_pack's panels for n rows of k values. */
size_t qgemm_packed_bytes(int n, int k);
/* packed = w [n][k] in panels (see above); row_sums[j] = sum_k w[j][k]. */
void qgemm_pack(const int8_t *w, int n, int k, int8_t *packed, int32_t *row_sums);

/* c[m][n] = a * w^T (see above), on the best kernel this CPU has (threaded when large). */
void qgemm_s32(int m, int n, int k, const uint8_t *a, int lda, const int8_t *packed, int32_t *c,
               int ldc);
/* The same product by one kernel: portable C, AVX-512 VNNI (only where qgemm_has_vnni()) or
 * AVX2 (only where qgemm_has_avx2()). */
void qgemm_s32_scalar(int m, int n, int k, const uint8_t *a, int lda, const int8_t *packed,
                      int32_t *c, int ldc);
void qgemm_s32_vnni(int m, int n, int k, const uint8_t *a, int lda, const int8_t *packed,
                    int32_t *c, int ldc);
void qgemm_s32_avx2(int m, int n, int k, const uint8_t *a, int lda, const int8_t *packed,
                    int32_t *c, int ldc);
/* 1 when the CPU runs qgemm_s32_vnni (avx512f, avx512bw, avx512vnni). */
int qgemm_has_vnni(void);
/* 1 when the CPU runs qgemm_s32_avx2. */
int qgemm_has_avx2(void);
/* The kernel qgemm_s32 runs on this CPU: "avx512_vnni", "avx2" or "c". */
const char *qgemm_kernel_name(void);

/* A weight matrix ready for qgemm: n output channels of k values. */
typedef struct QMatrix {
    int n, k;
    const int8_t *packed;    /* [qgemm_packed_bytes(n, k)] */
    const int32_t *row_sums; /* [n] */
    const int8_t *padded;    /* [qgemm_cols_weight_bytes(n, k)]: qgemm_cols_pack's rows */
    const float *scales;     /* [n]: w[j][k] ~ scales[j] * q[j][k] */
} QMatrix;

/* How a matrix of m rows by k columns is stored: row-major ([m][ld]) or column-major
 * ([k][ld], the im2col layout of a convolution, whose rows are output positions). */
typedef enum QLayout { QGEMM_ROWS, QGEMM_COLS } QLayout;

/* Bytes of qgemm_float's work for m rows. */
size_t qgemm_work_bytes(int m, int n, int k);
/* y[m][n] ~ x[m][k] * W^T: x quantized on the grid xq, multiplied in int8, then
 *   y[i][j] = xq.scale * w->scales[j] * (c[i][j] - xq.zero_point * w->row_sums[j]).
 * Columns x (a convolution's) go through backend/cpu/qgemm_cols.h where the CPU lacks AVX-512 VNNI;
 * the rest through qgemm_s32.
 * x and y are stored as x_layout and y_layout say (strides ldx, ldy); work holds
 * qgemm_work_bytes(m, w->n, w->k) bytes. */
void qgemm_float(const QMatrix *w, QuantParams xq, int m, const float *x, int ldx, QLayout x_layout,
                 float *y, int ldy, QLayout y_layout, void *work);

#endif
