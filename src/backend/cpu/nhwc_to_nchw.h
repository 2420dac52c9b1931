/* An int8 convolution's float32 output moved from its oneDNN primitive's nhwc into cdl's NCHW
 * (16 x 16 tiles transposed in registers, 8 x 8 on AVX2), where no reader takes nhwc: oneDNN's
 * reorder did the same at about 1.4 ns a value on Zen 4 (resnet50's downsampling blocks' last
 * convolutions).
 *
 *   x [batch][spatial][c]   float32 (nhwc, spatial = h * w)
 *   y [batch][c][spatial]   float32 (NCHW), the same values
 */
#ifndef CDL_NHWC_TO_NCHW_H
#define CDL_NHWC_TO_NCHW_H

#include <stddef.h>

/* 1 when nhwc_to_nchw runs in this build for c channels: AVX-512 with c a multiple of 16, or AVX2
 * (8 x 8 tiles) with c a multiple of 8; no kernel otherwise. */
int nhwc_to_nchw_runs(int c);

/* y = x moved from nhwc to NCHW (see the top), for c with nhwc_to_nchw_runs. */
void nhwc_to_nchw(const float *x, float *y, int batch, int c, size_t spatial);

#endif
