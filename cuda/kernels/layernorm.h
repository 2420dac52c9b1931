/* Layer normalisation on the device (layernorm.cu): the C entry points of cdl's kernels. */
#ifndef CDL_CUDA_LAYERNORM_H
#define CDL_CUDA_LAYERNORM_H

#include <cuda_runtime_api.h>
#include <library_types.h>
#include <stddef.h>

#include "core/precision.h"

#ifdef __cplusplus
extern "C" {
#endif

/* out = (inp - mean) * rstd * weight + bias over each row of C values, rstd = 1/sqrt(var + 1e-5)
 * with the biased variance (torch.nn.LayerNorm). out, inp: (N, C) of `type` (CUDA_R_32F or
 * CUDA_R_16BF; statistics and arithmetic in float); weight, bias: (C) float; mean, rstd: (N)
 * float, or NULL when not wanted. cudaErrorInvalidValue for another type. */
cudaError_t cuda_layernorm_forward(void *out, float *mean, float *rstd, const void *inp,
                                   const float *weight, const float *bias, int N, int C,
                                   cudaDataType_t type, cudaStream_t stream);
/* The same with rstd = 1/sqrt(var + eps) over N rows of C values, inp of in_type and out of
 * out_type (float32 or 16-bit, each its own), row r's first value at
 * (r / inner) * stride + r % inner (elements) in inp and out, its values inner apart (inner 1: rows
 * `stride` apart; else [layernorm] channels=1, rows [N / inner][C][inner], stride C * inner), row
 * r's statistics at mean[r * stat_stride] and rstd[r * stat_stride] ([layernorm]'s forward, and
 * its forward_at over one token of each sample). */
cudaError_t cuda_layernorm_forward_rows(void *out, ElemType out_type, float *mean, float *rstd,
                                        const void *inp, ElemType in_type, const float *weight,
                                        const float *bias, int N, int C, float eps, size_t stride,
                                        size_t stat_stride, int inner, cudaStream_t stream);
/* The backward of N rows of C values ([N / inner][C][inner], a row's values inner apart) from the
 * forward's mean and rstd: dinp += dL/dinp (dinp NULL: not wanted; dinp and inp of in_type) from
 * dout = dL/dout (of out_type), which becomes dout * x_hat (so that weight's gradient is then its
 * sums over the rows, as bias's are of dout before). Sums in float. */
cudaError_t cuda_layernorm_backward(void *dinp, const void *inp, ElemType in_type, void *dout,
                                    ElemType out_type, const float *weight, const float *mean,
                                    const float *rstd, int N, int C, int inner,
                                    cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
