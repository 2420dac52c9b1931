/* A training pass's loss kept on the device (pass_loss.cu): C entry point. The loss layers of a
 * pass whose loss the host reads at the step's end (GpuHandles.loss_slot) add their totals there
 * as the host adds them into StepContext.loss. */
#ifndef CDL_CUDA_PASS_LOSS_H
#define CDL_CUDA_PASS_LOSS_H

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* *slot (device) += (float)(*total / divisor), total (device) a layer's loss not yet divided, in
 * float32 as the host's `*ctx->loss += (float)(total / ctx->loss_divisor)`. */
cudaError_t cuda_pass_loss_add(float *slot, const double *total, float divisor,
                               cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
