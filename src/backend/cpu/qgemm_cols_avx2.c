/* The AVX2 quantizer and kernel of the convolution's int8 product (backend/cpu/qgemm_cols.h),
 * compiled with -mavx2 (Makefile) and called only where qgemm_has_avx2().
 *
 * Kernel: a block is up to 4 output channels by one panel of 16 positions, two vectors of 8
 * int32 sums per channel in registers (4 channels measured faster than 5 or 6 here, and divide
 * the usual channel counts). Per group K of 4 values of k, the panel's
 * 16 positions are two loads of 8 x 4 codes, each channel's 4 weights one 32-bit broadcast;
 * vpmaddubsw gives, per position, two int16 sums of two products (exact: 7-bit codes), and
 * vpmaddwd by ones adds them into int32: 3 instructions for 32 multiply-adds. */
#include "backend/cpu/qgemm_cols.h"

#include <immintrin.h>
#include <string.h>

#include "backend/cpu/qgemm.h"

enum { PANEL = 16, KGROUP = 4, BLOCK_CHANNELS = 4 };

/* The codes of 8 floats (quantize_code's steps, in its order), as int32. */
static inline __m256i codes8(const float *x, __m256 inv, __m256 zero_point)
{
    __m256 v = _mm256_mul_ps(_mm256_loadu_ps(x), inv);
    v = _mm256_add_ps(v, zero_point);
    v = _mm256_min_ps(_mm256_max_ps(v, _mm256_setzero_ps()), _mm256_set1_ps(QUANT_CODE_MAX));
    return _mm256_cvtps_epi32(_mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}

void qgemm_cols_quantize_avx2(const float *x, int ldx, int m, int k, QuantParams xq, uint8_t *xp)
{
    const int groups = qgemm_k_padded(k) / KGROUP, full = m / PANEL;
    const float inv_scale = 1.0f / xq.scale;
    const __m256 inv = _mm256_set1_ps(inv_scale), zp = _mm256_set1_ps((float)xq.zero_point);
    for (int K = 0; K < groups; K++) {
        const float *rows[KGROUP]; /* NULL past k: zero codes */
        for (int t = 0; t < KGROUP; t++)
            rows[t] = KGROUP * K + t < k ? x + (size_t)(KGROUP * K + t) * ldx : NULL;
        for (int p = 0; p < full; p++) {
            uint8_t *dst = xp + ((size_t)p * groups + K) * PANEL * KGROUP;
            for (int h = 0; h < PANEL; h += 8) {
                /* Codes are 0..127: position i's 4 codes are one 32-bit lane, code t in byte t. */
                __m256i four = _mm256_setzero_si256();
                for (int t = 0; t < KGROUP; t++)
                    if (rows[t])
                        four = _mm256_or_si256(
                            four,
                            _mm256_slli_epi32(codes8(rows[t] + p * PANEL + h, inv, zp), 8 * t));
                _mm256_storeu_si256((__m256i *)(dst + KGROUP * h), four);
            }
        }
        if (full * PANEL < m) { /* the last, partial panel */
            uint8_t *dst = xp + ((size_t)full * groups + K) * PANEL * KGROUP;
            memset(dst, 0, PANEL * KGROUP);
            for (int i = 0; full * PANEL + i < m; i++)
                for (int t = 0; t < KGROUP; t++)
                    if (rows[t])
                        dst[KGROUP * i + t] = (uint8_t)quantize_code(rows[t][full * PANEL + i],
                                                                     inv_scale, xq.zero_point);
        }
    }
}

/* c[channels][cols] of one panel, channels <= BLOCK_CHANNELS, cols <= PANEL; a constant count
 * lets the compiler keep acc in registers. */
static inline __attribute__((always_inline)) void
block(int channels, int cols, int kp, const uint8_t *panel, const int8_t *w, int32_t *c, int ldc)
{
    const __m256i ones = _mm256_set1_epi16(1);
    __m256i acc[BLOCK_CHANNELS][2];
    for (int j = 0; j < BLOCK_CHANNELS; j++)
        acc[j][0] = acc[j][1] = _mm256_setzero_si256();
    for (int g = 0; g < kp; g += KGROUP) {
        const __m256i x0 = _mm256_loadu_si256((const __m256i *)(panel + (size_t)g * PANEL));
        const __m256i x1 =
            _mm256_loadu_si256((const __m256i *)(panel + (size_t)g * PANEL + 8 * KGROUP));
        for (int j = 0; j < channels; j++) {
            int32_t four;
            memcpy(&four, w + (size_t)j * kp + g, sizeof four);
            const __m256i wv = _mm256_set1_epi32(four);
            acc[j][0] =
                _mm256_add_epi32(acc[j][0], _mm256_madd_epi16(_mm256_maddubs_epi16(x0, wv), ones));
            acc[j][1] =
                _mm256_add_epi32(acc[j][1], _mm256_madd_epi16(_mm256_maddubs_epi16(x1, wv), ones));
        }
    }
    for (int j = 0; j < channels; j++) {
        int32_t *row = c + (size_t)j * ldc;
        if (cols == PANEL) {
            _mm256_storeu_si256((__m256i *)row, acc[j][0]);
            _mm256_storeu_si256((__m256i *)(row + 8), acc[j][1]);
        } else {
            int32_t sums[PANEL];
            _mm256_storeu_si256((__m256i *)sums, acc[j][0]);
            _mm256_storeu_si256((__m256i *)(sums + 8), acc[j][1]);
            memcpy(row, sums, (size_t)cols * sizeof *sums);
        }
    }
}

void qgemm_cols_s32_avx2(int i0, int i1, int n, int k, const uint8_t *xp, const int8_t *wp,
                         int32_t *c, int ldc)
{
    const int kp = qgemm_k_padded(k);
    for (int i = i0; i < i1; i += PANEL) {
        const int cols = i1 - i < PANEL ? i1 - i : PANEL;
        const uint8_t *panel = xp + (size_t)(i / PANEL) * PANEL * kp;
        for (int j = 0; j < n; j += BLOCK_CHANNELS) {
            const int8_t *w = wp + (size_t)j * kp;
            int32_t *cj = c + (size_t)j * ldc + i;
            if (n - j >= BLOCK_CHANNELS)
                block(BLOCK_CHANNELS, cols, kp, panel, w, cj, ldc);
            else
                block(n - j, cols, kp, panel, w, cj, ldc);
        }
    }
}
