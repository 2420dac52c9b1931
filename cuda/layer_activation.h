/* A layer's activation on the GPU (layer_activation.c), as layer_activate and
 * layer_activation_backward compute it on the CPU. */
#ifndef CDL_CUDA_LAYER_ACTIVATION_STEP_H
#define CDL_CUDA_LAYER_ACTIVATION_STEP_H

#include "gpu.h"

/* l->out [batch][out_shape] = f(l->pre) (nothing when the activation is linear). */
void gpu_layer_activate(Layer *l, const StepContext *ctx);
/* l->delta from dL/d(out) to dL/d(pre) in place. */
void gpu_layer_activation_backward(Layer *l, const StepContext *ctx);

#endif
