// Elementwise activations, grid-strided, templated over the element type (computed in float).
//   out, in: (n)
#include "activation.h"

#include "kernels/dtype.cuh"
#include "launch.h"

template <typename T> __global__ void gelu_forward_kernel(T *out, const T *in, size_t n)
{
    const float sqrt_2_over_pi = 0.7978845608f;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        const float x = to_float(in[i]);
        const float u = sqrt_2_over_pi * (x + 0.044715f * x * x * x);
        out[i] = from_float<T>(0.5f * x * (1.0f + tanhf(u)));
    }
}

extern "C" cudaError_t cuda_gelu_forward(void *out, const void *in, size_t n, cudaDataType_t type,
                                         cudaStream_t stream)
{
    const int block = 256;
    const size_t blocks_needed = (n + block - 1) / block;
    const int grid = blocks_needed > 4096 ? 4096 : (int)blocks_needed;
    if (n == 0)
        return cudaSuccess;
    if (type == CUDA_R_32F)
        CUDA_LAUNCH(gelu_forward_kernel<float>, grid, block, 0, stream, (float *)out,
                    (const float *)in, n);
    else if (type == CUDA_R_16BF)
        CUDA_LAUNCH(gelu_forward_kernel<__nv_bfloat16>, grid, block, 0, stream,
                    (__nv_bfloat16 *)out, (const __nv_bfloat16 *)in, n);
    else
        return cudaErrorInvalidValue;
    return cuda_launch_error();
}
