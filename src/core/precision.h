/* The numerics of a layer's matrix products, [net] precision= (core/net.h), the same names on
 * every backend. */
#ifndef CDL_PRECISION_H
#define CDL_PRECISION_H

#include <stddef.h>

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

/* How a layer's output and its gradient are stored between layers (Layer.storage): float32, or,
 * on a backend whose family kernels take 16-bit tensors (LayerKernels.stores_16bit) under
 * precision bf16 or fp16, in that format (round to nearest even), as torch.autocast keeps the
 * outputs of the layers it runs in 16 bits. The memory plan gives a 16-bit tensor a slot of 2
 * bytes an element (core/net_memory.c); core/net_storage.h decides each layer's. */
typedef enum ElemType {
    ELEM_F32,
    ELEM_BF16,
    ELEM_FP16,
} ElemType;

/* The 16-bit storage precision p keeps activations in (ELEM_BF16, ELEM_FP16), ELEM_F32 for the
 * others (fp32; tf32, whose values are float32). */
static inline ElemType precision_storage(GemmPrecision p)
{
    return p == GEMM_BF16 ? ELEM_BF16 : p == GEMM_FP16 ? ELEM_FP16 : ELEM_F32;
}

/* The bytes of one element of type t. */
static inline size_t elem_bytes(ElemType t)
{
    return t == ELEM_F32 ? 4 : 2;
}

/* Where element i of a tensor of type t at p is. */
static inline void *elem_at(const void *p, ElemType t, size_t i)
{
    return (char *)p + i * elem_bytes(t);
}

#endif
