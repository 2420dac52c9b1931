/* [yolo] on the device (yolo.cu): C entry points, float32 but the input and its gradient (float32
 * or 16-bit, core/precision.h ElemType).
 *
 *   in, out, delta, in_delta [batch][n_mask][entries][h][w], entries = classes + 5, plane = h w
 *   truth [batch][truth_boxes][TRUTH_FLOATS] (device)   sample_loss [batch] (device) */
#ifndef CDL_CUDA_YOLO_H
#define CDL_CUDA_YOLO_H

#include <cuda_runtime_api.h>
#include <stddef.h>

#include "core/precision.h"
#include "layers/yolo.h"

#ifdef __cplusplus
extern "C" {
#endif

/* out = in with entries 0, 1 (x, y) scale_x_y logistic(in) - (scale_x_y - 1) / 2, entries 2, 3
 * (w, h) as they are, and entries 4.. (objectness, classes) logistic(in); n values in all. With
 * new_coords no logistic: x, y scale_x_y in - (scale_x_y - 1) / 2, the rest as they are. */
cudaError_t cuda_yolo_forward(float *out, const void *in, ElemType in_type, size_t n, int entries,
                              size_t plane, float scale_x_y, int new_coords, cudaStream_t stream);
/* delta (darknet's l.delta, the negative gradient) of out given truth, as layers/yolo_loss.c
 * computes it on the host (the same rules, layers/yolo_loss_rules.h), and darknet's cost of the
 * mini-batch, not yet divided by the loss divisor, into *cost (device); sample_loss [batch] and
 * plane_squares [batch][n_mask][entries] (device): the samples' and the planes' sums. No host sync.
 */
cudaError_t cuda_yolo_loss(const Yolo *yo, const float *out, float *delta, const float *truth,
                           int truth_boxes, int batch, int w, int h, YoloSampleLoss *sample_loss,
                           double *plane_squares, double *cost, cudaStream_t stream);
/* in_delta (of in_type) += k delta, n values. */
cudaError_t cuda_yolo_backward(void *in_delta, ElemType in_type, const float *delta, size_t n,
                               float k, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
