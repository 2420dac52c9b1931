/* [linear]'s configuration and per-batch state, shared by its meaning (layers/linear.c) and its
 * kernels (backend/cpu/linear.c); tensors [batch][rows][inputs or output]. */
#ifndef CDL_LINEAR_H
#define CDL_LINEAR_H

#include "core/layer.h"

typedef struct Linear {
    int inputs, outputs; /* values per row */
    const Param *tied;   /* layer 0's [embedding] weights W, bound at parse; NULL: its own */
    int has_biases;
    unsigned char *qwork; /* int8 weights (l->quant): qgemm_float's work for every row */
    /* precision bf16, tf32 or fp16: the weights as the last forward rounded them, and the input
     * rows of a pass [batch][rows][inputs] (of forward_at: [batch][inputs]) */
    float *w_rounded, *x_rounded;
    /* float32 only, kept between the passes of a step (StepContext.same_weights, kept memory:
     * layer_kept_floats): W^T for the forward and W for the backward, as gemm_pack packs them */
    float *w_packed, *w_packed_back;
    float *bias_sums; /* work, float32 with biases: gemm_act_backward's sums of delta's blocks */
} Linear;

#endif
