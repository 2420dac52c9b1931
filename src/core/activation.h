/* The activation functions a layer can apply (its activation= key): their kinds and names, the
 * same on every backend (each computes them: backend/cpu/activation.h, cuda/layer_activation.h). */
#ifndef CDL_CORE_ACTIVATION_H
#define CDL_CORE_ACTIVATION_H

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
    CDL_ACT_HARDSWISH,   /* x relu6(x + 3) / 6, as torch's (MobileNetV3) */
    CDL_ACT_HARDSIGMOID, /* relu6(x + 3) / 6, as torch's (not Keras' 0.2x + 0.5) */
    CDL_ACT_COUNT
} ActivationKind;

/* Parses a cfg name ("leaky"); returns -1 when unknown. */
int activation_from_name(const char *name, ActivationKind *out);
const char *activation_name(ActivationKind a);
/* The comma-separated list of valid names, for error messages. */
const char *activation_valid_names(void);
/* 1 when the derivative needs the input x (elu, relu6, gelu, swish, mish, hardswish,
 * hardsigmoid); 0 when the output y = f(x) alone gives it, so a forward may write y over x. */
int activation_backward_reads_input(ActivationKind a);

#endif
