/* The AVX-512 VNNI kernel of the int8 matrix product (backend/cpu/qgemm.h), compiled with
 * -mavx512f -mavx512bw -mavx512vnni (Makefile) and called only where qgemm_has_vnni().
 *
 * A block of up to 4 rows of a by up to 4 panels (64 columns) of the weights keeps its 16 sums
 * in registers: per group of 4 values of k, each row's 4 bytes are broadcast to every lane and
 * vpdpbusd adds, per lane (column) j, a[i][4K..4K+3] . w[j][4K..4K+3] into the sum.
 *
 * tests/unit/test_qgemm.c also compiles this file with the intrinsics emulated in C
 * (QGEMM_VNNI_EMULATED), so that its blocking is tested on CPUs without AVX-512 too. */
#include "backend/cpu/qgemm.h"

#ifndef QGEMM_VNNI_EMULATED
#include <immintrin.h>
#endif
#include <string.h>

enum { PANEL = 16, KGROUP = 4, BLOCK_ROWS = 4, BLOCK_PANELS = 4 };

/* c[rows][cols] for rows <= BLOCK_ROWS and cols <= BLOCK_PANELS * PANEL; constant counts let
 * the compiler keep acc in registers. */
static inline __attribute__((always_inline)) void block(int rows, int n_panels, int cols, int kp,
                                                        const uint8_t *a, int lda,
                                                        const int8_t *packed, int32_t *c, int ldc)
{
    __m512i acc[BLOCK_ROWS][BLOCK_PANELS];
    for (int r = 0; r < BLOCK_ROWS; r++)
        for (int p = 0; p < BLOCK_PANELS; p++)
            acc[r][p] = _mm512_setzero_si512();
    const size_t panel_bytes = (size_t)PANEL * kp;
    for (int g = 0; g < kp; g += KGROUP) {
        __m512i w[BLOCK_PANELS];
        for (int p = 0; p < n_panels; p++)
            w[p] = _mm512_loadu_si512(packed + p * panel_bytes + (size_t)g * PANEL);
        for (int r = 0; r < rows; r++) {
            int32_t four;
            memcpy(&four, a + (size_t)r * lda + g, sizeof four);
            const __m512i x = _mm512_set1_epi32(four);
            for (int p = 0; p < n_panels; p++)
                acc[r][p] = _mm512_dpbusd_epi32(acc[r][p], x, w[p]);
        }
    }
    for (int r = 0; r < rows; r++)
        for (int p = 0; p < n_panels; p++) {
            const int left = cols - p * PANEL;
            const __mmask16 mask = left >= PANEL ? 0xFFFF : (__mmask16)((1u << left) - 1);
            _mm512_mask_storeu_epi32(c + (size_t)r * ldc + p * PANEL, mask, acc[r][p]);
        }
}

void qgemm_s32_vnni(int m, int n, int k, const uint8_t *a, int lda, const int8_t *packed,
                    int32_t *c, int ldc)
{
    const int kp = qgemm_k_padded(k), step = BLOCK_PANELS * PANEL;
    for (int j0 = 0; j0 < n; j0 += step) {
        const int cols = n - j0 < step ? n - j0 : step;
        const int n_panels = (cols + PANEL - 1) / PANEL;
        const int8_t *p = packed + (size_t)j0 * kp;
        for (int i0 = 0; i0 < m; i0 += BLOCK_ROWS) {
            const int rows = m - i0 < BLOCK_ROWS ? m - i0 : BLOCK_ROWS;
            const uint8_t *ai = a + (size_t)i0 * lda;
            int32_t *ci = c + (size_t)i0 * ldc + j0;
            if (rows == BLOCK_ROWS && n_panels == BLOCK_PANELS)
                block(BLOCK_ROWS, BLOCK_PANELS, cols, kp, ai, lda, p, ci, ldc);
            else
                block(rows, n_panels, cols, kp, ai, lda, p, ci, ldc);
        }
    }
}
