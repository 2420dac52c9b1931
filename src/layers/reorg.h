/* [reorg]'s stride, as its meaning (layers/reorg.c) and its kernels (backend/cpu/reorg.c) read
 * it. */
#ifndef CDL_REORG_H
#define CDL_REORG_H

#include "core/layer.h"

static inline int reorg_stride(const Layer *l)
{
    return l->in_shape.h / l->out_shape.h;
}

#endif
