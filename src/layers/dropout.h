/* [dropout]'s configuration and state (layers/dropout.c parses it; backend/cpu/dropout.c computes
 * with it). */
#ifndef CDL_DROPOUT_H
#define CDL_DROPOUT_H

#include "core/layer.h"

typedef struct Dropout {
    float probability;
    float scale;       /* 1 / (1 - probability) */
    float *mask;       /* [batch][c][h][w]: 0 or scale */
    int mask_is_valid; /* the last forward applied the mask (training) */
} Dropout;

#endif
