/* bfloat16 rounding: what torch.autocast("cpu", torch.bfloat16) does to the operands of a
 * convolution or matrix product, kept in float32 storage.
 *
 * bf16 is float32 with the low 16 mantissa bits dropped (8 significant bits). A product of two
 * bf16 values has at most 16 significant bits, so it is exact in float32: rounding the operands
 * and calling the float32 sgemm gives bf16 numerics with float32 accumulation, the same as a
 * native bf16 kernel up to the order of the sums. */
#ifndef CDL_BF16_H
#define CDL_BF16_H

#include <stddef.h>
#include <stdint.h>

#include "backend/cpu/round.h"

/* x rounded to the nearest bf16 value, ties to even (c10::BFloat16's round_to_nearest_even):
 * infinities stay, a NaN becomes the quiet NaN 0x7fc00000, subnormals round like the rest and
 * a value past the largest bf16 becomes an infinity. */
static inline float bf16_round(float x)
{
    return round_dropping_bits(x, 16);
}

/* dst[i] = bf16_round(src[i]) for i < n; dst may be src (rounding in place). */
void bf16_round_floats(float *dst, const float *src, size_t n);

/* dst[i] = the bf16 bits (the high half) of bf16_round(src[i]) for i < n: packed bf16 storage,
 * as oneDNN's bf16 tensors hold it. */
void bf16_pack(uint16_t *dst, const float *src, size_t n);

#endif
