/* [layernorm]'s configuration and per-batch state, shared by its meaning (layers/layernorm.c) and
 * its kernels (backend/cpu/layernorm.c, cuda/layernorm.c); tensors [batch][c][h][w] viewed along
 * the axis normalised (layers/channel_axis.h): [batch * groups][n][inner]. */
#ifndef CDL_LAYERNORM_H
#define CDL_LAYERNORM_H

#include "layers/channel_axis.h"

/* Positions in l->params, in the order parse declares them. */
enum { P_SCALES, P_BIASES };

typedef struct LayerNorm {
    float eps;
    /* The last axis (rows of w values: n = w, inner = 1, groups = c*h), or with channels=1 the
     * channels (each position's c values: n = c, inner = h*w, groups = 1). */
    ChannelAxis axis;
    /* Per normalised group of n values, from the last forward, for backward:
     * [batch * groups][inner] */
    float *mean, *inv_std; /* inv_std = 1 / sqrt(var + eps) */
} LayerNorm;

/* LayerKernels.resize of every backend: mean and inv_std from st (the state is the same
 * whatever computes it). */
int layernorm_resize(Layer *l, int batch, LayerState *st, Error *e);

#endif
