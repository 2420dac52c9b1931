// The grid of an elementwise kernel's grid-stride loop over n values: blocks of 256 threads, at
// most 4096 of them (each thread then takes every (4096 * 256)-th value).
#ifndef CDL_CUDA_GRID_CUH
#define CDL_CUDA_GRID_CUH

#include <stddef.h>

#define GRID_BLOCK 256

static inline int grid_for(size_t n)
{
    const size_t blocks = (n + GRID_BLOCK - 1) / GRID_BLOCK;
    return blocks > 4096 ? 4096 : blocks < 1 ? 1 : (int)blocks;
}

// for (size_t i = ...; i < n; i += ...): the values of this thread.
#define GRID_STRIDE_LOOP(i, n)                                                                     \
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n);                        \
         i += (size_t)gridDim.x * blockDim.x)

#endif
