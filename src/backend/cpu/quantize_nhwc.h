/* An int8 convolution's float32 input quantized into the uint8 codes its oneDNN primitive reads,
 * transposed from NCHW into nhwc as it is quantized (16 x 16 tiles in registers, 8 x 8 on AVX2), in
 * one pass that reads each float once and writes each code once: oneDNN's reorder with scales did
 * the same at about 1.3 ns a value on Zen 4, a sixth of resnet50's int8 forward.
 *
 *   x     [batch][c][spatial]   float32 (NCHW, spatial = h * w)
 *   codes [batch][spatial][c]   uint8 (nhwc): round-half-even(x * inv_scale + zero_point)
 *                               saturated at 0 and 255 (NaN: 0), as oneDNN's reorder
 */
#ifndef CDL_QUANTIZE_NHWC_H
#define CDL_QUANTIZE_NHWC_H

#include <stddef.h>
#include <stdint.h>

/* 1 when quantize_nhwc runs in this build for c channels: AVX-512 with c a multiple of 16, or AVX2
 * (8 x 8 tiles) with c a multiple of 8; no kernel otherwise. */
int quantize_nhwc_runs(int c);

/* codes = the quantization of x (see the top), for c with quantize_nhwc_runs. */
void quantize_nhwc(const float *x, uint8_t *codes, int batch, int c, size_t spatial,
                   float inv_scale, int zero_point);

#endif
