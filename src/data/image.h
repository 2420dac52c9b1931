/* Images for datasets and `cdl predict`: PNG/JPEG decoding, channel conversion and bilinear resize
   to a net's input, and an 8-bit PNG writer. */
#ifndef CDL_IMAGE_H
#define CDL_IMAGE_H

#include <stddef.h>

#include "util/error.h"

typedef struct Image {
    int c, h, w;
    float *data; /* [c][h][w] in [0,1] */
} Image;

/* Largest image accepted: each side and the pixel count. */
enum { IMAGE_MAX_SIDE = 16384, IMAGE_MAX_PIXELS = 1 << 28 };

/* Decodes a PNG (8/16-bit, gray, palette; alpha dropped; c = 1 or 3) or a JPEG (baseline or
   progressive; gray -> c = 1; RGB/YCbCr/CMYK -> c = 3), chosen by magic bytes, not by extension.
   A JPEG's EXIF Orientation tag (APP1, IFD0) is applied, so the image comes out upright as
   viewers and PIL's ImageOps.exif_transpose show it (orientations 5-8 swap h and w). Sizes are
   checked against IMAGE_MAX_* from the header, before any pixel memory is allocated. Corrupt or
   truncated data (including libjpeg warnings such as a premature end of data) is an error
   naming the file; nothing is printed. On failure img is left zeroed. */
int image_load(const char *path, Image *img, Error *e);

/* Frees the pixels and zeroes img; safe on a zeroed Image. */
void image_free(Image *img);

/* A rectangle of pixels: columns [x, x + w), rows [y, y + h). */
typedef struct CropBox {
    int x, y, w, h;
} CropBox;

/* Work memory for image_resize, kept between calls by its owner (one per thread; zero-initialise
   it). It is sized for the largest box of the image, so once any box of an image has been
   resized to some output size, resizing boxes of images no larger to that size allocates
   nothing: a loader's random crops allocate only while image sizes grow. */
typedef struct ImageScratch {
    float *mem;
    size_t floats;
} ImageScratch;

/* Frees the memory and zeroes s; safe on a zeroed ImageScratch. */
void image_scratch_free(ImageScratch *s);

/* The interpolation of image_resize_with: bilinear (a triangle of support 1) or bicubic (the
   cubic convolution of support 2 with a = -0.5, PIL's and F.interpolate(mode="bicubic",
   antialias=True)'s), each widened by the scale factor when downscaling. */
typedef enum ResizeFilter { RESIZE_BILINEAR, RESIZE_BICUBIC } ResizeFilter;

/* Converts channels (to 1: ITU-R 601 luma 0.299 R + 0.587 G + 0.114 B; 1 to 3: replication)
   and resizes box of img (NULL: all of it; else inside img and not empty) with bilinear
   interpolation into out [c][h][w]. Sample positions follow the align_corners=False convention
   (src = (dst + 0.5) * in / out - 0.5, clamped at the edges), so upscaling matches PyTorch
   F.interpolate(mode="bilinear"); downscaling widens the triangle filter by the scale factor as
   PIL and F.interpolate(antialias=True) do. Separable: each filter is computed once per output
   row and column, one pass runs along rows and the other along columns (in the cheaper order),
   in float. Allocates only when s must grow; CDL_ERUNTIME when that fails (out untouched). */
int image_resize(const Image *img, const CropBox *box, int c, int h, int w, ImageScratch *s,
                 float *out);
/* image_resize with the interpolation filter (image_resize is its RESIZE_BILINEAR). */
int image_resize_with(const Image *img, const CropBox *box, int c, int h, int w,
                      ResizeFilter filter, ImageScratch *s, float *out);

/* image_resize of all of img with scratch memory of its own, allocated and freed in the call:
   for one-off conversions (loops keep an ImageScratch). */
int image_to_input(const Image *img, int c, int h, int w, float *out);

/* Writes img (c = 1 gray, 2 gray+alpha, 3 RGB, 4 RGBA) as an 8-bit PNG, values clamped to [0,1]
   and rounded; atomically, refusing to replace a file that is not a PNG (atomic_file_open). */
int image_write_png(const char *path, const Image *img, Error *e);

#endif
