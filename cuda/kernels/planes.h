/* Per-channel work on the device (planes.cu): C entry points, tensors [batch][channels][spatial],
 * float32 but where an ElemType names a tensor's type (float32 or 16-bit, summed in float). */
#ifndef CDL_CUDA_PLANES_H
#define CDL_CUDA_PLANES_H

#include <cuda_runtime_api.h>

#include "core/precision.h"

#ifdef __cplusplus
extern "C" {
#endif

/* y = x + bias[channel] (y may be x, of the same type); x and y [batch][spatial][channels] where
 * channels_last is 1. */
cudaError_t cuda_add_bias(void *y, ElemType y_type, const void *x, ElemType x_type,
                          const float *bias, int batch, int channels, int spatial,
                          int channels_last, cudaStream_t stream);
/* dbias [channels] += delta (of delta_type) summed over the batch and the plane (delta
 * [batch][spatial][channels] where channels_last is 1). */
cudaError_t cuda_bias_grad(float *dbias, const void *delta, ElemType delta_type, int batch,
                           int channels, int spatial, int channels_last, cudaStream_t stream);
/* y = x * scale[channel] (add 0), or y += x * scale[channel] (add 1): [layer_scale]'s forward
 * and its input gradient; y (of y_type) may be x (of x_type, the same) when add is 0. */
cudaError_t cuda_channel_scale(void *y, ElemType y_type, const void *x, ElemType x_type,
                               const float *scale, int batch, int channels, int spatial, int add,
                               cudaStream_t stream);
/* dscale [channels] += dy (of dy_type) * x (of x_type) summed over the batch and the plane. */
cudaError_t cuda_scale_grad(float *dscale, const void *dy, ElemType dy_type, const void *x,
                            ElemType x_type, int batch, int channels, int spatial,
                            cudaStream_t stream);
/* pooled [batch][channels] = the mean of each plane of x [batch][channels][spatial] (or
 * [batch][spatial][channels] where channels_last is 1); x of x_type and pooled of pooled_type,
 * each float32 or 16-bit (core/precision.h ElemType), summed in float in the same order. */
cudaError_t cuda_plane_mean(void *pooled, ElemType pooled_type, const void *x, ElemType x_type,
                            int batch, int channels, int spatial, int channels_last,
                            cudaStream_t stream);
/* dx += dpooled [batch][channels] / spatial over each plane, dx laid out as cuda_plane_mean's x,
 * in the types as cuda_plane_mean's. */
cudaError_t cuda_plane_mean_backward(void *dx, ElemType x_type, const void *dpooled,
                                     ElemType pooled_type, int batch, int channels, int spatial,
                                     int channels_last, cudaStream_t stream);

/* The inputs of a scaling of planes: x [batch][channels][spatial] (or [batch][spatial][channels]
 * where channels_last is 1) and scale [batch][channels], each float32 or 16-bit. */
typedef struct PlaneScaleInputs {
    const void *x, *scale;
    ElemType x_type, scale_type;
} PlaneScaleInputs;
/* y (of y_type, laid out as x) = x times scale, each plane its own value. */
cudaError_t cuda_plane_scale(void *y, ElemType y_type, PlaneScaleInputs in, int batch, int channels,
                             int spatial, int channels_last, cudaStream_t stream);
/* Its gradients from dy (of dy_type, laid out as x): dx (of x's type) += dy * scale, dscale
 * [batch][channels] (of scale's type) += the plane's sum of dy * x; either may be NULL (not
 * needed). */
cudaError_t cuda_plane_scale_backward(void *dx, void *dscale, const void *dy, ElemType dy_type,
                                      PlaneScaleInputs in, int batch, int channels, int spatial,
                                      int channels_last, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
