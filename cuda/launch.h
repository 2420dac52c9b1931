/* The one way shared CUDA code launches a kernel, and declares dynamic shared memory, whether
 * nvcc builds it for a GPU (make GPU=1) or the host C++ compiler builds it for the CPU simulator
 * (make GPU=sim, CDL_GPU_SIM, cuda/sim/):
 *
 *   CUDA_LAUNCH(layernorm_forward_kernel<float>, grid, block, shared_bytes, stream, out, inp, C);
 *   cudaError_t err = cuda_launch_error();   // the launch's own error, as <<<>>> leaves it
 *
 *   CUDA_DYNAMIC_SHARED(float, scratch);     // extern __shared__ float scratch[];
 *
 * A kernel name with a comma (two template arguments) goes in parentheses. Never write <<<>>>
 * in shared code: the simulator cannot see it. */
#ifndef CDL_CUDA_LAUNCH_H
#define CDL_CUDA_LAUNCH_H

#ifdef CDL_GPU_SIM
#include "sim/cuda_sim.h"

#define CUDA_LAUNCH(kernel, grid, block, shared_bytes, stream, ...)                                \
    cuda_sim::launch(#kernel, kernel, (grid), (block), (shared_bytes), (stream), ##__VA_ARGS__)
#define CUDA_DYNAMIC_SHARED(type, name) type *name = (type *)cuda_sim::dynamic_shared()

#else
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#define CUDA_LAUNCH(kernel, grid, block, shared_bytes, stream, ...)                                \
    kernel<<<(grid), (block), (shared_bytes), (stream)>>>(__VA_ARGS__)
#define CUDA_DYNAMIC_SHARED(type, name) extern __shared__ type name[]
#endif

/* The error of the last launch (a bad configuration), cleared by reading it: cudaGetLastError. */
static inline cudaError_t cuda_launch_error(void)
{
    return cudaGetLastError();
}

#endif
