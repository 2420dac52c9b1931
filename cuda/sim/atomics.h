// The CUDA simulator's atomics: real atomics (GCC's __atomic builtins, sequentially consistent),
// so they stay right if blocks ever run on several OS threads; float and 16-bit float additions
// are compare-and-swap loops, as CUDA documents them.
#ifndef CDL_CUDA_SIM_ATOMICS_H
#define CDL_CUDA_SIM_ATOMICS_H

#include <string.h>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace cuda_sim
{

// *address = op(*address) atomically through the bits of T; returns the old value.
template <typename T, typename Op> T atomic_update(T *address, Op op)
{
    T old = __atomic_load_n(address, __ATOMIC_SEQ_CST);
    while (!__atomic_compare_exchange_n(address, &old, op(old), false, __ATOMIC_SEQ_CST,
                                        __ATOMIC_SEQ_CST)) {
    }
    return old;
}

template <typename F, typename Bits, typename Op> F atomic_update_float(F *address, Op op)
{
    static_assert(sizeof(F) == sizeof(Bits), "bits of the same size");
    Bits *bits = (Bits *)address;
    const Bits old = atomic_update(bits, [&](Bits b) {
        F f;
        memcpy((void *)&f, &b, sizeof f);
        f = op(f);
        Bits out;
        memcpy(&out, (const void *)&f, sizeof out);
        return out;
    });
    F out;
    memcpy((void *)&out, &old, sizeof out);
    return out;
}

} // namespace cuda_sim

#define CUDA_SIM_ATOMIC_INT(T)                                                                     \
    inline T atomicAdd(T *a, T v)                                                                  \
    {                                                                                              \
        return __atomic_fetch_add(a, v, __ATOMIC_SEQ_CST);                                         \
    }                                                                                              \
    inline T atomicSub(T *a, T v)                                                                  \
    {                                                                                              \
        return __atomic_fetch_sub(a, v, __ATOMIC_SEQ_CST);                                         \
    }                                                                                              \
    inline T atomicAnd(T *a, T v)                                                                  \
    {                                                                                              \
        return __atomic_fetch_and(a, v, __ATOMIC_SEQ_CST);                                         \
    }                                                                                              \
    inline T atomicOr(T *a, T v)                                                                   \
    {                                                                                              \
        return __atomic_fetch_or(a, v, __ATOMIC_SEQ_CST);                                          \
    }                                                                                              \
    inline T atomicXor(T *a, T v)                                                                  \
    {                                                                                              \
        return __atomic_fetch_xor(a, v, __ATOMIC_SEQ_CST);                                         \
    }                                                                                              \
    inline T atomicExch(T *a, T v)                                                                 \
    {                                                                                              \
        return __atomic_exchange_n(a, v, __ATOMIC_SEQ_CST);                                        \
    }                                                                                              \
    inline T atomicMax(T *a, T v)                                                                  \
    {                                                                                              \
        return cuda_sim::atomic_update(a, [v](T old) { return old > v ? old : v; });               \
    }                                                                                              \
    inline T atomicMin(T *a, T v)                                                                  \
    {                                                                                              \
        return cuda_sim::atomic_update(a, [v](T old) { return old < v ? old : v; });               \
    }                                                                                              \
    inline T atomicCAS(T *a, T compare, T v)                                                       \
    {                                                                                              \
        __atomic_compare_exchange_n(a, &compare, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);    \
        return compare;                                                                            \
    }
CUDA_SIM_ATOMIC_INT(int)
CUDA_SIM_ATOMIC_INT(unsigned)
CUDA_SIM_ATOMIC_INT(unsigned long long)
#undef CUDA_SIM_ATOMIC_INT

inline unsigned short atomicCAS(unsigned short *a, unsigned short compare, unsigned short v)
{
    __atomic_compare_exchange_n(a, &compare, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
    return compare;
}

// ((old >= val) ? 0 : (old + 1)), CUDA's wrapping increment.
inline unsigned atomicInc(unsigned *a, unsigned val)
{
    return cuda_sim::atomic_update(a, [val](unsigned old) { return old >= val ? 0u : old + 1; });
}

inline float atomicAdd(float *a, float v)
{
    return cuda_sim::atomic_update_float<float, unsigned>(a, [v](float f) { return f + v; });
}

inline double atomicAdd(double *a, double v)
{
    return cuda_sim::atomic_update_float<double, unsigned long long>(
        a, [v](double f) { return f + v; });
}

inline float atomicExch(float *a, float v)
{
    return cuda_sim::atomic_update_float<float, unsigned>(a, [v](float) { return v; });
}

inline __nv_bfloat16 atomicAdd(__nv_bfloat16 *a, __nv_bfloat16 v)
{
    return cuda_sim::atomic_update_float<__nv_bfloat16, unsigned short>(a, [v](__nv_bfloat16 f) {
        return __float2bfloat16(__bfloat162float(f) + __bfloat162float(v));
    });
}

inline __half atomicAdd(__half *a, __half v)
{
    return cuda_sim::atomic_update_float<__half, unsigned short>(
        a, [v](__half f) { return __float2half(__half2float(f) + __half2float(v)); });
}

#endif
