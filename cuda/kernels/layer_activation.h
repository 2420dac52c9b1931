/* The layers' activations on the device (layer_activation.cu): C entry points, float32. */
#ifndef CDL_CUDA_LAYER_ACTIVATION_H
#define CDL_CUDA_LAYER_ACTIVATION_H

#include <cuda_runtime_api.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* y[i] = f(x[i]) for n values, f the ActivationKind kind (backend/cpu/activation.h); y may be x. */
cudaError_t cuda_activation_forward(float *y, const float *x, size_t n, int kind,
                                    cudaStream_t stream);
/* d[i] *= f'(x[i]) given y[i] = f(x[i]): dL/dy into dL/dx in place. */
cudaError_t cuda_activation_backward(float *d, const float *x, const float *y, size_t n, int kind,
                                     cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
