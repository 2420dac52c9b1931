// The CUDA simulator's device math and bit intrinsics on the host: the fast-math forms
// (__expf, __fdividef, ...) as the correctly rounded libm functions (a GPU's are approximate:
// compare with tolerances, never bits), CUDA's integer min/max, bit casts and cache-hinted loads.
#ifndef CDL_CUDA_SIM_INTRINSICS_H
#define CDL_CUDA_SIM_INTRINSICS_H

#include <math.h>
#include <string.h>

#include <atomic>

inline float __expf(float x)
{
    return expf(x);
}
inline float __logf(float x)
{
    return logf(x);
}
inline float __log2f(float x)
{
    return log2f(x);
}
inline float __sinf(float x)
{
    return sinf(x);
}
inline float __cosf(float x)
{
    return cosf(x);
}
inline float __tanf(float x)
{
    return tanf(x);
}
inline float __powf(float x, float y)
{
    return powf(x, y);
}
inline float exp10f(float x)
{
    return powf(10.0f, x);
}
inline float __fdividef(float x, float y)
{
    return x / y;
}
inline float rsqrtf(float x)
{
    return 1.0f / sqrtf(x);
}
inline double rsqrt(double x)
{
    return 1.0 / sqrt(x);
}
inline float __frsqrt_rn(float x)
{
    return 1.0f / sqrtf(x);
}
inline float __fsqrt_rn(float x)
{
    return sqrtf(x);
}
inline float __frcp_rn(float x)
{
    return 1.0f / x;
}
inline float __fadd_rn(float x, float y)
{
    return x + y;
}
inline float __fmul_rn(float x, float y)
{
    return x * y;
}
inline float __fmaf_rn(float x, float y, float z)
{
    return fmaf(x, y, z);
}
inline float __saturatef(float x)
{
    return x < 0.0f ? 0.0f : x > 1.0f ? 1.0f : x;
}
inline int __float2int_rn(float x)
{
    return (int)nearbyintf(x);
}
inline int __float2int_rz(float x)
{
    return (int)x;
}
inline float __int2float_rn(int x)
{
    return (float)x;
}

inline int __float_as_int(float x)
{
    int i;
    memcpy(&i, &x, sizeof i);
    return i;
}
inline unsigned __float_as_uint(float x)
{
    unsigned u;
    memcpy(&u, &x, sizeof u);
    return u;
}
inline float __int_as_float(int i)
{
    float x;
    memcpy(&x, &i, sizeof x);
    return x;
}
inline float __uint_as_float(unsigned u)
{
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

inline int __popc(unsigned x)
{
    return __builtin_popcount(x);
}
inline int __popcll(unsigned long long x)
{
    return __builtin_popcountll(x);
}
inline int __clz(int x)
{
    return x ? __builtin_clz((unsigned)x) : 32;
}
inline int __ffs(int x)
{
    return __builtin_ffs(x);
}
inline unsigned __brev(unsigned x)
{
    unsigned r = 0;
    for (int i = 0; i < 32; i++)
        r |= (x >> i & 1u) << (31 - i);
    return r;
}

// CUDA's min and max are overloaded device functions, not macros.
inline int min(int a, int b)
{
    return a < b ? a : b;
}
inline int max(int a, int b)
{
    return a > b ? a : b;
}
inline unsigned min(unsigned a, unsigned b)
{
    return a < b ? a : b;
}
inline unsigned max(unsigned a, unsigned b)
{
    return a > b ? a : b;
}
inline long long min(long long a, long long b)
{
    return a < b ? a : b;
}
inline long long max(long long a, long long b)
{
    return a > b ? a : b;
}
inline float min(float a, float b)
{
    return fminf(a, b);
}
inline float max(float a, float b)
{
    return fmaxf(a, b);
}

// Loads and stores with cache hints are plain accesses.
template <typename T> T __ldg(const T *p)
{
    return *p;
}
template <typename T> T __ldcg(const T *p)
{
    return *p;
}
template <typename T> T __ldcs(const T *p)
{
    return *p;
}
template <typename T> void __stcg(T *p, T v)
{
    *p = v;
}
template <typename T> void __stcs(T *p, T v)
{
    *p = v;
}

inline void __threadfence()
{
    std::atomic_thread_fence(std::memory_order_seq_cst);
}
inline void __threadfence_block()
{
    std::atomic_thread_fence(std::memory_order_seq_cst);
}
[[noreturn]] inline void __trap()
{
    __builtin_trap();
}

#endif
