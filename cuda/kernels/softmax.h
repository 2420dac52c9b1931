/* Softmax rows with the cross-entropy loss on the device (softmax.cu): C entry points. */
#ifndef CDL_CUDA_SOFTMAX_H
#define CDL_CUDA_SOFTMAX_H

#include <cuda_runtime_api.h>

#include "core/precision.h"

#ifdef __cplusplus
extern "C" {
#endif

/* out [rows][n] (of out_type) = softmax of each row of in (of in_type); with labels [rows] (NULL:
 * none), row_loss [rows] the cross-entropy of each row with label smoothing s (0 where the label
 * is outside [0, n)), from in's values. Arithmetic in float. */
cudaError_t cuda_softmax_forward(void *out, ElemType out_type, float *row_loss, const void *in,
                                 ElemType in_type, const int *labels, int rows, int n,
                                 float smoothing, cudaStream_t stream);
/* dx [rows][n] (of dx_type) += with labels, (p - target) * inv_divisor (target: the smoothed
 * one-hot); without, p * (dy - p.dy) per row (p and dy of p_type). */
cudaError_t cuda_softmax_backward(void *dx, ElemType dx_type, const void *p, const void *dy,
                                  ElemType p_type, const int *labels, int rows, int n,
                                  float inv_divisor, float smoothing, cudaStream_t stream);
/* *total (device) = the sum of row_loss [rows] in row order, in double. */
cudaError_t cuda_loss_total(double *total, const float *row_loss, int rows, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
