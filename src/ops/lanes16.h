/* The mask of a loop's partial last vector: the first n of 16 float lanes (AVX-512), or of 8
 * (AVX2, a vector mask for _mm256_maskload_ps / _mm256_maskstore_ps). */
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
#endif

#endif
