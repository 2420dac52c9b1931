/* Copies and sums of row blocks on the device (copy.cu): C entry points, float32 or 16-bit. What
 * [route],
 * [cost] and [dropout]'s identity move; transposes between NCHW and NHWC. */
#ifndef CDL_CUDA_COPY_H
#define CDL_CUDA_COPY_H

#include <cuda_runtime_api.h>
#include <stddef.h>

#include "core/precision.h"

#ifdef __cplusplus
extern "C" {
#endif

/* For r < rows, i < n: dst[r * dst_stride + i] = src[r * src_stride + i], or += with accumulate. */
cudaError_t cuda_copy_rows(float *dst, size_t dst_stride, const float *src, size_t src_stride,
                           int rows, size_t n, int accumulate, cudaStream_t stream);
/* The same with dst and src each float32 or 16-bit (core/precision.h ElemType): the values
 * rounded to dst's type, sums in float. */
cudaError_t cuda_convert_rows(void *dst, ElemType dst_type, size_t dst_stride, const void *src,
                              ElemType src_type, size_t src_stride, int rows, size_t n,
                              int accumulate, cudaStream_t stream);
/* dst [outer][columns][rows] = the transpose of each of src's [outer][rows][columns] matrices (+=
 * with accumulate), each float32 or 16-bit: NCHW to NHWC (rows channels, columns the plane) and
 * back, OIHW weights to KRSC (rows the input channels, columns the taps) and back. */
cudaError_t cuda_transpose(void *dst, ElemType dst_type, const void *src, ElemType src_type,
                           int outer, int rows, int columns, int accumulate, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
