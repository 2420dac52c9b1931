// util/rng's draws on the device, bit for bit: the counter-based SplitMix64 of rng_uniform_at
// (dropout's masks) and PCG32's rng_seed, rng_u32 and rng_below (crop's windows, one stream per
// sample), so that a pass draws on the GPU what it draws on the CPU. The keys (rng_key) are
// computed on the host, from the seed and the layer's stream, and passed by value, except in a
// step captured as a CUDA graph, whose draw id is read on the device (rng_key_dev).
#ifndef CDL_CUDA_RNG_CUH
#define CDL_CUDA_RNG_CUH

#include <stdint.h>

#include "launch.h"

// rng_splitmix64: output i of SplitMix64 seeded with key.
__device__ __forceinline__ uint64_t rng_splitmix64_dev(uint64_t key, uint64_t i)
{
    uint64_t z = key + (i + 1) * 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

// rng_uniform_at: draw i of key, uniform in [0, 1).
__device__ __forceinline__ float rng_uniform_at_dev(uint64_t key, uint64_t i)
{
    return (float)(rng_splitmix64_dev(key, i) >> 40) * (1.0f / 16777216.0f);
}

// Rng's state (util/rng.h).
struct RngDev {
    uint64_t state, inc;
};

// rng_u32: PCG32, XSH-RR.
__device__ __forceinline__ uint32_t rng_u32_dev(RngDev *r)
{
    const uint64_t old = r->state;
    r->state = old * 6364136223846793005ULL + r->inc;
    const uint32_t xorshifted = (uint32_t)(((old >> 18u) ^ old) >> 27u);
    const uint32_t rot = (uint32_t)(old >> 59u);
    return (xorshifted >> rot) | (xorshifted << ((-rot) & 31));
}

// rng_seed.
__device__ __forceinline__ RngDev rng_seed_dev(uint64_t seed, uint64_t stream)
{
    RngDev r = {0, (stream << 1u) | 1u};
    rng_u32_dev(&r);
    r.state += seed;
    rng_u32_dev(&r);
    return r;
}

// rng_key.
__device__ __forceinline__ uint64_t rng_key_dev(uint64_t seed, uint64_t stream)
{
    RngDev r = rng_seed_dev(seed, stream);
    const uint64_t high = rng_u32_dev(&r);
    return high << 32 | rng_u32_dev(&r);
}

// The key of layer's draws in a pass: key as the host computed it (rng_key of the seed and
// layer_draw_stream), or in a step captured as a CUDA graph (draw_id not NULL) rng_key_dev's of
// the draw id each replay uploads.
__device__ __forceinline__ uint64_t layer_key_dev(uint64_t key, const uint64_t *draw_id,
                                                  uint64_t seed, int layer)
{
    return draw_id ? rng_key_dev(seed, (*draw_id << 16) ^ (uint64_t)layer) : key;
}

// rng_below: uniform integer in [0, n).
__device__ __forceinline__ uint32_t rng_below_dev(RngDev *r, uint32_t n)
{
    return (uint32_t)(((uint64_t)rng_u32_dev(r) * n) >> 32);
}

#endif
