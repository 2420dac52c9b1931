/* [layer_scale]'s configuration, as its meaning (layers/layer_scale.c) and its kernels
 * (backend/cpu/layer_scale.c, cuda/layer_scale.c) read it. */
#ifndef CDL_LAYER_SCALE_H
#define CDL_LAYER_SCALE_H

#include "layers/channel_axis.h"

typedef struct LayerScale {
    ChannelAxis axis; /* the channels of an image, the features of a token */
    float init;       /* the scales' value at the start */
} LayerScale;

#endif
