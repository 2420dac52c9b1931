// Layer normalisation, one block per row: two block sums (mean, then the variance around it,
// which is exact for rows of large mean where E[x^2] - mean^2 is not), then the normalised row;
// and its backward (float32) as [layernorm] computes it (backend/cpu/layernorm.c). The forward is
// templated over the element type; statistics in float. A row's C values are contiguous (inner 1),
// or inner apart ([layernorm] channels=1: a position's channels, rows [outer][inner]; read
// strided, a first version that does not coalesce).
//   out, inp, dinp, dout: (N, C), row r at (r / inner) * stride + r % inner, its values inner
//   apart   weight, bias, dweight, dbias: (C)   mean, rstd: (N), row r's at r * stat_stride
#include "layernorm.h"

#include "kernels/dtype.cuh"
#include "kernels/reduce.cuh"
#include "launch.h"

template <typename T>
__global__ void layernorm_forward_kernel(T *out, float *mean, float *rstd, const T *inp,
                                         const float *weight, const float *bias, int C, float eps,
                                         size_t stride, size_t stat_stride, int inner)
{
    const size_t at = (size_t)blockIdx.x / inner * stride + (size_t)blockIdx.x % inner;
    const T *x = inp + at;
    T *y = out + at;
    float sum = 0.0f;
    for (int i = threadIdx.x; i < C; i += blockDim.x)
        sum += to_float(x[(size_t)i * inner]);
    const float m = block_sum(sum) / C;
    float squares = 0.0f;
    for (int i = threadIdx.x; i < C; i += blockDim.x) {
        const float d = to_float(x[(size_t)i * inner]) - m;
        squares += d * d;
    }
    const float s = rsqrtf(block_sum(squares) / C + eps);
    for (int i = threadIdx.x; i < C; i += blockDim.x)
        y[(size_t)i * inner] =
            from_float<T>((to_float(x[(size_t)i * inner]) - m) * s * weight[i] + bias[i]);
    if (threadIdx.x == 0 && mean) {
        mean[blockIdx.x * stat_stride] = m;
        rstd[blockIdx.x * stat_stride] = s;
    }
}

// With x_hat the normalised row and g = dy * weight: dinp += rstd (g - mean(g) - x_hat
// mean(g x_hat)), and dout becomes dy * x_hat (the CPU's order: the parameter gradients are then
// column sums of dout before and after).
__global__ void layernorm_backward_kernel(float *dinp, float *dout, const float *inp,
                                          const float *weight, const float *mean, const float *rstd,
                                          int C, int inner)
{
    const size_t at = (size_t)blockIdx.x / inner * C * inner + (size_t)blockIdx.x % inner;
    const float *x = inp + at;
    float *dy = dout + at;
    const float m = mean[blockIdx.x], s = rstd[blockIdx.x];
    float sum_g = 0.0f, sum_g_x_hat = 0.0f;
    for (int i = threadIdx.x; i < C; i += blockDim.x) {
        const size_t k = (size_t)i * inner;
        const float g = dy[k] * weight[i];
        sum_g += g;
        sum_g_x_hat += g * (x[k] - m) * s;
    }
    const float mean_g = block_sum(sum_g) / C, mean_g_x_hat = block_sum(sum_g_x_hat) / C;
    for (int i = threadIdx.x; i < C; i += blockDim.x) {
        const size_t k = (size_t)i * inner;
        const float x_hat = (x[k] - m) * s;
        if (dinp)
            dinp[at + k] += s * (dy[k] * weight[i] - mean_g - x_hat * mean_g_x_hat);
        dy[k] *= x_hat;
    }
}

extern "C" cudaError_t cuda_layernorm_forward_rows(void *out, float *mean, float *rstd,
                                                   const void *inp, const float *weight,
                                                   const float *bias, int N, int C, float eps,
                                                   size_t stride, size_t stat_stride, int inner,
                                                   cudaDataType_t type, cudaStream_t stream)
{
    const int block = 256;
    if (N == 0)
        return cudaSuccess;
    if (type == CUDA_R_32F)
        CUDA_LAUNCH(layernorm_forward_kernel<float>, N, block, 0, stream, (float *)out, mean, rstd,
                    (const float *)inp, weight, bias, C, eps, stride, stat_stride, inner);
    else if (type == CUDA_R_16BF)
        CUDA_LAUNCH(layernorm_forward_kernel<__nv_bfloat16>, N, block, 0, stream,
                    (__nv_bfloat16 *)out, mean, rstd, (const __nv_bfloat16 *)inp, weight, bias, C,
                    eps, stride, stat_stride, inner);
    else
        return cudaErrorInvalidValue;
    return cuda_launch_error();
}

extern "C" cudaError_t cuda_layernorm_forward(void *out, float *mean, float *rstd, const void *inp,
                                              const float *weight, const float *bias, int N, int C,
                                              cudaDataType_t type, cudaStream_t stream)
{
    return cuda_layernorm_forward_rows(out, mean, rstd, inp, weight, bias, N, C, 1e-5f, (size_t)C,
                                       1, 1, type, stream);
}

extern "C" cudaError_t cuda_layernorm_backward(float *dinp, float *dout, const float *inp,
                                               const float *weight, const float *mean,
                                               const float *rstd, int N, int C, int inner,
                                               cudaStream_t stream)
{
    if (N == 0)
        return cudaSuccess;
    CUDA_LAUNCH(layernorm_backward_kernel, N, 256, 0, stream, dinp, dout, inp, weight, mean, rstd,
                C, inner);
    return cuda_launch_error();
}
