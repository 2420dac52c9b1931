// Element types of cdl's kernels: float and __nv_bfloat16 through float, with CUDA's own
// conversions (round to nearest even), so a template kernel reads and writes either one.
#ifndef CDL_CUDA_DTYPE_CUH
#define CDL_CUDA_DTYPE_CUH

#include "launch.h"

__device__ __forceinline__ float to_float(float x)
{
    return x;
}

__device__ __forceinline__ float to_float(__nv_bfloat16 x)
{
    return __bfloat162float(x);
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

#endif
