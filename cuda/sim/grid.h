// The CUDA simulator's execution of one launch: every block in turn on this OS thread, its
// threads as fibers; __syncthreads and the warp collectives switch fibers, and a block whose
// threads can no longer all meet (a barrier reached by 224 of 256 threads, a lane that left a
// warp collective) aborts with the kernel, the block and who arrived where.
#ifndef CDL_CUDA_SIM_GRID_H
#define CDL_CUDA_SIM_GRID_H

#include <stddef.h>
#include <vector_types.h>

#include "fiber.h"

namespace cuda_sim
{

// One simulated CUDA thread. threadIdx reads the running one's through `cuda_sim_self`.
struct Thread {
    uint3 thread_idx;
    unsigned lane;               // linear index in the block % 32
    unsigned warp;               // linear index in the block / 32
    int waiting;                 // a Wait below
    unsigned barrier_generation; // the barrier's generation it waits to see pass
    Fiber *fiber;                // a stack from the pool while started and not yet returned
};

enum Wait { NOT_STARTED, RUNNING, AT_BARRIER, AT_WARP, DONE };

// The warp collectives: each lane deposits up to 16 bytes and gets its result back once every
// lane named in the mask has arrived at the same collective with the same mask.
enum WarpOp {
    WARP_SYNC,
    WARP_SHFL,
    WARP_SHFL_UP,
    WARP_SHFL_DOWN,
    WARP_SHFL_XOR,
    WARP_BALLOT,
    WARP_ANY,
    WARP_ALL,
};
static const size_t kWarpValueBytes = 16;

// A launch's shape and its type-erased body: body(ctx) runs the kernel for the current thread.
struct Launch {
    const char *kernel_name;
    dim3 grid, block;
    size_t shared_bytes;
    void (*body)(void *ctx);
    void *ctx;
};

// Runs every block of the launch; returns when all threads of all blocks have finished.
void run_grid(const Launch &launch);

// __syncthreads() at file:line for the running thread.
void syncthreads(const char *file, int line);

// The running lane's part of warp collective `op`: its value (bytes <= kWarpValueBytes), the lane
// it reads (shuffles; computed by the caller from the lane, width and offset); returns its
// result, valid until the lane's next collective.
const void *warp_collective(WarpOp op, unsigned mask, const void *value, size_t bytes,
                            unsigned src_lane);

// The launch's dynamic shared memory (extern __shared__), for the running block.
void *dynamic_shared();

} // namespace cuda_sim

extern __thread cuda_sim::Thread *cuda_sim_self;
extern __thread uint3 cuda_sim_block_idx;
extern __thread uint3 cuda_sim_block_dim;
extern __thread uint3 cuda_sim_grid_dim;

#endif
