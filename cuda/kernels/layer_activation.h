/* The layers' activations on the device (layer_activation.cu): C entry points, each tensor float32
 * or 16-bit (core/precision.h ElemType; computed in float). */
#ifndef CDL_CUDA_LAYER_ACTIVATION_H
#define CDL_CUDA_LAYER_ACTIVATION_H

#include <cuda_runtime_api.h>
#include <stddef.h>

#include "core/precision.h"

#ifdef __cplusplus
extern "C" {
#endif

/* y[i] = f(x[i]) for n values, f the ActivationKind kind (backend/cpu/activation.h), x of x_type
 * and y of y_type; y may be x (the same type). */
cudaError_t cuda_activation_forward(void *y, ElemType y_type, const void *x, ElemType x_type,
                                    size_t n, int kind, cudaStream_t stream);
/* d[i] *= f'(x[i]) given y[i] = f(x[i]): dL/dy into dL/dx in place; d of y's type. */
cudaError_t cuda_activation_backward(void *d, const void *x, ElemType x_type, const void *y,
                                     ElemType y_type, size_t n, int kind, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
