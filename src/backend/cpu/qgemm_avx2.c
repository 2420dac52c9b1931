/* The AVX2 kernel of the int8 matrix product (backend/cpu/qgemm.h), for CPUs without AVX-512 VNNI;
 * compiled with -mavx2 (Makefile) and called only where qgemm_has_avx2().
 *
 * Exact like the others, so it widens to int16 and multiplies with vpmaddwd (two products a lane,
 * each at most 255 * 128) rather than vpmaddubsw, whose int16 pair sums saturate on 8-bit inputs
 * (fbgemm's reason for 7-bit activations). Per group of 4 values of k, a panel's 64 weights are
 * 4 chunks of 4 columns; each becomes 16 int16 that meet the row's 4 values, broadcast, in one
 * vpmaddwd: lanes 2c and 2c+1 hold column c's two partial sums, added pairwise at the end. A
 * block is 2 rows by one panel: 8 sums, 4 weight chunks and the input in 13 registers. */
#include "backend/cpu/qgemm.h"

#include <immintrin.h>
#include <string.h>

enum { PANEL = 16, KGROUP = 4, CHUNKS = 4, BLOCK_ROWS = 2 };

/* The row's 4 values at a, zero-extended to int16 and repeated in every 64-bit lane. */
static inline __m256i broadcast_four(const uint8_t *a)
{
    int32_t four;
    memcpy(&four, a, sizeof four);
    return _mm256_broadcastq_epi64(_mm_cvtepu8_epi16(_mm_cvtsi32_si128(four)));
}

/* Columns 0..7 of a panel from the sums of chunks 0 and 1 (or 8..15 from chunks 2 and 3). */
static inline __m256i column_sums(__m256i lo, __m256i hi)
{
    /* hadd: [c0 c1 c4 c5 | c2 c3 c6 c7]; then the 64-bit lanes in order 0, 2, 1, 3. */
    return _mm256_permute4x64_epi64(_mm256_hadd_epi32(lo, hi), 0xD8);
}

static inline __attribute__((always_inline)) void block(int rows, int cols, int kp,
                                                        const uint8_t *a, int lda,
                                                        const int8_t *panel, int32_t *c, int ldc)
{
    __m256i acc[BLOCK_ROWS][CHUNKS];
    for (int r = 0; r < BLOCK_ROWS; r++)
        for (int q = 0; q < CHUNKS; q++)
            acc[r][q] = _mm256_setzero_si256();
    for (int g = 0; g < kp; g += KGROUP) {
        const int8_t *wg = panel + (size_t)g * PANEL;
        __m256i w[CHUNKS];
        for (int q = 0; q < CHUNKS; q++)
            w[q] = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(wg + 16 * q)));
        for (int r = 0; r < rows; r++) {
            const __m256i x = broadcast_four(a + (size_t)r * lda + g);
            for (int q = 0; q < CHUNKS; q++)
                acc[r][q] = _mm256_add_epi32(acc[r][q], _mm256_madd_epi16(w[q], x));
        }
    }
    for (int r = 0; r < rows; r++) {
        int32_t sums[PANEL];
        _mm256_storeu_si256((__m256i *)sums, column_sums(acc[r][0], acc[r][1]));
        _mm256_storeu_si256((__m256i *)(sums + 8), column_sums(acc[r][2], acc[r][3]));
        memcpy(c + (size_t)r * ldc, sums, (size_t)cols * sizeof *sums);
    }
}

void qgemm_s32_avx2(int m, int n, int k, const uint8_t *a, int lda, const int8_t *packed,
                    int32_t *c, int ldc)
{
    const int kp = qgemm_k_padded(k);
    for (int j0 = 0; j0 < n; j0 += PANEL) {
        const int cols = n - j0 < PANEL ? n - j0 : PANEL;
        const int8_t *panel = packed + (size_t)j0 * kp;
        for (int i0 = 0; i0 < m; i0 += BLOCK_ROWS) {
            const uint8_t *ai = a + (size_t)i0 * lda;
            int32_t *ci = c + (size_t)i0 * ldc + j0;
            if (m - i0 >= BLOCK_ROWS)
                block(BLOCK_ROWS, cols, kp, ai, lda, panel, ci, ldc);
            else
                block(m - i0, cols, kp, ai, lda, panel, ci, ldc);
        }
    }
}
