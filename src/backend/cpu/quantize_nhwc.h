/* An int8 convolution's float32 input quantized into the uint8 codes its oneDNN primitive reads,
 * transposed from NCHW into nhwc as it is quantized (16 x 16 tiles in registers, 8 x 8 on AVX2), in
 * one pass that reads each float once and writes each code once: oneDNN's reorder with scales did
 * the same at about 1.3 ns a value on Zen 4, a sixth of resnet50's int8 forward.
 *
 *   x     [batch][c][spatial]   float32 (NCHW, spatial = h * w)
 *   codes [batch][spatial][c]   uint8 (nhwc): round-half-even(x * inv_scale + zero_point)
 *                               clamped to 0..QUANT_CODE_MAX before the rounding (NaN: 0):
 *                               quantize_code's, the own int8 kernels' codes
 */
#ifndef CDL_QUANTIZE_NHWC_H
#define CDL_QUANTIZE_NHWC_H

#include <stddef.h>
#include <stdint.h>

/* codes = the quantization of x (see the top), for any c: tiles of 16 channels with AVX-512, of 8
 * with AVX2, the rest one value at a time. */
void quantize_nhwc(const float *x, uint8_t *codes, int batch, int c, size_t spatial,
                   float inv_scale, int zero_point);

#endif
