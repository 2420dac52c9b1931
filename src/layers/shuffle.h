/* [shuffle]'s configuration, as its meaning (layers/shuffle.c) and its kernels (backend/cpu/
 * shuffle.c, cuda/shuffle.c) read it, and the channel map they share. */
#ifndef CDL_SHUFFLE_H
#define CDL_SHUFFLE_H

#include "core/layer.h"

typedef struct Shuffle {
    int groups;
} Shuffle;

/* The input channel that output channel k of c reads, in g groups: the input viewed as
 * [g][c/g] channels is transposed to [c/g][g]. */
static inline int shuffle_source(int k, int c, int g)
{
    return k % g * (c / g) + k / g;
}

#endif
