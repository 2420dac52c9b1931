/* The activation kinds' names (core/activation.h). */
#include "core/activation.h"

#include <string.h>

static const struct {
    const char *name;
    ActivationKind kind;
} names[] = {
    {"linear", CDL_ACT_LINEAR},
    {"relu", CDL_ACT_RELU},
    {"leaky", CDL_ACT_LEAKY},
    {"logistic", CDL_ACT_LOGISTIC},
    {"sigmoid", CDL_ACT_LOGISTIC},
    {"tanh", CDL_ACT_TANH},
    {"elu", CDL_ACT_ELU},
    {"relu6", CDL_ACT_RELU6},
    {"gelu", CDL_ACT_GELU},
    {"swish", CDL_ACT_SWISH},
    {"silu", CDL_ACT_SWISH},
    {"mish", CDL_ACT_MISH},
    {"hardswish", CDL_ACT_HARDSWISH},
    {"hardsigmoid", CDL_ACT_HARDSIGMOID},
};

int activation_from_name(const char *name, ActivationKind *out)
{
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (!strcmp(name, names[i].name)) {
            *out = names[i].kind;
            return 0;
        }
    }
    return -1;
}

const char *activation_name(ActivationKind a)
{
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (names[i].kind == a)
            return names[i].name;
    return "unknown";
}

const char *activation_valid_names(void)
{
    return "linear, relu, leaky, logistic (sigmoid), tanh, elu, relu6, gelu, swish (silu), mish, "
           "hardswish, hardsigmoid";
}

int activation_backward_reads_input(ActivationKind a)
{
    return a == CDL_ACT_ELU || a == CDL_ACT_RELU6 || a == CDL_ACT_GELU || a == CDL_ACT_SWISH ||
           a == CDL_ACT_MISH || a == CDL_ACT_HARDSWISH || a == CDL_ACT_HARDSIGMOID;
}
