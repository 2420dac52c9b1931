/* int8 weights of a layer (`cdl quantize`): what a quantized convolution, connected or linear
 * layer holds, and the quantization of its input at each forward.
 *
 * The weights W [channels][k] (a convolution's [filters][c*size*size], a dense layer's
 * [output][inputs]) are stored as int8 values with one symmetric scale per output channel
 * (backend/cpu/quantize.h); the float Param keeps their dequantized values, scale * q, for what
 * reads floats (export, `cdl info`). The input is quantized per tensor to uint8: from its range in
 * every forward (dynamic, as torch.ao.quantization.quantize_dynamic), or on a grid fixed by
 * calibration (static). */
#ifndef CDL_CORE_LAYER_QUANT_H
#define CDL_CORE_LAYER_QUANT_H

#include <stddef.h>
#include <stdint.h>

#include "backend/cpu/qgemm.h"

typedef struct LayerQuant {
    int param;       /* index in l->params of the quantized weights */
    int channels, k; /* W is [channels][k] */
    int8_t *values;  /* [channels][k], as the checkpoint stores them */
    float *scales;   /* [channels] */
    int8_t *packed;  /* qgemm_pack's panels of values */
    int32_t *row_sums;
    int8_t *padded; /* qgemm_cols_pack's rows of values (convolutions) */
    QMatrix matrix; /* packed, row_sums, padded and scales, for qgemm_float */
    /* 1: the input is quantized on `input` (calibrated); 0: on its own range in every forward. */
    int static_input;
    QuantParams input;
    /* Calibration: while observe is 1, each forward widens [seen_min, seen_max] by its input's
     * range (seen is 0 before the first). */
    int observe, seen;
    float seen_min, seen_max;
} LayerQuant;

/* The grid the layer's input, rows x[r * ld + 0..cols) for r < rows (the whole mini-batch), is
 * quantized on this forward: the static one, or quant_params_u8 of x's range (recorded when
 * observing). */
QuantParams layer_quant_input(LayerQuant *q, const float *x, size_t rows, size_t cols, size_t ld);

#endif
