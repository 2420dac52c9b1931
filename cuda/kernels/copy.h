/* Copies and sums of row blocks on the device (copy.cu): C entry points, float32. What [route],
 * [cost] and [dropout]'s identity move. */
#ifndef CDL_CUDA_COPY_H
#define CDL_CUDA_COPY_H

#include <cuda_runtime_api.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* For r < rows, i < n: dst[r * dst_stride + i] = src[r * src_stride + i], or += with accumulate. */
cudaError_t cuda_copy_rows(float *dst, size_t dst_stride, const float *src, size_t src_stride,
                           int rows, size_t n, int accumulate, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
