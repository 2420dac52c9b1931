/* Direct convolution of few input channels (a network's first layer: 1-3 channels), stride 1,
 * one group: the forward and the weight gradient of one image, without im2col or a gemm, whose
 * inner dimension (channels * size * size, 9-27) would be too short to run fast.
 *
 *   x     [c][h][w]            one image
 *   w     [filters][c][size][size]
 *   out   [filters][oh][ow]    oh = h + 2*pad - size + 1, ow likewise
 *
 * Both copy the image into buf first as size column-shifted, zero-bordered planes of ow columns,
 * buf [c][kj][oh + size - 1][ow] (then a vector's slack): tap (ch, ki, kj) of output position
 * p = oy*ow + ox is buf[ch][kj][ki*ow + p], so every tap is one contiguous run over the whole
 * output plane, with no row ends inside it. AVX-512 (16 positions a vector) or else AVX2 + FMA
 * (8) where the compiler targets them, else plain C loops. */
#ifndef CDL_CONV_SMALL_H
#define CDL_CONV_SMALL_H

#include <stddef.h>

/* Taps (channels * size * size) at most: beyond, the gemm's inner dimension is long enough. */
#define CONV_SMALL_MAX_TAPS 32

typedef struct ConvSmall {
    int c, h, w, filters, size, pad, oh, ow;
    int rows; /* buf: rows per shifted plane */
} ConvSmall;

/* The plan for a stride-1 one-group convolution; 0 when it is not one for this kernel (too many
 * taps, or an empty output). */
int conv_small_plan(ConvSmall *s, int c, int h, int w, int filters, int size, int pad);

/* Floats of buf. */
size_t conv_small_buf_floats(const ConvSmall *s);

/* out = the convolution of x with w. */
void conv_small_forward(const ConvSmall *s, const float *x, const float *w, float *out, float *buf);

/* dw [filters][c][size][size] = beta * dw + the gradient of delta [filters][oh][ow] by the
 * weights, for the image x; sums within the image in float, in a fixed order. */
void conv_small_weight_grads(const ConvSmall *s, const float *x, const float *delta, float beta,
                             float *dw, float *buf);

#endif
