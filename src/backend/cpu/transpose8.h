/* The transpose of an 8 x 8 tile of floats in AVX2 registers: transpose16.h's counterpart for
 * kernels that move activations between NCHW and nhwc as they compute (int8 convolutions' inputs
 * and outputs) on CPUs without AVX-512. Empty without AVX2. */
#ifndef CDL_TRANSPOSE8_H
#define CDL_TRANSPOSE8_H

#if defined(__AVX2__)
#include <immintrin.h>

/* r[s] (lanes k) = r[k] (lanes s) before: the transpose of an 8 x 8 tile of floats, in registers,
 * through 32-bit and 64-bit interleaves within 128-bit halves, then an exchange of halves. */
static inline void transpose8(__m256 r[8])
{
    __m256 t[8];
    for (int i = 0; i < 8; i += 2) {
        t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 8; i += 4)
        for (int j = 0; j < 2; j++) {
            const __m256d lo = _mm256_castps_pd(t[i + j]), hi = _mm256_castps_pd(t[i + j + 2]);
            r[i + 2 * j] = _mm256_castpd_ps(_mm256_unpacklo_pd(lo, hi));
            r[i + 2 * j + 1] = _mm256_castpd_ps(_mm256_unpackhi_pd(lo, hi));
        }
    for (int i = 0; i < 4; i++) {
        t[i] = _mm256_permute2f128_ps(r[i], r[i + 4], 0x20);
        t[i + 4] = _mm256_permute2f128_ps(r[i], r[i + 4], 0x31);
    }
    for (int i = 0; i < 8; i++)
        r[i] = t[i];
}
#endif

#endif
