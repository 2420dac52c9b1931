// Layer normalisation forward, one block per row: two block sums (mean, then the variance
// around it, which is exact for rows of large mean where E[x^2] - mean^2 is not), then the
// normalised row. Templated over the element type; statistics in float.
//   out, inp: (N, C); weight, bias: (C); mean, rstd: (N)
#include "layernorm.h"

#include "kernels/dtype.cuh"
#include "kernels/reduce.cuh"
#include "launch.h"

template <typename T>
__global__ void layernorm_forward_kernel(T *out, float *mean, float *rstd, const T *inp,
                                         const float *weight, const float *bias, int C)
{
    const T *x = inp + (size_t)blockIdx.x * C;
    T *y = out + (size_t)blockIdx.x * C;
    float sum = 0.0f;
    for (int i = threadIdx.x; i < C; i += blockDim.x)
        sum += to_float(x[i]);
    const float m = block_sum(sum) / C;
    float squares = 0.0f;
    for (int i = threadIdx.x; i < C; i += blockDim.x) {
        const float d = to_float(x[i]) - m;
        squares += d * d;
    }
    const float s = rsqrtf(block_sum(squares) / C + 1e-5f);
    for (int i = threadIdx.x; i < C; i += blockDim.x)
        y[i] = from_float<T>((to_float(x[i]) - m) * s * weight[i] + bias[i]);
    if (threadIdx.x == 0 && mean) {
        mean[blockIdx.x] = m;
        rstd[blockIdx.x] = s;
    }
}

extern "C" cudaError_t cuda_layernorm_forward(void *out, float *mean, float *rstd, const void *inp,
                                              const float *weight, const float *bias, int N, int C,
                                              cudaDataType_t type, cudaStream_t stream)
{
    const int block = 256;
    if (N == 0)
        return cudaSuccess;
    if (type == CUDA_R_32F)
        CUDA_LAUNCH(layernorm_forward_kernel<float>, N, block, 0, stream, (float *)out, mean, rstd,
                    (const float *)inp, weight, bias, C);
    else if (type == CUDA_R_16BF)
        CUDA_LAUNCH(layernorm_forward_kernel<__nv_bfloat16>, N, block, 0, stream,
                    (__nv_bfloat16 *)out, mean, rstd, (const __nv_bfloat16 *)inp, weight, bias, C);
    else
        return cudaErrorInvalidValue;
    return cuda_launch_error();
}
