/* [layernorm]'s configuration and per-batch state, shared by its meaning (layers/layernorm.c) and
 * its kernels (backend/cpu/layernorm.c); tensors [batch][rows][w], rows = c*h. */
#ifndef CDL_LAYERNORM_H
#define CDL_LAYERNORM_H

/* Positions in l->params, in the order parse declares them. */
enum { P_SCALES, P_BIASES };

typedef struct LayerNorm {
    float eps;
    /* Per row of the batch, from the last forward, for backward: [batch][rows] */
    float *mean, *inv_std; /* inv_std = 1 / sqrt(var + eps) */
} LayerNorm;

#endif
