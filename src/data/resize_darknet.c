/* darknet's bilinear resize (image.c resize_image in pjreddie's darknet), computed per output
 * pixel from the same float expressions as its two passes, so no intermediate image is
 * needed. Its quirks are kept: the last output column copies the last input column, and the
 * last output row takes only the (1 - dy) share of its upper source row. */
#include "data/resize_darknet.h"

#include <stddef.h>

/* Input pixel (x, y) of output channel k, converted as image_resize converts channels. */
static float pixel(const Image *img, int c, int k, int x, int y)
{
    const size_t plane = (size_t)img->h * img->w, at = (size_t)y * img->w + (size_t)x;
    if (c == 1 && img->c >= 3)
        return 0.299f * img->data[at] + 0.587f * img->data[plane + at] +
               0.114f * img->data[2 * plane + at];
    const int ch = k < img->c ? k : img->c - 1;
    return img->data[(size_t)ch * plane + at];
}

/* The first pass's value at output column x of input row y (darknet's `part` image). */
static float across(const Image *img, int c, int k, int x, int y, int w, float w_scale)
{
    if (x == w - 1 || img->w == 1)
        return pixel(img, c, k, img->w - 1, y);
    const float sx = (float)x * w_scale;
    const int ix = (int)sx;
    const float dx = sx - (float)ix;
    return (1 - dx) * pixel(img, c, k, ix, y) + dx * pixel(img, c, k, ix + 1, y);
}

void resize_darknet(const Image *img, int c, int h, int w, float *out)
{
    const float w_scale = w > 1 ? (float)(img->w - 1) / (float)(w - 1) : 0.0f;
    const float h_scale = h > 1 ? (float)(img->h - 1) / (float)(h - 1) : 0.0f;
    for (int k = 0; k < c; k++)
        for (int y = 0; y < h; y++) {
            const float sy = (float)y * h_scale;
            const int iy = (int)sy;
            const float dy = sy - (float)iy;
            const int lower = y != h - 1 && img->h != 1; /* darknet adds the lower row */
            float *row = out + ((size_t)k * h + y) * w;
            for (int x = 0; x < w; x++) {
                const float upper = (1 - dy) * across(img, c, k, x, iy, w, w_scale);
                row[x] = lower ? upper + dy * across(img, c, k, x, iy + 1, w, w_scale) : upper;
            }
        }
}
