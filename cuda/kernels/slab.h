/* The optimizer's and the EMA's work over slabs on the device (slab.cu): C entry points, float32
 * values, on one stream. */
#ifndef CDL_CUDA_SLAB_H
#define CDL_CUDA_SLAB_H

#include <cuda_runtime_api.h>
#include <stddef.h>

#include "core/slab_run.h"

#ifdef __cplusplus
extern "C" {
#endif

/* values: NULL, or device memory holding {lr, step_size, bias2_sqrt} that the kernels read
 * instead of the host's arguments (a captured step, whose graph keeps its arguments:
 * gpu_backend.c); skip: NULL, or device memory whose value not 0 (cuda_unscale's) makes the
 * updates and the average leave everything as it was (a step that decides on the device whether
 * it updates: captured, or eager without waiting for the unscaling). */
/* The updates below cover the values of runs [n_runs] (device memory; n values in all) of slabs
 * that share the parameter slab's layout, in one launch, each run with its own weight decay. */
/* SGD with momentum (and nesterov) and weight decay, as train/optimizer.h. */
cudaError_t cuda_sgd(float *w, float *v, const float *g, const SlabRun *runs, int n_runs, size_t n,
                     float lr, float momentum, int nesterov, const float *values, const float *skip,
                     cudaStream_t stream);
/* Adam, or AdamW when decoupled; step_size = lr / (1 - b1^t), bias2_sqrt = sqrt(1 - b2^t). */
cudaError_t cuda_adam(float *w, float *m, float *v, const float *g, const SlabRun *runs, int n_runs,
                      size_t n, float lr, float b1, float b2, float eps, float step_size,
                      float bias2_sqrt, int decoupled, const float *values, const float *skip,
                      cudaStream_t stream);
/* Bytes of device work cuda_sum_squares needs. */
size_t cuda_sum_squares_work(void);
/* *total (device) = sum of x[i]^2 in double, in an order fixed by n. */
cudaError_t cuda_sum_squares(double *total, double *work, const float *x, size_t n,
                             cudaStream_t stream);
cudaError_t cuda_scale(float *x, size_t n, float s, cudaStream_t stream);
/* Scales x so that its L2 norm is at most max_norm, as clip_gradients (train/optimizer.c): by
 * max_norm / (sqrt(sum of x^2) + 1e-6) when that is below 1, the sum in cuda_sum_squares' order
 * and the coefficient in double, all on the device; work: cuda_sum_squares_work() bytes. */
cudaError_t cuda_clip_norm(float *x, size_t n, float max_norm, double *work, cudaStream_t stream);
/* fp16's unscaling: x *= s when every x is finite, else x = 0, the test on the sum of squares in
 * cuda_sum_squares' order; *skip (device, when not NULL) = 0 (finite) or 1; work as above. */
cudaError_t cuda_unscale(float *x, size_t n, float s, float *skip, double *work,
                         cudaStream_t stream);
/* shadow = decay shadow + (1 - decay) w */
cudaError_t cuda_average(float *shadow, const float *w, size_t n, float decay, const float *skip,
                         cudaStream_t stream);
cudaError_t cuda_swap(float *a, float *b, size_t n, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
