/* The mask of a loop's partial last vector: the first n of 16 float lanes (AVX-512), or of 8
 * (AVX2, a vector mask for _mm256_maskload_ps / _mm256_maskstore_ps); with AVX2 also the store of
 * such a vector's first lanes and the sum of a vector's lanes. */
#ifndef CDL_LANES16_H
#define CDL_LANES16_H

#if defined(__AVX512F__)
#include <immintrin.h>

/* The first n of 16 lanes (n <= 0: none, n >= 16: all). */
static inline __mmask16 lanes16(long n)
{
    return n <= 0 ? 0 : n >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << n) - 1);
}
#elif defined(__AVX2__)
#include <immintrin.h>

/* The first n of 8 lanes (n <= 0: none, n >= 8: all): each lane's sign bit. */
static inline __m256i lanes8(long n)
{
    const int count = n <= 0 ? 0 : n >= 8 ? 8 : (int)n;
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(count), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* p[0..n) = lanes 0..n-1 of v, 0 <= n < 8: by 4, 2 and 1 floats (a masked store costs several
 * plain ones on Zen 3, and gcc makes a call to memcpy of a loop over the lanes). */
static inline void store_first8(float *p, __m256 v, long n)
{
    __m128 part = _mm256_castps256_ps128(v);
    if (n >= 4) {
        _mm_storeu_ps(p, part);
        part = _mm256_extractf128_ps(v, 1);
        p += 4, n -= 4;
    }
    if (n >= 2) {
        _mm_storel_pi((__m64 *)p, part);
        part = _mm_movehl_ps(part, part);
        p += 2, n -= 2;
    }
    if (n)
        _mm_store_ss(p, part);
}

/* The 8 lanes of v added in a fixed order: the halves, then pairs, then the last two. */
static inline float sum8(__m256 v)
{
    __m128 h = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    h = _mm_add_ps(h, _mm_movehl_ps(h, h));
    return _mm_cvtss_f32(_mm_add_ss(h, _mm_movehdup_ps(h)));
}
#endif

#endif
