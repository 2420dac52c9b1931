/* tf32 and fp16 rounding: what NVIDIA's tensor cores take for float32 products (tf32) and what
 * torch.autocast("cuda", torch.float16) does to a product's operands (fp16), kept in float32
 * storage, as bf16.h does for bf16. Both have 10 mantissa bits, so a product of two rounded
 * values (22 significant bits) is exact in float32: the float32 sgemm on rounded operands gives
 * their numerics with float32 accumulation. cuda/kernels/operand.cu rounds the same way. */
#ifndef CDL_ROUND_H
#define CDL_ROUND_H

#include <math.h>
#include <stdint.h>
#include <string.h>

/* x rounded to tf32 (the low 13 mantissa bits dropped), ties to even: infinities stay, a NaN
 * becomes the quiet NaN 0x7fc00000, a value past the largest tf32 becomes an infinity. */
static inline float tf32_round(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    u = (u & 0x7fffffffu) > 0x7f800000u ? 0x7fc00000u
                                        : (u + 0xfffu + ((u >> 13) & 1u)) & 0xffffe000u;
    memcpy(&x, &u, sizeof x);
    return x;
}

/* x rounded to the nearest IEEE half (fp16) value, ties to even, as __float2half_rn: a NaN
 * becomes the quiet NaN, magnitudes from 65520 (halfway past the largest half, 65504) become
 * infinities, those below 2^-14 round to the subnormals' multiples of 2^-24. Within the normal
 * range a half is a tf32 value. */
static inline float fp16_round(float x)
{
    const float a = fabsf(x);
    if (a >= 65520.0f)
        return copysignf(INFINITY, x);
    if (a < 0x1p-14f)
        return rintf(x * 0x1p24f) * 0x1p-24f; /* the default rounding: to nearest even */
    return tf32_round(x);
}

#endif
