/* [avgpool]'s configuration (layers/avgpool.c parses it; backend/cpu/avgpool.c and
 * cuda/avgpool.c compute with it). */
#ifndef CDL_AVGPOOL_H
#define CDL_AVGPOOL_H

#include "core/layer.h"

/* size 0: global average pooling. Else torch's F.avg_pool2d(x, size, stride, padding) with
 * count_include_pad=True: output (i, j) is the sum of the input rows i*stride - padding ..
 * + size-1 (columns likewise) that lie inside the input, divided by size*size. */
typedef struct Avgpool {
    int size, stride, padding;
} Avgpool;

#endif
