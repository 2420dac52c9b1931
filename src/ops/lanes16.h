/* The AVX-512 mask of a loop's partial last vector: the first n of 16 float lanes. */
#ifndef CDL_LANES16_H
#define CDL_LANES16_H

#if defined(__AVX512F__)
#include <immintrin.h>

/* The first n of 16 lanes (n <= 0: none, n >= 16: all). */
static inline __mmask16 lanes16(long n)
{
    return n <= 0 ? 0 : n >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << n) - 1);
}
#endif

#endif
