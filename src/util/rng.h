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

#endif
