/* [maxpool]'s configuration and state (layers/maxpool.c parses it; backend/cpu/maxpool.c computes
 * with it). */
#ifndef CDL_MAXPOOL_H
#define CDL_MAXPOOL_H

#include "core/layer.h"

typedef struct Maxpool {
    int size, stride, padding;
    int *argmax; /* [batch][c][out_h][out_w]: index into the input plane (in nChw8c: as the
                    output's, [batch][c/8][out_h][out_w][8]) */
    /* CPU: an nhwc input's (Layer.nhwc_from) work, a row of maxima [out_w][c] for each of
     * row_threads threads */
    float *rows;
    int row_threads;
} Maxpool;

#endif
