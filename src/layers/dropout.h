/* [dropout]'s and [drop_path]'s configuration and state (layers/dropout.c parses them;
 * backend/cpu/dropout.c and cuda/dropout.c compute with them): one family, whose masks hold a draw
 * per value ([dropout]) or per sample ([drop_path]). */
#ifndef CDL_DROPOUT_H
#define CDL_DROPOUT_H

#include "core/layer.h"

typedef struct Dropout {
    float probability;
    float scale;       /* 1 / (1 - probability) */
    int per_sample;    /* [drop_path]: one draw per sample, not one per value */
    float *mask;       /* [batch][c][h][w] ([dropout]) or [batch] ([drop_path]): 0 or scale */
    int mask_is_valid; /* the last forward applied the mask (training) */
} Dropout;

/* The values one draw of the mask keeps or drops: 1, or the whole sample (c*h*w). */
static inline size_t dropout_values_per_draw(const Layer *l)
{
    return ((const Dropout *)l->priv)->per_sample ? shape_size(l->out_shape) : 1;
}

/* LayerKernels.resize of every backend: the mask from st, a float per draw. */
int dropout_resize(Layer *l, int batch, LayerState *st, Error *e);

#endif
