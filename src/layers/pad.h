/* [pad]'s configuration, as its meaning (layers/pad.c) and its kernels (backend/cpu/pad.c,
 * cuda/pad.c) read it: the rows above and columns left of the input, and the fill value (the
 * rows below and columns right are the output's rest). */
#ifndef CDL_PAD_H
#define CDL_PAD_H

#include "core/layer.h"

typedef struct Pad {
    int top, left;
    float value;
} Pad;

#endif
