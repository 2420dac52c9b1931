/* PCG32 (O'Neill, pcg-random.org, XSH-RR variant). */
#include "util/rng.h"

#include <math.h>

void rng_seed(Rng *r, uint64_t seed, uint64_t stream)
{
    r->state = 0;
    r->inc = (stream << 1u) | 1u;
    rng_u32(r);
    r->state += seed;
    rng_u32(r);
}

uint32_t rng_u32(Rng *r)
{
    uint64_t old = r->state;
    r->state = old * 6364136223846793005ULL + r->inc;
    uint32_t xorshifted = (uint32_t)(((old >> 18u) ^ old) >> 27u);
    uint32_t rot = (uint32_t)(old >> 59u);
    return (xorshifted >> rot) | (xorshifted << ((-rot) & 31));
}

float rng_uniform(Rng *r)
{
    return (float)(rng_u32(r) >> 8) * (1.0f / 16777216.0f);
}

float rng_normal(Rng *r)
{
    float u1 = ((float)(rng_u32(r) >> 8) + 1.0f) * (1.0f / 16777217.0f);
    float u2 = rng_uniform(r);
    return sqrtf(-2.0f * logf(u1)) * cosf(6.2831853071795864f * u2);
}

uint32_t rng_below(Rng *r, uint32_t n)
{
    return (uint32_t)(((uint64_t)rng_u32(r) * n) >> 32);
}

void rng_shuffle(Rng *r, int *idx, int n)
{
    for (int i = n - 1; i > 0; i--) {
        int j = (int)rng_below(r, (uint32_t)i + 1);
        int t = idx[i];
        idx[i] = idx[j];
        idx[j] = t;
    }
}

uint64_t rng_key(uint64_t seed, uint64_t stream)
{
    Rng r;
    rng_seed(&r, seed, stream);
    uint64_t high = rng_u32(&r);
    return high << 32 | rng_u32(&r);
}
