/* Layer normalisation on the device (layernorm.cu): the C entry points of cdl's kernel. */
#ifndef CDL_CUDA_LAYERNORM_H
#define CDL_CUDA_LAYERNORM_H

#include <cuda_runtime_api.h>
#include <library_types.h>

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

#ifdef __cplusplus
}
#endif

#endif
