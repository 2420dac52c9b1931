/* Quantization arithmetic of int8 inference: per-output-channel symmetric int8 weights and
 * per-tensor asymmetric uint8 activations, as PyTorch's fbgemm backend quantizes them.
 *
 *   weights   w ~ scale[j] * q[j][k],         q in [-127, 127], scale[j] = max_k |w[j][k]| / 127
 *   inputs    x ~ scale * (q - zero_point),   q in [0, 127], from a range [min, max] widened to
 *                                             hold 0 (so 0, the padding, is exact)
 *
 * PyTorch divides the weight range by 127.5 and clamps to [-128, 127]; cdl keeps the grid
 * symmetric (-128 unused). The inputs keep 7 bits of their uint8, as PyTorch's x86 backend
 * (reduce_range=True): AVX2 multiplies them in vpmaddubsw pairs, which would saturate on 8. */
#ifndef CDL_OPS_QUANTIZE_H
#define CDL_OPS_QUANTIZE_H

#include <stddef.h>
#include <stdint.h>

/* The largest code of an input: 7 bits, as fbgemm's reduce_range on AVX2, so that the AVX2
 * kernels' int16 sums of two code * weight products cannot saturate (2 * 127 * 128 < 2^15). */
#define QUANT_CODE_MAX 127

typedef struct QuantParams {
    float scale;    /* > 0 */
    int zero_point; /* 0..QUANT_CODE_MAX: the code of 0.0 */
} QuantParams;

/* The affine grid of codes 0..QUANT_CODE_MAX for values in [min, max] (min <= max; the range
 * is widened to hold 0): scale = (max - min) / QUANT_CODE_MAX, zero_point = round(-min / scale);
 * a range of zeros gives scale 1. */
QuantParams quant_params_u8(float min, float max);

/* *min and *max of x[0..n) (both 0 when n is 0). */
void quant_range(const float *x, size_t n, float *min, float *max);

/* The code of x on a grid whose 1 / scale is inv_scale: round-to-nearest-even of
 * clamp(x * inv_scale + zero_point, 0, QUANT_CODE_MAX), NaN giving 0. Multiplied by the inverse and
 * clamped before rounding (as fbgemm), in this order, so that a vector quantizer (max, min,
 * round) gives the same codes. */
static inline int quantize_code(float x, float inv_scale, int zero_point)
{
    float v = x * inv_scale;
    v += (float)zero_point;
    v = v > 0.0f ? v : 0.0f;
    v = v < (float)QUANT_CODE_MAX ? v : (float)QUANT_CODE_MAX;
    return (int)__builtin_rintf(v);
}

/* quantize_code of x on the grid p. */
static inline uint8_t quantize_u8(float x, QuantParams p)
{
    return (uint8_t)quantize_code(x, 1.0f / p.scale, p.zero_point);
}

/* q[j][k] and scale[j] of the rows w[n][k] (symmetric, per row; an all-zero row gets scale 1). */
void quantize_weights_s8(const float *w, int n, int k, int8_t *q, float *scale);

#endif
