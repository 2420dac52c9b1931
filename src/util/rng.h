/* Deterministic random numbers (PCG32): every draw in cdl comes from a seeded Rng. */
#ifndef CDL_RNG_H
#define CDL_RNG_H

#include <stdint.h>

typedef struct Rng {
    uint64_t state;
    uint64_t inc;
} Rng;

/* Seeds from a base seed and a stream id, so (seed, epoch) or (seed, step, layer)
 * give independent, reproducible sequences without saving generator state. */
void rng_seed(Rng *r, uint64_t seed, uint64_t stream);
uint32_t rng_u32(Rng *r);
/* Uniform in [0, 1). */
float rng_uniform(Rng *r);
/* Standard normal (Box-Muller). */
float rng_normal(Rng *r);
/* Uniform integer in [0, n). */
uint32_t rng_below(Rng *r, uint32_t n);
/* Fisher-Yates shuffle of idx[0..n). */
void rng_shuffle(Rng *r, int *idx, int n);

/* Counter-based draws for parallel loops (dropout masks): rng_key(seed, stream) gives a
 * 64-bit key, and draw i of that key is computed directly from i, so a loop split over any
 * number of threads draws the same values. */
uint64_t rng_key(uint64_t seed, uint64_t stream);

/* Output i of SplitMix64 (Steele, Lea, Flood 2014) seeded with key: a strong 64-bit mix of
 * key + (i+1) * golden ratio. */
static inline uint64_t rng_splitmix64(uint64_t key, uint64_t i)
{
    uint64_t z = key + (i + 1) * 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Draw i of key, uniform in [0, 1). */
static inline float rng_uniform_at(uint64_t key, uint64_t i)
{
    return (float)(rng_splitmix64(key, i) >> 40) * (1.0f / 16777216.0f);
}

#endif
