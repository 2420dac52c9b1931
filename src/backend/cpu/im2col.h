/* im2col / col2im: unfold one image's convolution windows into a column matrix so that a
 * convolution becomes one matrix multiply, and fold column gradients back. */
#ifndef CDL_IM2COL_H
#define CDL_IM2COL_H

#include <stddef.h>

#include "core/window2d.h"

/* im [c][h][w] -> col [c*size_h*size_w][out_h*out_w] for the window win, row r = (channel, ki,
 * kj), column p = (oy, ox), where rows are ldcol floats apart (ldcol >= out_h*out_w, so several
 * images can sit side by side). Out-of-image taps are 0. */
void im2col(const float *im, int c, int h, int w, Window2d win, float *col, size_t ldcol);

/* The transpose of im2col: ADDS every column entry into the image pixel it came from.
 * Clobbers col: entries of out-of-image taps may be set to 0 on the way. */
void col2im(float *col, int c, int h, int w, Window2d win, size_t ldcol, float *im);

#endif
