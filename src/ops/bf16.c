/* bfloat16 rounding of float arrays (ops/bf16.h). */
#include "ops/bf16.h"

/* Below this many values a parallel region costs more than the loop. */
#define BF16_PARALLEL_MIN 65536

void bf16_round_floats(float *dst, const float *src, size_t n)
{
#pragma omp parallel for simd schedule(static) if (n >= BF16_PARALLEL_MIN)
    for (size_t i = 0; i < n; i++)
        dst[i] = bf16_round(src[i]);
}
