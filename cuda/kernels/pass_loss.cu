// A loss layer's total added to its pass's loss on the device, rounded as the host rounds it.
//   slot, total: one value each
#include "pass_loss.h"

#include "launch.h"

// One thread: the division in double, the sum in float32, each correctly rounded on the device as
// on the host (no product that a compiler could fuse), so the pass's loss is the host's bit for
// bit.
__global__ void pass_loss_add_kernel(float *slot, const double *total, float divisor)
{
    *slot += (float)(*total / (double)divisor);
}

extern "C" cudaError_t cuda_pass_loss_add(float *slot, const double *total, float divisor,
                                          cudaStream_t stream)
{
    CUDA_LAUNCH(pass_loss_add_kernel, 1, 1, 0, stream, slot, total, divisor);
    return cuda_launch_error();
}
