/* The numerics of a layer's matrix products, [net] precision= (core/net.h), the same names on
 * every backend. */
#ifndef CDL_PRECISION_H
#define CDL_PRECISION_H

typedef enum GemmPrecision {
    GEMM_FP32, /* float32 operands */
    /* bf16 operands (backend/cpu/bf16.h), float32 accumulation and output, as
     * torch.autocast("cpu", torch.bfloat16) computes convolutions and matrix products */
    GEMM_BF16,
} GemmPrecision;

#endif
