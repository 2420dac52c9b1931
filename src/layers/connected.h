/* [connected]'s configuration and per-batch buffers, shared by its meaning (layers/connected.c)
 * and its CPU kernels (backend/cpu/connected.c). */
#ifndef CDL_CONNECTED_H
#define CDL_CONNECTED_H

#include "layers/bias_norm.h"

/* Positions in l->params, in the order parse declares them. */
enum { CONNECTED_WEIGHTS, CONNECTED_BIASES };

typedef struct Connected {
    int inputs, outputs;  /* per sample: in [inputs] (the flattened input), out [outputs] */
    BiasNorm stage;       /* bias, or batch norm over the batch */
    unsigned char *qwork; /* int8 weights (l->quant): qgemm_float's work for the batch */
    /* precision=bf16: the weights and the input [batch][inputs] as each forward rounded them */
    float *w_rounded, *x_rounded;
} Connected;

#endif
