/* The transpose of a 16 x 16 tile of floats in AVX-512 registers, for kernels that move
 * activations between NCHW and nhwc as they compute (the [shortcut]'s nhwc input, int8
 * convolutions' inputs and outputs), instead of a separate reorder. Empty without AVX-512. */
#ifndef CDL_TRANSPOSE16_H
#define CDL_TRANSPOSE16_H

#if defined(__AVX512F__)
#include <immintrin.h>

/* r[s] (lanes k) = r[k] (lanes s) before: the transpose of a 16 x 16 tile of floats, in registers,
 * through 32-bit, 64-bit, then two rounds of 128-bit interleaves. */
static inline void transpose16(__m512 r[16])
{
    __m512 t[16];
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 16; i += 4)
        for (int j = 0; j < 2; j++) {
            const __m512d lo = _mm512_castps_pd(t[i + j]), hi = _mm512_castps_pd(t[i + j + 2]);
            r[i + 2 * j] = _mm512_castpd_ps(_mm512_unpacklo_pd(lo, hi));
            r[i + 2 * j + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(lo, hi));
        }
    for (int h = 0; h < 16; h += 8)
        for (int i = h; i < h + 4; i++) {
            t[i] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0x88);
            t[i + 4] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0xdd);
        }
    for (int i = 0; i < 8; i++) {
        r[i] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0x88);
        r[i + 8] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0xdd);
    }
}
#endif

#endif
