/* im2col / col2im: unfold one image's convolution windows into a column matrix so that a
 * convolution becomes one matrix multiply, and fold column gradients back. */
#ifndef CDL_IM2COL_H
#define CDL_IM2COL_H

#include <stddef.h>

/* Output extent along one axis of a convolution or pooling window; < 1 means empty.
 * Computed as a floor even when the window is larger than the padded input. */
static inline int conv_out_size(int in, int size, int stride, int pad)
{
    int span = in + 2 * pad - size;
    return span < 0 ? 0 : span / stride + 1;
}

/* im [c][h][w] -> col [c*size*size][out_h*out_w], row r = (channel, ki, kj), column
 * p = (oy, ox), where rows are ldcol floats apart (ldcol >= out_h*out_w, so several images
 * can sit side by side). Out-of-image taps are 0. */
void im2col(const float *im, int c, int h, int w, int size, int stride, int pad, float *col,
            size_t ldcol);

/* The transpose of im2col: ADDS every column entry into the image pixel it came from.
 * Clobbers col: entries of out-of-image taps may be set to 0 on the way. */
void col2im(float *col, int c, int h, int w, int size, int stride, int pad, size_t ldcol,
            float *im);

#endif
