/* Quantization arithmetic of int8 inference (backend/cpu/quantize.h). */
#include "backend/cpu/quantize.h"

#include <math.h>

QuantParams quant_params_u8(float min, float max)
{
    min = min < 0.0f ? min : 0.0f;
    max = max > 0.0f ? max : 0.0f;
    if (max - min <= 0.0f || !isfinite(max - min))
        return (QuantParams){1.0f, 0};
    const float top = (float)QUANT_CODE_MAX, scale = (max - min) / top;
    const float zp = roundf(-min / scale);
    return (QuantParams){scale, (int)(zp < 0.0f ? 0.0f : zp > top ? top : zp)};
}

void quant_range(const float *x, size_t n, float *min, float *max)
{
    float lo = n ? x[0] : 0.0f, hi = lo;
#pragma omp parallel for simd reduction(min : lo) reduction(max : hi) if (parallel : n >= 65536)
    for (size_t i = 0; i < n; i++) {
        lo = x[i] < lo ? x[i] : lo;
        hi = x[i] > hi ? x[i] : hi;
    }
    *min = lo;
    *max = hi;
}

void quantize_weights_s8(const float *w, int n, int k, int8_t *q, float *scale)
{
    for (int j = 0; j < n; j++) {
        const float *row = w + (size_t)j * k;
        float amax = 0.0f;
        for (int i = 0; i < k; i++)
            amax = fabsf(row[i]) > amax ? fabsf(row[i]) : amax;
        scale[j] = amax > 0.0f ? amax / 127.0f : 1.0f;
        for (int i = 0; i < k; i++) {
            const float v = roundf(row[i] / scale[j]);
            q[(size_t)j * k + i] = (int8_t)(v < -127.0f ? -127.0f : v > 127.0f ? 127.0f : v);
        }
    }
}
