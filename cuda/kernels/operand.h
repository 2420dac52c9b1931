/* The operands of a product in a precision other than float32 (operand.cu): float32 values
 * rounded, to nearest even, into the storage cuBLAS multiplies them from. C entry point. */
#ifndef CDL_CUDA_OPERAND_H
#define CDL_CUDA_OPERAND_H

#include <cuda_runtime_api.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What a rounded copy holds: tf32 values (10 mantissa bits) in float32 storage, bf16 or fp16
 * values in 16-bit storage (__nv_bfloat16, __half). */
typedef enum CudaOperandFormat {
    CUDA_OPERAND_TF32,
    CUDA_OPERAND_BF16,
    CUDA_OPERAND_FP16,
} CudaOperandFormat;

/* Bytes of one rounded value of format. */
size_t cuda_operand_bytes(CudaOperandFormat format);

/* dst[i] = src[i] rounded to format, for i < n: infinities and NaNs stay, a value past the
 * format's largest becomes an infinity (backend/cpu/round.h rounds the same way on the CPU). */
cudaError_t cuda_round_operand(void *dst, const float *src, size_t n, CudaOperandFormat format,
                               cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
