/* Per-channel batch normalisation on the device (batchnorm.cu): C entry points, tensors
 * [batch][c][spatial] each float32 or 16-bit (core/precision.h ElemType; x_hat and the statistics
 * float32, the sums in double), the CPU's formulas (backend/cpu/bn_math.h): training normalises
 * with the biased batch variance, 1/sqrt(var + eps), and moves the running statistics with the
 * unbiased one; inference divides by sqrt(var + eps); with darknet set both divide by darknet's
 * sqrt(var) + 1e-6, training's of the unbiased batch variance. With channels_last 1 the tensors
 * are [batch][spatial][c] (NHWC), the sums taken in the same order. */
#ifndef CDL_CUDA_BATCHNORM_H
#define CDL_CUDA_BATCHNORM_H

#include <cuda_runtime_api.h>

#include "core/precision.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Training mode: mean [c] and inv_std [c] of the batch (sums in double, as the CPU's), x_hat
 * [batch][c][spatial] and y = x_hat * scale + bias (y may be x); running_mean and running_var
 * [c] = (1 - momentum) * themselves + momentum * the batch's mean and unbiased variance, unless
 * NULL (a replayed forward). */
cudaError_t cuda_batchnorm_forward_train(void *y, ElemType y_type, float *x_hat, float *mean,
                                         float *inv_std, const void *x, ElemType x_type,
                                         const float *scale, const float *bias, float *running_mean,
                                         float *running_var, int batch, int c, int spatial,
                                         int channels_last, float momentum, float eps, int darknet,
                                         cudaStream_t stream);
/* Inference mode: y = (x - running_mean) / std * scale + bias (y may be x). */
cudaError_t cuda_batchnorm_forward_eval(void *y, ElemType y_type, const void *x, ElemType x_type,
                                        const float *scale, const float *bias,
                                        const float *running_mean, const float *running_var,
                                        int batch, int c, int spatial, int channels_last, float eps,
                                        int darknet, cudaStream_t stream);
/* Backward of the training forward given dy: ADDS dL/dscale and dL/dbias into dscale and dbias
 * [c]; dx = dx_beta * dx + dL/dx (dx may be dy; NULL: not wanted). sums [2c] (double, device):
 * the per-channel sums of dy and dy * x_hat it leaves there. */
cudaError_t cuda_batchnorm_backward(void *dx, ElemType dx_type, float dx_beta, float *dscale,
                                    float *dbias, double *sums, const void *dy, ElemType dy_type,
                                    const float *x_hat, const float *inv_std, const float *scale,
                                    int batch, int c, int spatial, int channels_last, int darknet,
                                    cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
