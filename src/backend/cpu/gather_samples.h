/* Moving the per-sample blocks of a layer's cache between samples: the CPU kernels'
 * LayerKernels.gather_samples (beam search keeping hypotheses that extend others). */
#ifndef CDL_CPU_GATHER_SAMPLES_H
#define CDL_CPU_GATHER_SAMPLES_H

#include <stddef.h>
#include <string.h>

/* x [batch][block]: sample k's block becomes sample from[k]'s for k < n, through scratch
 * [n][block]; scratch NULL moves nothing. Returns the floats scratch needs. */
static inline size_t gather_sample_blocks(float *x, size_t block, const int *from, int n,
                                          float *scratch)
{
    if (scratch) {
        for (int k = 0; k < n; k++)
            memcpy(scratch + (size_t)k * block, x + (size_t)from[k] * block, block * sizeof *x);
        memcpy(x, scratch, (size_t)n * block * sizeof *x);
    }
    return (size_t)n * block;
}

#endif
