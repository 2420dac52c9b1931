// A whole-array sum: each block sums a grid-strided share with block_sum and adds it to the
// output with atomicAdd.
//   in: (n), out: (1)
#include "reduce.h"

#include "kernels/reduce.cuh"
#include "launch.h"

__global__ void sum_kernel(float *out, const float *in, size_t n)
{
    float v = 0.0f;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        v += in[i];
    v = block_sum(v);
    if (threadIdx.x == 0)
        atomicAdd(out, v);
}

extern "C" cudaError_t cuda_sum(float *out, const float *in, size_t n, cudaStream_t stream)
{
    const int block = 256;
    const size_t blocks_needed = (n + block - 1) / block;
    const int grid = blocks_needed < 1 ? 1 : blocks_needed > 1024 ? 1024 : (int)blocks_needed;
    const cudaError_t err = cudaMemsetAsync(out, 0, sizeof *out, stream);
    if (err != cudaSuccess)
        return err;
    CUDA_LAUNCH(sum_kernel, grid, block, 0, stream, out, in, n);
    return cuda_launch_error();
}
