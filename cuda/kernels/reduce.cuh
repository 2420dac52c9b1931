// Sums across a warp and across a block, for kernels that reduce a row (layernorm, softmax,
// losses): butterfly shuffles within each warp, then one value per warp through shared memory.
#ifndef CDL_CUDA_REDUCE_CUH
#define CDL_CUDA_REDUCE_CUH

#include <float.h>

#include "launch.h"

// The sum of v over the warp's 32 lanes, in every lane. Every lane must call it.
__device__ __forceinline__ float warp_sum(float v)
{
    for (int offset = 16; offset > 0; offset >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, offset);
    return v;
}

// The sum of v over the block, in every thread. blockDim.x is a multiple of 32 (at most 1024)
// and every thread must call it; it ends with a barrier, so it may be called again at once.
__device__ inline float block_sum(float v)
{
    __shared__ float warp_sums[32];
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
    v = warp_sum(v);
    if (lane == 0)
        warp_sums[warp] = v;
    __syncthreads();
    v = warp_sum(lane < warps ? warp_sums[lane] : 0.0f);
    __syncthreads();
    return v;
}

// The largest v of the block, in every thread (block_sum's pattern).
__device__ inline float block_max(float v)
{
    __shared__ float warp_max[32];
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
    for (int offset = 16; offset > 0; offset >>= 1)
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
    if (lane == 0)
        warp_max[warp] = v;
    __syncthreads();
    v = lane < warps ? warp_max[lane] : -FLT_MAX;
    for (int offset = 16; offset > 0; offset >>= 1)
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
    __syncthreads();
    return v;
}

#endif
