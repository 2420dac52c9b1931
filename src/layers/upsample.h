/* [upsample]'s configuration (layers/upsample.c parses it; backend/cpu/upsample.c computes
 * with it). */
#ifndef CDL_UPSAMPLE_H
#define CDL_UPSAMPLE_H

#include "core/layer.h"

typedef struct Upsample {
    int stride;     /* the factor, positive */
    int downsample; /* 1: darknet's negative stride, a summing downsample by `stride` */
    float scale;
} Upsample;

#endif
