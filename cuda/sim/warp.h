// The CUDA simulator's warp collectives: shuffles and votes over 32-lane warps, with CUDA's
// width and out-of-segment rules; each lane waits (switching fibers) until every lane of the
// mask has arrived.
#ifndef CDL_CUDA_SIM_WARP_H
#define CDL_CUDA_SIM_WARP_H

#include <string.h>

#include <type_traits>

#include "grid.h"

namespace cuda_sim
{

template <typename T> T shuffle(WarpOp op, unsigned mask, T var, unsigned src_lane)
{
    static_assert(std::is_trivially_copyable<T>::value && sizeof(T) <= kWarpValueBytes,
                  "a shuffled value must be trivially copyable and at most 16 bytes");
    alignas(16) unsigned char padded[kWarpValueBytes] = {};
    memcpy(padded, (const void *)&var, sizeof var);
    const void *got = warp_collective(op, mask, padded, kWarpValueBytes, src_lane);
    T out;
    memcpy((void *)&out, got, sizeof out);
    return out;
}

inline unsigned shuffle_lane()
{
    return cuda_sim_self->lane;
}

} // namespace cuda_sim

// The lane read: srcLane modulo width within the caller's segment of width lanes.
template <typename T> T __shfl_sync(unsigned mask, T var, int src_lane, int width = warpSize)
{
    const unsigned lane = cuda_sim::shuffle_lane();
    const unsigned segment = lane & ~(unsigned)(width - 1);
    return cuda_sim::shuffle(cuda_sim::WARP_SHFL, mask, var,
                             segment + ((unsigned)src_lane & (unsigned)(width - 1)));
}

// A lane whose source falls before its segment keeps its own value.
template <typename T> T __shfl_up_sync(unsigned mask, T var, unsigned delta, int width = warpSize)
{
    const unsigned lane = cuda_sim::shuffle_lane();
    const unsigned segment = lane & ~(unsigned)(width - 1);
    const int src = (int)lane - (int)delta;
    return cuda_sim::shuffle(cuda_sim::WARP_SHFL_UP, mask, var,
                             src < (int)segment ? lane : (unsigned)src);
}

// A lane whose source falls past its segment keeps its own value.
template <typename T> T __shfl_down_sync(unsigned mask, T var, unsigned delta, int width = warpSize)
{
    const unsigned lane = cuda_sim::shuffle_lane();
    const unsigned src = lane + delta;
    return cuda_sim::shuffle(cuda_sim::WARP_SHFL_DOWN, mask, var,
                             src > (lane | (unsigned)(width - 1)) ? lane : src);
}

// A lane whose partner falls past its segment keeps its own value (earlier segments are read).
template <typename T> T __shfl_xor_sync(unsigned mask, T var, int lane_mask, int width = warpSize)
{
    const unsigned lane = cuda_sim::shuffle_lane();
    const unsigned src = lane ^ (unsigned)lane_mask;
    return cuda_sim::shuffle(cuda_sim::WARP_SHFL_XOR, mask, var,
                             src > (lane | (unsigned)(width - 1)) ? lane : src);
}

inline unsigned __ballot_sync(unsigned mask, int predicate)
{
    return cuda_sim::shuffle(cuda_sim::WARP_BALLOT, mask, predicate, 0);
}

inline int __any_sync(unsigned mask, int predicate)
{
    return (int)cuda_sim::shuffle(cuda_sim::WARP_ANY, mask, predicate, 0);
}

inline int __all_sync(unsigned mask, int predicate)
{
    return (int)cuda_sim::shuffle(cuda_sim::WARP_ALL, mask, predicate, 0);
}

inline void __syncwarp(unsigned mask = 0xffffffffu)
{
    cuda_sim::warp_collective(cuda_sim::WARP_SYNC, mask, nullptr, 0, 0);
}

#endif
