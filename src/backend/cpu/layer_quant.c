/* The input grid of a quantized layer's forward (backend/cpu/layer_quant.h). */
#include "backend/cpu/layer_quant.h"

QuantParams layer_quant_input(LayerQuant *q, const float *x, size_t rows, size_t cols, size_t ld)
{
    if (q->static_input)
        return q->input;
    float min = 0.0f, max = 0.0f;
    for (size_t r = 0; r < rows; r++) {
        float lo, hi;
        quant_range(x + r * ld, cols, &lo, &hi);
        min = r == 0 || lo < min ? lo : min;
        max = r == 0 || hi > max ? hi : max;
    }
    if (q->observe) {
        q->seen_min = q->seen && q->seen_min < min ? q->seen_min : min;
        q->seen_max = q->seen && q->seen_max > max ? q->seen_max : max;
        q->seen = 1;
    }
    return quant_params_u8(min, max);
}
