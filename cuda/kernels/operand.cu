// Rounds a product's float32 operand into the copy cuBLAS multiplies in a lower precision
// (operand.h): elementwise and grid-strided.
//   src [n] float32   dst [n] tf32 in float32, __nv_bfloat16 or __half
#include "operand.h"

#include "kernels/grid.cuh"
#include "launch.h"

// x rounded to tf32 (float32 with the low 13 mantissa bits zero), ties to even; NaN stays NaN.
__device__ __forceinline__ float tf32_round(float x)
{
    const unsigned int u = __float_as_uint(x);
    return __uint_as_float((u & 0x7fffffffu) > 0x7f800000u
                               ? 0x7fc00000u
                               : (u + 0xfffu + ((u >> 13) & 1u)) & 0xffffe000u);
}

__global__ void round_tf32_kernel(float *dst, const float *src, size_t n)
{
    GRID_STRIDE_LOOP(i, n)
    dst[i] = tf32_round(src[i]);
}

__global__ void round_bf16_kernel(__nv_bfloat16 *dst, const float *src, size_t n)
{
    GRID_STRIDE_LOOP(i, n)
    dst[i] = __float2bfloat16_rn(src[i]);
}

__global__ void round_fp16_kernel(__half *dst, const float *src, size_t n)
{
    GRID_STRIDE_LOOP(i, n)
    dst[i] = __float2half_rn(src[i]);
}

extern "C" size_t cuda_operand_bytes(CudaOperandFormat format)
{
    return format == CUDA_OPERAND_TF32 ? sizeof(float) : 2;
}

extern "C" cudaError_t cuda_round_operand(void *dst, const float *src, size_t n,
                                          CudaOperandFormat format, cudaStream_t stream)
{
    if (n == 0)
        return cudaSuccess;
    if (format == CUDA_OPERAND_TF32)
        CUDA_LAUNCH(round_tf32_kernel, grid_for(n), GRID_BLOCK, 0, stream, (float *)dst, src, n);
    else if (format == CUDA_OPERAND_BF16)
        CUDA_LAUNCH(round_bf16_kernel, grid_for(n), GRID_BLOCK, 0, stream, (__nv_bfloat16 *)dst,
                    src, n);
    else
        CUDA_LAUNCH(round_fp16_kernel, grid_for(n), GRID_BLOCK, 0, stream, (__half *)dst, src, n);
    return cuda_launch_error();
}
