/* A whole-array sum on the device (reduce.cu): the C entry point of cdl's reduction kernel. */
#ifndef CDL_CUDA_REDUCE_H
#define CDL_CUDA_REDUCE_H

#include <cuda_runtime_api.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* *out = sum of in[0..n), out and in device pointers. Blocks add their partial sums with
 * atomicAdd, so the float rounding depends on their order (not deterministic on a GPU). */
cudaError_t cuda_sum(float *out, const float *in, size_t n, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
