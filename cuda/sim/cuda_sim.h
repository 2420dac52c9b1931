// What a .cu file sees instead of nvcc's built-ins when compiled by the host C++ compiler for
// the CUDA simulator (make GPU=sim, CDL_GPU_SIM): CUDA's own runtime types and its
// cuda_bf16.h / cuda_fp16.h (host types under g++), the qualifiers, the built-in index
// variables, __shared__ as per-block storage, barriers, warp collectives, atomics, intrinsics
// and the launcher. Include it through cuda/launch.h, never directly.
#ifndef CDL_CUDA_SIM_H
#define CDL_CUDA_SIM_H

#include <cuda_bf16.h> // also brings cuda_runtime_api.h, driver_types.h, vector_types.h
#include <cuda_fp16.h>
#include <vector_functions.h>

#include "grid.h"

// CUDA's host_defines.h gave these nvcc meanings; a host function is what each one becomes.
#undef __global__
#undef __device__
#undef __host__
#undef __shared__
#undef __constant__
#undef __managed__
#undef __forceinline__
#undef __noinline__
#define __global__
#define __device__
#define __host__
#define __constant__
#define __managed__
#define __forceinline__ inline __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(...)
#ifndef __grid_constant__
#define __grid_constant__
#endif
// Blocks of a launch run one at a time on an OS thread, so storage per OS thread is storage per
// block. It keeps the previous block's values (uninitialised on a GPU). Dynamic shared memory
// (extern __shared__ on a GPU) comes from CUDA_DYNAMIC_SHARED in cuda/launch.h.
#define __shared__ static __thread

#define threadIdx (cuda_sim_self->thread_idx)
#define blockIdx cuda_sim_block_idx
#define blockDim cuda_sim_block_dim
#define gridDim cuda_sim_grid_dim
static constexpr int warpSize = 32;

// Every thread of the block must reach the same __syncthreads (file:line), as CUDA requires.
#define __syncthreads() cuda_sim::syncthreads(__FILE__, __LINE__)

#include "atomics.h"
#include "intrinsics.h"
#include "launcher.h"
#include "warp.h"

#endif
