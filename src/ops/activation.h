/* Element-wise activation functions and their derivatives. */
#ifndef CDL_ACTIVATION_H
#define CDL_ACTIVATION_H

#include <stddef.h>

typedef enum ActivationKind {
    CDL_ACT_LINEAR,
    CDL_ACT_RELU,
    CDL_ACT_LEAKY, /* slope 0.1 for x < 0, as darknet */
    CDL_ACT_LOGISTIC,
    CDL_ACT_TANH,
    CDL_ACT_ELU,
    CDL_ACT_RELU6,
    CDL_ACT_GELU, /* exact (erf) form, as PyTorch's default */
    CDL_ACT_SWISH,
    CDL_ACT_MISH,
    CDL_ACT_COUNT
} ActivationKind;

/* Parses a cfg name ("leaky"); returns -1 when unknown. */
int activation_from_name(const char *name, ActivationKind *out);
const char *activation_name(ActivationKind a);
/* The comma-separated list of valid names, for error messages. */
const char *activation_valid_names(void);

/* y[i] = f(x[i]) for i < n; y may equal x. Large n splits over the OpenMP threads, except when
 * called inside a parallel region (then on the calling thread alone). */
void activation_forward(const float *x, float *y, size_t n, ActivationKind a);
/* delta[i] *= f'(x[i]), given the input x and the output y = f(x) of the forward pass:
 * turns dL/dy into dL/dx in place. */
void activation_backward(const float *x, const float *y, float *delta, size_t n, ActivationKind a);
/* 1 when activation_backward reads x (elu, relu6, gelu, swish, mish); 0 when y alone gives the
 * derivative, so the forward may write y over x. */
int activation_backward_reads_input(ActivationKind a);

#endif
