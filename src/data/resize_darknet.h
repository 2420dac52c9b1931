/* darknet's resize_image, for output parity with darknet's `classifier predict` letterbox:
 * bilinear with corner-aligned sample positions (column x of the output samples the input at
 * x * (in_w - 1) / (out_w - 1)), no antialiasing when shrinking, rounded as darknet's two
 * passes (across, then down, in float) round. */
#ifndef CDL_RESIZE_DARKNET_H
#define CDL_RESIZE_DARKNET_H

#include "data/image.h"

/* out [c][h][w] = img resized as darknet does, after converting it to c channels as
 * image_resize does (3 to 1: ITU-R 601 luma; 1 to 3: replication). h, w >= 1. Allocates
 * nothing. */
void resize_darknet(const Image *img, int c, int h, int w, float *out);

#endif
