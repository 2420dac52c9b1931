/* The AVX2 quantizer and kernel of the convolution's int8 product (ops/qgemm_pairs.h),
 * compiled with -mavx2 (Makefile) and called only where qgemm_has_avx2().
 *
 * Kernel: a block is up to 6 output channels by one panel of 16 positions, 12 sums of 8 lanes
 * in registers. Per pair K of k, the panel's 16 position pairs are two loads, each channel's
 * two weights one 32-bit broadcast, and vpmaddwd adds w[j][2K] * x[2K][i] + w[j][2K+1] *
 * x[2K+1][i] into lane i: 12 vpmaddwd for 192 multiply-adds, no reduction across lanes. */
#include "ops/qgemm_pairs.h"

#include <immintrin.h>
#include <string.h>

enum { PANEL = 16, BLOCK_CHANNELS = 6 };

/* The codes of 8 floats (quantize_code's steps, in its order), as int32. */
static inline __m256i codes8(const float *x, __m256 inv, __m256 zero_point)
{
    __m256 v = _mm256_mul_ps(_mm256_loadu_ps(x), inv);
    v = _mm256_add_ps(v, zero_point);
    v = _mm256_min_ps(_mm256_max_ps(v, _mm256_setzero_ps()), _mm256_set1_ps(255.0f));
    return _mm256_cvtps_epi32(_mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}

void qgemm_pairs_quantize_avx2(const float *x, int ldx, int m, int k, QuantParams xq, int16_t *xp)
{
    const int pairs = qgemm_pairs_k(k) / 2, full = m / PANEL;
    const float inv_scale = 1.0f / xq.scale;
    const __m256 inv = _mm256_set1_ps(inv_scale), zp = _mm256_set1_ps((float)xq.zero_point);
    for (int K = 0; K < pairs; K++) {
        const float *r0 = x + (size_t)(2 * K) * ldx;
        const float *r1 = 2 * K + 1 < k ? r0 + ldx : NULL;
        for (int p = 0; p < full; p++) {
            int16_t *dst = xp + ((size_t)p * pairs + K) * PANEL * 2;
            for (int h = 0; h < PANEL; h += 8) {
                const __m256i lo = codes8(r0 + p * PANEL + h, inv, zp);
                /* Codes are 0..255: the pair (lo, hi) is lo | hi << 16 in one 32-bit lane. */
                const __m256i hi = r1 ? _mm256_slli_epi32(codes8(r1 + p * PANEL + h, inv, zp), 16)
                                      : _mm256_setzero_si256();
                _mm256_storeu_si256((__m256i *)(dst + 2 * h), _mm256_or_si256(lo, hi));
            }
        }
        if (full * PANEL < m) { /* the last, partial panel */
            int16_t *dst = xp + ((size_t)full * pairs + K) * PANEL * 2;
            memset(dst, 0, PANEL * 2 * sizeof *dst);
            for (int i = 0; full * PANEL + i < m; i++) {
                dst[2 * i] = (int16_t)quantize_code(r0[full * PANEL + i], inv_scale, xq.zero_point);
                if (r1)
                    dst[2 * i + 1] =
                        (int16_t)quantize_code(r1[full * PANEL + i], inv_scale, xq.zero_point);
            }
        }
    }
}

/* c[channels][cols] of one panel, channels <= BLOCK_CHANNELS, cols <= PANEL; a constant count
 * lets the compiler keep acc in registers. */
static inline __attribute__((always_inline)) void block(int channels, int cols, int pairs,
                                                        const int16_t *panel, const int16_t *w,
                                                        int kp, int32_t *c, int ldc)
{
    __m256i acc[BLOCK_CHANNELS][2];
    for (int j = 0; j < BLOCK_CHANNELS; j++)
        acc[j][0] = acc[j][1] = _mm256_setzero_si256();
    for (int K = 0; K < pairs; K++) {
        const __m256i x0 = _mm256_loadu_si256((const __m256i *)(panel + (size_t)K * PANEL * 2));
        const __m256i x1 =
            _mm256_loadu_si256((const __m256i *)(panel + (size_t)K * PANEL * 2 + PANEL));
        for (int j = 0; j < channels; j++) {
            int32_t two;
            memcpy(&two, w + (size_t)j * kp + 2 * K, sizeof two);
            const __m256i wv = _mm256_set1_epi32(two);
            acc[j][0] = _mm256_add_epi32(acc[j][0], _mm256_madd_epi16(x0, wv));
            acc[j][1] = _mm256_add_epi32(acc[j][1], _mm256_madd_epi16(x1, wv));
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

void qgemm_pairs_s32_avx2(int i0, int i1, int n, int k, const int16_t *xp, const int16_t *wp,
                          int32_t *c, int ldc)
{
    const int kp = qgemm_pairs_k(k), pairs = kp / 2;
    for (int i = i0; i < i1; i += PANEL) {
        const int cols = i1 - i < PANEL ? i1 - i : PANEL;
        const int16_t *panel = xp + (size_t)(i / PANEL) * pairs * PANEL * 2;
        for (int j = 0; j < n; j += BLOCK_CHANNELS) {
            const int16_t *w = wp + (size_t)j * kp;
            int32_t *cj = c + (size_t)j * ldc + i;
            if (n - j >= BLOCK_CHANNELS)
                block(BLOCK_CHANNELS, cols, pairs, panel, w, kp, cj, ldc);
            else
                block(n - j, cols, pairs, panel, w, kp, cj, ldc);
        }
    }
}
