// Element types of cdl's kernels: float, __nv_bfloat16 and __half through float, with CUDA's own
// conversions (round to nearest even), so a template kernel reads and writes any of them; and the
// dispatch from a layer's element types (core/precision.h ElemType) to a template's instance.
#ifndef CDL_CUDA_DTYPE_CUH
#define CDL_CUDA_DTYPE_CUH

#include "core/precision.h"
#include "launch.h"

__device__ __forceinline__ float to_float(float x)
{
    return x;
}

__device__ __forceinline__ float to_float(__nv_bfloat16 x)
{
    return __bfloat162float(x);
}

__device__ __forceinline__ float to_float(__half x)
{
    return __half2float(x);
}

template <typename T> __device__ __forceinline__ T from_float(float x);

template <> __device__ __forceinline__ float from_float<float>(float x)
{
    return x;
}

template <> __device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float x)
{
    return __float2bfloat16_rn(x);
}

template <> __device__ __forceinline__ __half from_float<__half>(float x)
{
    return __float2half_rn(x);
}

// A type as a value, for the dispatch below: ElemTag<T>::type is T.
template <typename T> struct ElemTag {
    using type = T;
};

// Returns f(ElemTag<T>()) with T the C++ type of t.
template <typename F> cudaError_t with_elem_type(ElemType t, F f)
{
    switch (t) {
    case ELEM_BF16:
        return f(ElemTag<__nv_bfloat16>());
    case ELEM_FP16:
        return f(ElemTag<__half>());
    default:
        return f(ElemTag<float>());
    }
}

// Returns f(ElemTag<X>(), ElemTag<Y>()) with X and Y the C++ types of x and y: a kernel that
// reads one tensor and writes another, each float32 or 16-bit (Layer.in_storage, Layer.storage),
// launched as kernel<X, Y> from a generic lambda.
template <typename F> cudaError_t with_elem_types(ElemType x, ElemType y, F f)
{
    return with_elem_type(
        x, [&](auto xt) { return with_elem_type(y, [&](auto yt) { return f(xt, yt); }); });
}

// The same for a kernel of three tensors: f(ElemTag<X>(), ElemTag<Y>(), ElemTag<Z>()).
template <typename F> cudaError_t with_elem_types(ElemType x, ElemType y, ElemType z, F f)
{
    return with_elem_types(x, y, [&](auto xt, auto yt) {
        return with_elem_type(z, [&](auto zt) { return f(xt, yt, zt); });
    });
}

#endif
