/* Quantization arithmetic of int8 inference: per-output-channel symmetric int8 weights and
 * per-tensor asymmetric uint8 activations, as PyTorch's fbgemm backend quantizes them.
 *
 *   weights   w ~ scale[j] * q[j][k],         q in [-127, 127], scale[j] = max_k |w[j][k]| / 127
 *   inputs    x ~ scale * (q - zero_point),   q in [0, 255], from a range [min, max] widened to
 *                                             hold 0 (so 0, the padding, is exact)
 *
 * PyTorch divides the weight range by 127.5 and clamps to [-128, 127]; cdl keeps the grid
 * symmetric (-128 unused), and uses all 8 bits of the inputs where fbgemm's AVX2 kernels keep
 * 7 (reduce_range): VNNI's u8 x s8 products do not saturate. */
#ifndef CDL_OPS_QUANTIZE_H
#define CDL_OPS_QUANTIZE_H

#include <stddef.h>
#include <stdint.h>

typedef struct QuantParams {
    float scale;    /* > 0 */
    int zero_point; /* 0..255: the code of 0.0 */
} QuantParams;

/* The affine uint8 grid of values in [min, max] (min <= max; the range is widened to hold 0):
 * scale = (max - min) / 255, zero_point = round(-min / scale); a range of zeros gives scale 1. */
QuantParams quant_params_u8(float min, float max);

/* *min and *max of x[0..n) (both 0 when n is 0). */
void quant_range(const float *x, size_t n, float *min, float *max);

/* The code of x: clamp(round(x / scale) + zero_point, 0, 255) (NaN gives 0). */
static inline uint8_t quantize_u8(float x, QuantParams p)
{
    const float q = __builtin_roundf(x / p.scale) + (float)p.zero_point;
    return (uint8_t)(!(q > 0.0f) ? 0.0f : q > 255.0f ? 255.0f : q);
}

/* q[j][k] and scale[j] of the rows w[n][k] (symmetric, per row; an all-zero row gets scale 1). */
void quantize_weights_s8(const float *w, int n, int k, int8_t *q, float *scale);

#endif
