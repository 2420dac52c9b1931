/* bfloat16 rounding of float arrays (backend/cpu/bf16.h). */
#include "backend/cpu/bf16.h"

/* Below this many values a parallel region costs more than the loop. */
#define BF16_PARALLEL_MIN 65536

void bf16_round_floats(float *dst, const float *src, size_t n)
{
#pragma omp parallel for simd schedule(static) if (parallel : n >= BF16_PARALLEL_MIN)
    for (size_t i = 0; i < n; i++)
        dst[i] = bf16_round(src[i]);
}

void bf16_pack(uint16_t *dst, const float *src, size_t n)
{
#pragma omp parallel for simd schedule(static) if (parallel : n >= BF16_PARALLEL_MIN)
    for (size_t i = 0; i < n; i++) {
        const float r = bf16_round(src[i]);
        uint32_t u;
        memcpy(&u, &r, sizeof u);
        dst[i] = (uint16_t)(u >> 16);
    }
}
