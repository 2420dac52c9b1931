// The activations of cdl's layers (backend/cpu/activation.h's kinds) and their derivatives on the
// device, elementwise and grid-strided, float32 as the CPU computes them (libdevice's expf, tanhf,
// erff and expm1f where the CPU has its own approximations: a few ulp apart). Templated over the
// element types of x (P) and of y and d (Y): float, bf16 or fp16, computed in float.
//   x (pre-activation), y (output), d (dL/dy in, dL/dx out): (n)
#include "layer_activation.h"

#include "core/activation.h"
#include "kernels/dtype.cuh"
#include "launch.h"

__device__ __forceinline__ float sigmoid_of(float x)
{
    return 1.0f / (1.0f + expf(-x));
}

// relu6(x + 3): hardsigmoid is v / 6, hardswish x v / 6 (backend/cpu/activation.c's order).
__device__ __forceinline__ float relu6_of_x_plus_3(float x)
{
    const float v = x + 3.0f < 0 ? 0.0f : x + 3.0f;
    return v > 6.0f ? 6.0f : v;
}

__device__ __forceinline__ float activate(float x, int kind)
{
    switch (kind) {
    case CDL_ACT_RELU:
        return x < 0 ? 0.0f : x;
    case CDL_ACT_LEAKY:
        return x > 0 ? x : 0.1f * x;
    case CDL_ACT_LOGISTIC:
        return sigmoid_of(x);
    case CDL_ACT_TANH:
        return tanhf(x);
    case CDL_ACT_ELU:
        return x > 0 ? x : expm1f(x);
    case CDL_ACT_RELU6: {
        const float v = x < 0 ? 0.0f : x;
        return v > 6.0f ? 6.0f : v;
    }
    case CDL_ACT_GELU:
        return x * 0.5f * erfcf(-x * 0.70710678118654752f);
    case CDL_ACT_SWISH:
        return x * sigmoid_of(x);
    case CDL_ACT_MISH: {
        const float e = expf(x < 20.0f ? x : 20.0f), n = e * (e + 2.0f);
        return x * (n / (n + 2.0f));
    }
    case CDL_ACT_HARDSWISH:
        return x * relu6_of_x_plus_3(x) / 6.0f;
    case CDL_ACT_HARDSIGMOID:
        return relu6_of_x_plus_3(x) / 6.0f;
    default:
        return x;
    }
}

// dy/dx at x, y = activate(x) (the CPU's formulas, backend/cpu/activation.c's backward_range).
__device__ __forceinline__ float derivative(float x, float y, int kind)
{
    switch (kind) {
    case CDL_ACT_RELU:
        return y > 0 ? 1.0f : 0.0f;
    case CDL_ACT_LEAKY:
        return y > 0 ? 1.0f : 0.1f;
    case CDL_ACT_LOGISTIC:
        return y * (1.0f - y);
    case CDL_ACT_TANH:
        return 1.0f - y * y;
    case CDL_ACT_ELU:
        return x > 0 ? 1.0f : y + 1.0f;
    case CDL_ACT_RELU6:
        return x > 0 && x < 6.0f ? 1.0f : 0.0f;
    case CDL_ACT_GELU:
        return 0.5f * erfcf(-x * 0.70710678118654752f) +
               x * 0.39894228040143268f * expf(-0.5f * x * x);
    case CDL_ACT_SWISH: {
        const float e = expf(-x), s = 1.0f / (1.0f + e);
        return s + y * e * s;
    }
    case CDL_ACT_MISH: {
        const float e = expf(x < 20.0f ? x : 20.0f), num = e * (e + 2.0f), den = num + 2.0f;
        return num / den + x * (4.0f * (num + 1.0f) / (den * den)) * sigmoid_of(x);
    }
    case CDL_ACT_HARDSWISH:
        return x < -3.0f ? 0.0f : x <= 3.0f ? x / 3.0f + 0.5f : 1.0f;
    case CDL_ACT_HARDSIGMOID:
        return x > -3.0f && x < 3.0f ? 1.0f / 6.0f : 0.0f;
    default:
        return 1.0f;
    }
}

template <typename P, typename Y>
__global__ void activation_forward_kernel(Y *y, const P *x, size_t n, int kind)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        y[i] = from_float<Y>(activate(to_float(x[i]), kind));
}

template <typename P, typename Y>
__global__ void activation_backward_kernel(Y *d, const P *x, const Y *y, size_t n, int kind)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        // relu and relu6 pass NaN gradients through as 0, as the CPU's selects do
        const float g = derivative(to_float(x[i]), to_float(y[i]), kind);
        d[i] = from_float<Y>(g == 0.0f ? 0.0f : to_float(d[i]) * g);
    }
}

// Blocks for n elements, 256 threads each, at most 4096 (the loops stride the rest).
static int grid_for(size_t n)
{
    const size_t blocks = (n + 255) / 256;
    return blocks > 4096 ? 4096 : (int)blocks;
}

extern "C" cudaError_t cuda_activation_forward(void *y, ElemType y_type, const void *x,
                                               ElemType x_type, size_t n, int kind,
                                               cudaStream_t stream)
{
    if (n == 0 || (kind == CDL_ACT_LINEAR && x == y))
        return cudaSuccess;
    return with_elem_types(x_type, y_type, [&](auto pt, auto yt) {
        using P = typename decltype(pt)::type;
        using Y = typename decltype(yt)::type;
        CUDA_LAUNCH((activation_forward_kernel<P, Y>), grid_for(n), 256, 0, stream, (Y *)y,
                    (const P *)x, n, kind);
        return cuda_launch_error();
    });
}

extern "C" cudaError_t cuda_activation_backward(void *d, const void *x, ElemType x_type,
                                                const void *y, ElemType y_type, size_t n, int kind,
                                                cudaStream_t stream)
{
    if (n == 0 || kind == CDL_ACT_LINEAR)
        return cudaSuccess;
    return with_elem_types(x_type, y_type, [&](auto pt, auto yt) {
        using P = typename decltype(pt)::type;
        using Y = typename decltype(yt)::type;
        CUDA_LAUNCH((activation_backward_kernel<P, Y>), grid_for(n), 256, 0, stream, (Y *)d,
                    (const P *)x, (const Y *)y, n, kind);
        return cuda_launch_error();
    });
}
