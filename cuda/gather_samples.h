/* Moving the per-sample blocks of a layer's cache between samples on the device: the GPU kernels'
 * LayerKernels.gather_samples (beam search keeping hypotheses that extend others), as
 * backend/cpu/gather_samples.h does it in host memory. */
#ifndef CDL_CUDA_GATHER_SAMPLES_H
#define CDL_CUDA_GATHER_SAMPLES_H

#include <stddef.h>

#include "core/backend.h"

/* x [batch][block] on the device, blocks of bytes bytes (float32 or 16-bit elements): sample k's
 * block becomes sample from[k]'s for k < n, through scratch (n blocks) in device memory (NULL moves
 * nothing): device-to-device copies queued on exec's stream, every block that moves read into
 * scratch before any is written back (a parent may itself be replaced); a sample that keeps its own
 * block is not copied. Returns the floats scratch needs. */
size_t gpu_gather_sample_blocks(const ExecContext *exec, void *x, size_t bytes, const int *from,
                                int n, float *scratch);

#endif
