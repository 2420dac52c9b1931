// Layer normalisation, one block per row: two block sums (mean, then the variance around it,
// which is exact for rows of large mean where E[x^2] - mean^2 is not), then the normalised row;
// and its backward as [layernorm] computes it (backend/cpu/layernorm.c). Both are templated over
// their tensors' element types (float, bf16 or fp16: the input and its gradient X, the output and
// its gradient Y); statistics and arithmetic in float. A row's C values are contiguous (inner 1),
// or inner apart ([layernorm] channels=1: a position's channels, rows [outer][inner]; read
// strided, a first version that does not coalesce).
//   out, inp, dinp, dout: (N, C), row r at (r / inner) * stride + r % inner, its values inner
//   apart   weight, bias, dweight, dbias: (C)   mean, rstd: (N), row r's at r * stat_stride
#include "layernorm.h"

#include "kernels/dtype.cuh"
#include "kernels/reduce.cuh"
#include "launch.h"

template <typename X, typename Y>
__global__ void layernorm_forward_kernel(Y *out, float *mean, float *rstd, const X *inp,
                                         const float *weight, const float *bias, int C, float eps,
                                         size_t stride, size_t stat_stride, int inner)
{
    const size_t at = (size_t)blockIdx.x / inner * stride + (size_t)blockIdx.x % inner;
    const X *x = inp + at;
    Y *y = out + at;
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
            from_float<Y>((to_float(x[(size_t)i * inner]) - m) * s * weight[i] + bias[i]);
    if (threadIdx.x == 0 && mean) {
        mean[blockIdx.x * stat_stride] = m;
        rstd[blockIdx.x * stat_stride] = s;
    }
}

// With x_hat the normalised row and g = dy * weight: dinp += rstd (g - mean(g) - x_hat
// mean(g x_hat)), and dout becomes dy * x_hat (the CPU's order: the parameter gradients are then
// column sums of dout before and after).
template <typename X, typename Y>
__global__ void layernorm_backward_kernel(X *dinp, Y *dout, const X *inp, const float *weight,
                                          const float *mean, const float *rstd, int C, int inner)
{
    const size_t at = (size_t)blockIdx.x / inner * C * inner + (size_t)blockIdx.x % inner;
    const X *x = inp + at;
    Y *dy = dout + at;
    const float m = mean[blockIdx.x], s = rstd[blockIdx.x];
    float sum_g = 0.0f, sum_g_x_hat = 0.0f;
    for (int i = threadIdx.x; i < C; i += blockDim.x) {
        const size_t k = (size_t)i * inner;
        const float g = to_float(dy[k]) * weight[i];
        sum_g += g;
        sum_g_x_hat += g * (to_float(x[k]) - m) * s;
    }
    const float mean_g = block_sum(sum_g) / C, mean_g_x_hat = block_sum(sum_g_x_hat) / C;
    for (int i = threadIdx.x; i < C; i += blockDim.x) {
        const size_t k = (size_t)i * inner;
        const float x_hat = (to_float(x[k]) - m) * s;
        const float d = to_float(dy[k]);
        if (dinp)
            dinp[at + k] = from_float<X>(to_float(dinp[at + k]) +
                                         s * (d * weight[i] - mean_g - x_hat * mean_g_x_hat));
        dy[k] = from_float<Y>(d * x_hat);
    }
}

extern "C" cudaError_t cuda_layernorm_forward_rows(void *out, ElemType out_type, float *mean,
                                                   float *rstd, const void *inp, ElemType in_type,
                                                   const float *weight, const float *bias, int N,
                                                   int C, float eps, size_t stride,
                                                   size_t stat_stride, int inner,
                                                   cudaStream_t stream)
{
    if (N == 0)
        return cudaSuccess;
    return with_elem_types(in_type, out_type, [&](auto xt, auto yt) {
        using X = typename decltype(xt)::type;
        using Y = typename decltype(yt)::type;
        CUDA_LAUNCH((layernorm_forward_kernel<X, Y>), N, 256, 0, stream, (Y *)out, mean, rstd,
                    (const X *)inp, weight, bias, C, eps, stride, stat_stride, inner);
        return cuda_launch_error();
    });
}

extern "C" cudaError_t cuda_layernorm_forward(void *out, float *mean, float *rstd, const void *inp,
                                              const float *weight, const float *bias, int N, int C,
                                              cudaDataType_t type, cudaStream_t stream)
{
    if (type != CUDA_R_32F && type != CUDA_R_16BF)
        return cudaErrorInvalidValue;
    const ElemType t = type == CUDA_R_32F ? ELEM_F32 : ELEM_BF16;
    return cuda_layernorm_forward_rows(out, t, mean, rstd, inp, t, weight, bias, N, C, 1e-5f,
                                       (size_t)C, 1, 1, stream);
}

extern "C" cudaError_t cuda_layernorm_backward(void *dinp, const void *inp, ElemType in_type,
                                               void *dout, ElemType out_type, const float *weight,
                                               const float *mean, const float *rstd, int N, int C,
                                               int inner, cudaStream_t stream)
{
    if (N == 0)
        return cudaSuccess;
    return with_elem_types(in_type, out_type, [&](auto xt, auto yt) {
        using X = typename decltype(xt)::type;
        using Y = typename decltype(yt)::type;
        CUDA_LAUNCH((layernorm_backward_kernel<X, Y>), N, 256, 0, stream, (X *)dinp, (Y *)dout,
                    (const X *)inp, weight, mean, rstd, C, inner);
        return cuda_launch_error();
    });
}
