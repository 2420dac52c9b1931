// Strided row copies and sums, elementwise and grid-strided: a concatenation's blocks ([route]:
// each input's sample into its place in the output's), its gradients back, identities.
//   dst: (rows, dst_stride)   src: (rows, src_stride), the first n values of each row moved
#include "copy.h"

#include "kernels/grid.cuh"
#include "launch.h"

__global__ void copy_rows_kernel(float *dst, size_t dst_stride, const float *src, size_t src_stride,
                                 size_t row, size_t n, int accumulate)
{
    GRID_STRIDE_LOOP(t, n)
    {
        const size_t r = t / row, i = t % row;
        const float v = src[r * src_stride + i];
        float *d = dst + r * dst_stride + i;
        *d = accumulate ? *d + v : v;
    }
}

extern "C" cudaError_t cuda_copy_rows(float *dst, size_t dst_stride, const float *src,
                                      size_t src_stride, int rows, size_t n, int accumulate,
                                      cudaStream_t stream)
{
    const size_t total = (size_t)rows * n;
    if (total == 0)
        return cudaSuccess;
    CUDA_LAUNCH(copy_rows_kernel, grid_for(total), GRID_BLOCK, 0, stream, dst, dst_stride, src,
                src_stride, n, total, accumulate);
    return cuda_launch_error();
}
