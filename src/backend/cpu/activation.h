/* Element-wise activation functions and their derivatives on the CPU (core/activation.h has the
 * kinds and their names). */
#ifndef CDL_ACTIVATION_H
#define CDL_ACTIVATION_H

#include <stddef.h>

#include "core/activation.h"

/* y[i] = f(x[i]) for i < n; y may equal x. Large n splits over the OpenMP threads, except when
 * called inside a parallel region (then on the calling thread alone). */
void activation_forward(const float *x, float *y, size_t n, ActivationKind a);
/* delta[i] *= f'(x[i]), given the input x and the output y = f(x) of the forward pass:
 * turns dL/dy into dL/dx in place. */
void activation_backward(const float *x, const float *y, float *delta, size_t n, ActivationKind a);

#endif
