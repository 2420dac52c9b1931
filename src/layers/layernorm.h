/* [layernorm]'s configuration and per-batch state, shared by its meaning (layers/layernorm.c) and
 * its kernels (backend/cpu/layernorm.c, cuda/layernorm.c); tensors [batch][rows][w], rows = c*h. */
#ifndef CDL_LAYERNORM_H
#define CDL_LAYERNORM_H

#include "core/layer.h"

/* Positions in l->params, in the order parse declares them. */
enum { P_SCALES, P_BIASES };

typedef struct LayerNorm {
    float eps;
    /* Per row of the batch, from the last forward, for backward: [batch][rows] */
    float *mean, *inv_std; /* inv_std = 1 / sqrt(var + eps) */
} LayerNorm;

/* LayerKernels.resize of every backend: mean and inv_std from st (the state is the same
 * whatever computes it). */
int layernorm_resize(Layer *l, int batch, LayerState *st, Error *e);

#endif
