/* Elementwise activations on the device (activation.cu): the C entry points of cdl's kernels. */
#ifndef CDL_CUDA_ACTIVATION_H
#define CDL_CUDA_ACTIVATION_H

#include <cuda_runtime_api.h>
#include <library_types.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* out[i] = gelu(in[i]) with the tanh approximation (torch.nn.GELU(approximate="tanh")), for n
 * values of `type` (CUDA_R_32F or CUDA_R_16BF, computed in float); out may be in.
 * cudaErrorInvalidValue for another type. */
cudaError_t cuda_gelu_forward(void *out, const void *in, size_t n, cudaDataType_t type,
                              cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
