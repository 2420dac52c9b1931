/* The numerics of a layer's matrix products, [net] precision= (core/net.h), the same names on
 * every backend. */
#ifndef CDL_PRECISION_H
#define CDL_PRECISION_H

typedef enum GemmPrecision {
    GEMM_FP32, /* float32 operands */
    /* bf16 operands (backend/cpu/bf16.h), float32 accumulation and output, as
     * torch.autocast("cpu", torch.bfloat16) computes convolutions and matrix products */
    GEMM_BF16,
    /* tf32 operands (float32 with 10 mantissa bits, as NVIDIA's tensor cores take float32),
     * float32 accumulation and output: torch.backends.cuda.matmul.allow_tf32 */
    GEMM_TF32,
    /* fp16 operands, float32 accumulation and output, as torch.autocast("cuda", torch.float16);
     * training scales the loss (train/loss_scale.h) so that small gradients stay in range */
    GEMM_FP16,
} GemmPrecision;

#endif
