/* [region] on the device (region.cu): C entry points, float32 but the input and its gradient
 * (float32 or 16-bit, core/precision.h ElemType).
 *
 *   in, out, delta, in_delta [batch][num][entries][h][w], entries = classes + 5, plane = h w
 *   truth [batch][truth_boxes][TRUTH_FLOATS] (device)   plane_squares [batch][num][entries]
 * (device) */
#ifndef CDL_CUDA_REGION_H
#define CDL_CUDA_REGION_H

#include <cuda_runtime_api.h>
#include <stddef.h>
#include <stdint.h>

#include "core/precision.h"
#include "layers/region.h"

#ifdef __cplusplus
extern "C" {
#endif

/* out = in with entries 0, 1, 4 (x, y, objectness) logistic(in), 2, 3 (w, h) as they are, and
 * the classes (entries 5..) logistic each, or with softmax the softmax over the classes of each
 * anchor and cell; with background entry 4 as it is, or in the softmax with the classes; n values
 * in all. */
cudaError_t cuda_region_forward(float *out, const void *in, ElemType in_type, size_t n, int entries,
                                size_t plane, int softmax, int background, cudaStream_t stream);
/* delta (darknet's l.delta) of out given truth, as layers/region_loss.c computes it on the host
 * (the same rules, layers/region_loss_rules.h), with the anchor prior while the images seen,
 * *seen (device memory) or seen_host where seen is NULL, are fewer than REGION_PRIOR_IMAGES; and
 * darknet's cost of the mini-batch, not yet divided by the loss divisor, into *cost (device). No
 * host sync. */
cudaError_t cuda_region_loss(const Region *r, const float *out, float *delta, const float *truth,
                             int truth_boxes, int batch, int w, int h, const uint64_t *seen,
                             uint64_t seen_host, double *plane_squares, double *cost,
                             cudaStream_t stream);
/* in_delta (of in_type) += k delta, times out (1 - out) (the logistic's derivative) on entries 0, 1
 * and 4 (not 4 with background). */
cudaError_t cuda_region_backward(void *in_delta, ElemType in_type, const float *delta,
                                 const float *out, size_t n, int entries, size_t plane,
                                 int background, float k, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
