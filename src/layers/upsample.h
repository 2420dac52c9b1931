/* [upsample]'s configuration (layers/upsample.c parses it; backend/cpu/upsample.c computes
 * with it). */
#ifndef CDL_UPSAMPLE_H
#define CDL_UPSAMPLE_H

#include "core/layer.h"

typedef struct Upsample {
    int stride;
    float scale;
} Upsample;

#endif
