/* [softmax]'s configuration and per-batch work, shared by its meaning (layers/softmax.c) and its
 * kernels (backend/cpu/softmax.c); tensors [batch][groups][n]. */
#ifndef CDL_SOFTMAX_H
#define CDL_SOFTMAX_H

typedef struct Softmax {
    float label_smoothing;
    int groups;
    float *row_loss;    /* work [batch][groups]: each row's loss, in the forward */
    double *loss_total; /* the GPU's: the rows' losses summed on the device (cuda/softmax.c) */
} Softmax;

#endif
