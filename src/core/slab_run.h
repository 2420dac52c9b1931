/* A run of the parameter slab that the optimizer updates in one pass over the whole slab
 * (SlabKernels.sgd and .adam, core/backend.h): a trainable tensor, its weight decay with it. A
 * plain struct of its own, so that the device's kernels (cuda/kernels/slab.h) read the same
 * layout. */
#ifndef CDL_SLAB_RUN_H
#define CDL_SLAB_RUN_H

#include <stddef.h>

typedef struct SlabRun {
    size_t offset; /* of its first value in the slab */
    size_t first;  /* its first value's position when the runs' values are counted in order */
    size_t count;
    float decay; /* its weight decay (0 when it takes none) */
} SlabRun;

#endif
