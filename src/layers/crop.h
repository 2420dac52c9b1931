/* [crop]'s configuration and state (layers/crop.c parses it; backend/cpu/crop.c computes with
 * it). */
#ifndef CDL_CROP_H
#define CDL_CROP_H

#include "core/layer.h"

typedef struct Crop {
    int flip, noadjust;
    float scale, shift; /* out = in * scale + shift */
    int *windows;       /* [batch][3]: row and column offsets, mirrored, of the last forward */
} Crop;

#endif
