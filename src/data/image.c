/* Images: PNG (libpng) and JPEG (libjpeg-turbo) decoding into float [c][h][w] with JPEG EXIF
   orientation applied, channel conversion plus separable bilinear resize (of an image or a box
   of it) to a net's input, and an 8-bit PNG writer. Codec errors and warnings are caught
   (setjmp/longjmp), never printed. */
#include "data/image.h"

#include <math.h>
#include <png.h>
#include <setjmp.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>

#include "util/atomic_file.h"
#include "util/file.h"

void image_free(Image *img)
{
    if (img) {
        free(img->data);
        memset(img, 0, sizeof *img);
    }
}

static int check_size(const char *path, unsigned long w, unsigned long h, Error *e)
{
    if (w == 0 || h == 0) {
        return error_set(e, CDL_ERUNTIME, "%s: image has no pixels (%lux%lu)", path, w, h);
    }
    if (w > IMAGE_MAX_SIDE || h > IMAGE_MAX_SIDE || (uint64_t)w * h > IMAGE_MAX_PIXELS) {
        return error_set(e, CDL_ERUNTIME,
                         "%s: image too large (%lux%lu; at most %d per side, %d "
                         "pixels)",
                         path, w, h, IMAGE_MAX_SIDE, IMAGE_MAX_PIXELS);
    }
    return CDL_OK;
}

/* unit[v] = v / 255.0f: 8-bit samples to [0,1] without a division per sample (a multiply by
   1/255 would differ in the last bit for half of them). */
static void unit_table(float unit[256])
{
    for (int v = 0; v < 256; v++) {
        unit[v] = (float)v / 255.0f;
    }
}

/* ---- PNG ---- */

typedef struct PngSource {
    const uint8_t *data;
    size_t bytes, pos;
    char msg[256];
} PngSource;

static void png_on_error(png_structp png, png_const_charp msg)
{
    PngSource *src = png_get_error_ptr(png);
    snprintf(src->msg, sizeof src->msg, "%s", msg);
    png_longjmp(png, 1);
}

/* Warnings (benign ancillary-chunk issues such as an odd iCCP profile) are dropped silently:
   libpng reports real damage to the image data as errors. */
static void png_on_warning(png_structp png, png_const_charp msg)
{
    (void)png;
    (void)msg;
}

static void png_read_memory(png_structp png, png_bytep out, size_t bytes)
{
    PngSource *src = png_get_io_ptr(png);
    if (bytes > src->bytes - src->pos) {
        png_error(png, "unexpected end of file (truncated)");
    }
    memcpy(out, src->data + src->pos, bytes);
    src->pos += bytes;
}

static int png_decode(const char *path, const uint8_t *data, size_t bytes, Image *img, Error *e)
{
    PngSource src = {.data = data, .bytes = bytes};
    png_structp png =
        png_create_read_struct(PNG_LIBPNG_VER_STRING, &src, png_on_error, png_on_warning);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!info) {
        png_destroy_read_struct(&png, NULL, NULL);
        return error_set(e, CDL_ERUNTIME, "%s: out of memory for the PNG decoder", path);
    }
    uint8_t *volatile pixels = NULL;
    png_bytep *volatile rows = NULL;
    if (setjmp(png_jmpbuf(png))) {
        free(pixels);
        free(rows);
        png_destroy_read_struct(&png, &info, NULL);
        image_free(img);
        return error_set(e, CDL_ERUNTIME, "%s: corrupt or truncated PNG: %s", path, src.msg);
    }
    png_set_read_fn(png, &src, png_read_memory);
    png_read_info(png, info);
    png_uint_32 w, h;
    int depth, color, interlace;
    png_get_IHDR(png, info, &w, &h, &depth, &color, &interlace, NULL, NULL);
    int rc = check_size(path, w, h, e);
    if (rc) {
        png_destroy_read_struct(&png, &info, NULL);
        return rc;
    }
    if (color == PNG_COLOR_TYPE_PALETTE) {
        png_set_palette_to_rgb(png);
    }
    if (color == PNG_COLOR_TYPE_GRAY && depth < 8) {
        png_set_expand_gray_1_2_4_to_8(png);
    }
    /* Unconditional: palette expansion turns a tRNS chunk into an alpha channel too. */
    png_set_strip_alpha(png);
    png_set_interlace_handling(png);
    png_read_update_info(png, info);
    int channels = png_get_channels(png, info), depth_out = png_get_bit_depth(png, info);
    size_t row_bytes = png_get_rowbytes(png, info);
    pixels = malloc(row_bytes * h);
    rows = malloc(h * sizeof *rows);
    img->data = malloc((size_t)channels * h * w * sizeof *img->data);
    if (!pixels || !rows || !img->data) {
        png_error(png, "out of memory");
    }
    for (png_uint_32 y = 0; y < h; y++) {
        rows[y] = pixels + y * row_bytes;
    }
    png_read_image(png, rows);
    img->c = channels;
    img->h = (int)h;
    img->w = (int)w;
    size_t plane = (size_t)h * w;
    float unit[256];
    unit_table(unit);
    for (size_t y = 0; y < h; y++) {
        const uint8_t *row = rows[y];
        for (size_t x = 0; x < w; x++) {
            for (int ch = 0; ch < channels; ch++) {
                size_t k = x * channels + ch;
                float v = depth_out == 16 ? (float)(row[2 * k] << 8 | row[2 * k + 1]) / 65535.0f
                                          : unit[row[k]];
                img->data[ch * plane + y * w + x] = v;
            }
        }
    }
    free(pixels);
    free(rows);
    png_destroy_read_struct(&png, &info, NULL);
    return CDL_OK;
}

/* ---- JPEG errors ---- */

typedef struct JpegErrors {
    struct jpeg_error_mgr mgr; /* first, so libjpeg's pointer converts to ours */
    jmp_buf jump;
    char msg[JMSG_LENGTH_MAX];
} JpegErrors;

static void jpeg_on_error(j_common_ptr cinfo)
{
    JpegErrors *err = (JpegErrors *)cinfo->err;
    cinfo->err->format_message(cinfo, err->msg);
    longjmp(err->jump, 1);
}

/* Level -1 is a warning about damaged data (premature end, corrupt markers): fail on it
   rather than return a half-grey image. Higher levels are trace messages. */
static void jpeg_on_message(j_common_ptr cinfo, int level)
{
    if (level < 0) {
        jpeg_on_error(cinfo);
    }
}

static void jpeg_output_nothing(j_common_ptr cinfo)
{
    (void)cinfo;
}

/* ---- EXIF orientation ---- */

enum { EXIF_TAG_ORIENTATION = 0x0112, EXIF_TYPE_SHORT = 3 };

static unsigned exif_u16(const uint8_t *p, int big_endian)
{
    return big_endian ? (unsigned)p[0] << 8 | p[1] : (unsigned)p[1] << 8 | p[0];
}

static uint32_t exif_u32(const uint8_t *p, int big_endian)
{
    return big_endian ? (uint32_t)exif_u16(p, 1) << 16 | exif_u16(p + 2, 1)
                      : (uint32_t)exif_u16(p + 2, 0) << 16 | exif_u16(p, 0);
}

/* The Orientation tag (1..8) of IFD0 in an APP1 payload ("Exif\0\0" then a TIFF header: byte
   order "II" or "MM", 42, the IFD0 offset; IFD0: a 16-bit entry count, then 12-byte entries of
   tag, type, count, value). 1 (as stored) when the payload is not Exif, is malformed or has no
   valid tag. */
static int exif_orientation(const uint8_t *app1, size_t bytes)
{
    static const uint8_t exif_id[6] = {'E', 'x', 'i', 'f', 0, 0};
    if (bytes < 6 + 8 || memcmp(app1, exif_id, 6) != 0) {
        return 1;
    }
    const uint8_t *tiff = app1 + 6;
    size_t tiff_bytes = bytes - 6;
    int big_endian = tiff[0] == 'M' && tiff[1] == 'M';
    if (!big_endian && !(tiff[0] == 'I' && tiff[1] == 'I')) {
        return 1;
    }
    if (exif_u16(tiff + 2, big_endian) != 42) {
        return 1;
    }
    uint32_t ifd = exif_u32(tiff + 4, big_endian);
    if (ifd > tiff_bytes - 2) {
        return 1;
    }
    unsigned entries = exif_u16(tiff + ifd, big_endian);
    for (unsigned i = 0; i < entries; i++) {
        size_t at = ifd + 2 + (size_t)i * 12;
        if (at + 12 > tiff_bytes) {
            return 1;
        }
        const uint8_t *entry = tiff + at;
        if (exif_u16(entry, big_endian) == EXIF_TAG_ORIENTATION) {
            unsigned value = exif_u16(entry + 8, big_endian);
            int valid = exif_u16(entry + 2, big_endian) == EXIF_TYPE_SHORT &&
                        exif_u32(entry + 4, big_endian) == 1 && value >= 1 && value <= 8;
            return valid ? (int)value : 1;
        }
    }
    return 1;
}

/* Where decoded pixel (x, y) of a w x h picture lands in the upright plane: index origin +
   x * step_x + y * step_y of an out_w x out_h plane. Orientations as EXIF numbers them (and
   PIL's ImageOps.exif_transpose undoes them): 1 as stored, 2 mirrored left-right, 3 rotated
   180, 4 mirrored top-bottom, 5 transposed, 6 stored rotated 90 counter-clockwise (so turned
   clockwise here), 7 transversed, 8 stored rotated 90 clockwise. */
typedef struct Placement {
    ptrdiff_t origin, step_x, step_y;
    int out_w, out_h;
} Placement;

static Placement placement_for(int orientation, int w, int h)
{
    ptrdiff_t W = w, H = h;
    switch (orientation) {
    case 2: /* (w-1-x, y) */
        return (Placement){W - 1, -1, W, w, h};
    case 3: /* (w-1-x, h-1-y) */
        return (Placement){H * W - 1, -1, -W, w, h};
    case 4: /* (x, h-1-y) */
        return (Placement){(H - 1) * W, 1, -W, w, h};
    case 5: /* (y, x) */
        return (Placement){0, H, 1, h, w};
    case 6: /* (h-1-y, x) */
        return (Placement){H - 1, H, -1, h, w};
    case 7: /* (h-1-y, w-1-x) */
        return (Placement){W * H - 1, -H, -1, h, w};
    case 8: /* (y, w-1-x) */
        return (Placement){(W - 1) * H, -H, 1, h, w};
    default: /* (x, y) */
        return (Placement){0, 1, W, w, h};
    }
}

static int jpeg_orientation(const struct jpeg_decompress_struct *cinfo)
{
    for (jpeg_saved_marker_ptr m = cinfo->marker_list; m; m = m->next) {
        if (m->marker == JPEG_APP0 + 1 && m->data_length >= 6 && !memcmp(m->data, "Exif", 4)) {
            return exif_orientation(m->data, m->data_length);
        }
    }
    return 1;
}

/* ---- JPEG decoding ---- */

static int jpeg_decode(const char *path, const uint8_t *data, size_t bytes, Image *img, Error *e)
{
    struct jpeg_decompress_struct cinfo;
    JpegErrors err;
    cinfo.err = jpeg_std_error(&err.mgr);
    err.mgr.error_exit = jpeg_on_error;
    err.mgr.emit_message = jpeg_on_message;
    err.mgr.output_message = jpeg_output_nothing;
    err.msg[0] = 0;
    uint8_t *volatile row = NULL;
    if (setjmp(err.jump)) {
        free(row);
        jpeg_destroy_decompress(&cinfo);
        image_free(img);
        return error_set(e, CDL_ERUNTIME, "%s: corrupt or truncated JPEG: %s", path, err.msg);
    }
    jpeg_create_decompress(&cinfo);
    jpeg_mem_src(&cinfo, data, (unsigned long)bytes);
    jpeg_save_markers(&cinfo, JPEG_APP0 + 1, 0xffff);
    jpeg_read_header(&cinfo, TRUE);
    int rc = check_size(path, cinfo.image_width, cinfo.image_height, e);
    if (rc) {
        jpeg_destroy_decompress(&cinfo);
        return rc;
    }
    int cmyk = cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK;
    cinfo.out_color_space = cinfo.jpeg_color_space == JCS_GRAYSCALE ? JCS_GRAYSCALE
                            : cmyk                                  ? JCS_CMYK
                                                                    : JCS_RGB;
    /* libjpeg's defaults, as Pillow decodes: the islow IDCT (ifast measured no faster here:
       Huffman decoding dominates) and fancy upsampling, at full scale (decoding at 1/2 or 1/4
       with scale_num would change the pixels; torchvision's PIL loader does not draft). */
    jpeg_start_decompress(&cinfo);
    int in_ch = cinfo.output_components, channels = cmyk ? 3 : in_ch;
    size_t w = cinfo.output_width, h = cinfo.output_height, plane = w * h;
    Placement at = placement_for(jpeg_orientation(&cinfo), (int)w, (int)h);
    /* Adobe writes CMYK inverted (0 = full ink); PIL and browsers read it that way. */
    int inverted = cinfo.saw_Adobe_marker;
    row = malloc(w * (size_t)in_ch);
    img->data = malloc((size_t)channels * plane * sizeof *img->data);
    if (!row || !img->data) {
        snprintf(err.msg, sizeof err.msg, "out of memory");
        longjmp(err.jump, 1);
    }
    img->c = channels;
    img->h = at.out_h;
    img->w = at.out_w;
    float unit[256];
    unit_table(unit);
    while (cinfo.output_scanline < cinfo.output_height) {
        ptrdiff_t y = cinfo.output_scanline;
        JSAMPROW rowp = row;
        jpeg_read_scanlines(&cinfo, &rowp, 1);
        float *start = img->data + at.origin + y * at.step_y;
        if (cmyk) {
            for (ptrdiff_t x = 0; x < (ptrdiff_t)w; x++) {
                const uint8_t *p = row + x * in_ch;
                float *dst = start + x * at.step_x;
                float k = inverted ? unit[p[3]] : 1.0f - unit[p[3]];
                for (int ch = 0; ch < 3; ch++) {
                    float ink = inverted ? unit[p[ch]] : 1.0f - unit[p[ch]];
                    dst[ch * plane] = ink * k;
                }
            }
        } else {
            for (int ch = 0; ch < in_ch; ch++) {
                const uint8_t *restrict p = row + ch;
                float *restrict dst = start + ch * plane;
                for (ptrdiff_t x = 0; x < (ptrdiff_t)w; x++) {
                    dst[x * at.step_x] = unit[p[x * in_ch]];
                }
            }
        }
    }
    jpeg_finish_decompress(&cinfo);
    jpeg_destroy_decompress(&cinfo);
    free(row);
    return CDL_OK;
}

int image_load(const char *path, Image *img, Error *e)
{
    static const uint8_t png_magic[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    memset(img, 0, sizeof *img);
    uint8_t *data;
    size_t bytes;
    int rc = file_read_path(path, FILE_MAX_IMAGE_BYTES, "image", (char **)&data, &bytes, e);
    if (rc) {
        return rc;
    }
    if (bytes == 0) {
        rc = error_set(e, CDL_ERUNTIME, "%s: the file is empty", path);
    } else if (bytes >= 8 && !memcmp(data, png_magic, 8)) {
        rc = png_decode(path, data, bytes, img, e);
    } else if (bytes >= 3 && data[0] == 0xff && data[1] == 0xd8 && data[2] == 0xff) {
        rc = jpeg_decode(path, data, bytes, img, e);
    } else {
        rc = error_set(e, CDL_ERUNTIME, "%s: not a PNG or JPEG image", path);
    }
    free(data);
    return rc;
}

/* ---- resize ---- */

/* The filter of one output coordinate along one axis: input indices [first, last) with weight
   kernel((i + 0.5 - center) / stretch) / norm, the kernel of support 1 (bilinear's triangle) or
   2 (bicubic's cubic convolution). */
typedef struct Taps {
    int first, last;
    ResizeFilter filter;
    double center, stretch, norm;
} Taps;

/* The filter's kernel at distance d (in input pixels over stretch). */
static double kernel(ResizeFilter filter, double d)
{
    d = fabs(d);
    if (filter == RESIZE_BILINEAR)
        return d < 1.0 ? 1.0 - d : 0.0;
    const double a = -0.5; /* PIL's and torch's antialiased bicubic */
    if (d < 1.0)
        return ((a + 2.0) * d - (a + 3.0)) * d * d + 1.0;
    return d < 2.0 ? ((a * d - 5.0 * a) * d + 8.0 * a) * d - 4.0 * a : 0.0;
}

static double support(ResizeFilter filter)
{
    return filter == RESIZE_BICUBIC ? 2.0 : 1.0;
}

static Taps taps_for(int out_index, int in_size, int out_size, ResizeFilter filter)
{
    double scale = (double)in_size / out_size;
    Taps t;
    t.filter = filter;
    t.stretch = scale > 1.0 ? scale : 1.0;
    t.center = (out_index + 0.5) * scale;
    const double reach = support(filter) * t.stretch;
    int first = (int)(t.center - reach + 0.5), last = (int)(t.center + reach + 0.5);
    t.first = first < 0 ? 0 : first;
    t.last = last > in_size ? in_size : last;
    t.norm = 0;
    for (int i = t.first; i < t.last; i++)
        t.norm += kernel(filter, (i + 0.5 - t.center) / t.stretch);
    return t;
}

static double tap_weight(const Taps *t, int i)
{
    return kernel(t->filter, (i + 0.5 - t->center) / t->stretch) / t->norm;
}

/* One axis of a resize, precomputed: output o = sum over j < k of weight[o][j] * in[first[o] +
   j]. k is the same for every output (zero weights pad the shorter filters, and first is moved
   back where the filter would overrun the end), so the inner loops have one fixed length. */
typedef struct AxisTaps {
    int k;
    int *first;    /* [out_size] */
    float *weight; /* [out_size][k] */
} AxisTaps;

/* The longest filter of a resize of in_size to out_size: the k of its AxisTaps. */
static int axis_length(int in_size, int out_size, ResizeFilter filter)
{
    int k = 1;
    for (int o = 0; o < out_size; o++) {
        Taps t = taps_for(o, in_size, out_size, filter);
        k = t.last - t.first > k ? t.last - t.first : k;
    }
    return k;
}

/* An upper bound of axis_length(n, out_size) for every n <= in_size: a filter spans fewer than
   2 * support * stretch + 1 inputs, stretch = max(1, n / out_size). */
static int axis_bound(int in_size, int out_size, ResizeFilter filter)
{
    double stretch = in_size > out_size ? (double)in_size / out_size : 1.0;
    return (int)(2.0 * support(filter) * stretch) + 1;
}

static void axis_fill(AxisTaps *a, int in_size, int out_size, ResizeFilter filter)
{
    for (int o = 0; o < out_size; o++) {
        Taps t = taps_for(o, in_size, out_size, filter);
        int first = t.first + a->k <= in_size ? t.first : in_size - a->k;
        float *wt = a->weight + (size_t)o * a->k;
        for (int j = 0; j < a->k; j++) {
            int i = first + j;
            wt[j] = i >= t.first && i < t.last ? (float)tap_weight(&t, i) : 0.0f;
        }
        a->first[o] = first;
    }
}

/* Rows that pass_rows filters together: independent sums sharing each weight and index. */
enum { ROW_BLOCK = 4 };

/* pass_rows with the filter length k as an argument, so that calls with a constant k compile
   to fully unrolled inner loops. */
static inline void filter_rows(const float *src, size_t stride, int rows, const AxisTaps *t, int n,
                               float coef, int add, float *restrict dst, int k)
{
    for (int y = 0; y < rows; y += ROW_BLOCK) {
        const int block = rows - y < ROW_BLOCK ? rows - y : ROW_BLOCK;
        const float *row[ROW_BLOCK];
        for (int r = 0; r < ROW_BLOCK; r++) { /* a short last block repeats its last row */
            row[r] = src + (size_t)(y + (r < block ? r : block - 1)) * stride;
        }
        float *restrict out = dst + (size_t)y * n;
        for (int o = 0; o < n; o++) {
            const float *restrict wt = t->weight + (size_t)o * k;
            const int first = t->first[o];
            float sum[ROW_BLOCK] = {0};
            for (int j = 0; j < k; j++) {
                for (int r = 0; r < ROW_BLOCK; r++) {
                    sum[r] += wt[j] * row[r][first + j];
                }
            }
            for (int r = 0; r < block; r++) {
                float *at = out + (size_t)r * n + o;
                *at = add ? *at + coef * sum[r] : coef * sum[r];
            }
        }
    }
}

/* dst [rows][n] = coef * the rows of src (stride floats apart) resized to n columns by t; with
   add, dst += that instead. The filter lengths of scales up to 1:2.5 get their own loops. */
static void pass_rows(const float *src, size_t stride, int rows, const AxisTaps *t, int n,
                      float coef, int add, float *restrict dst)
{
    switch (t->k) {
    case 2:
        filter_rows(src, stride, rows, t, n, coef, add, dst, 2);
        break;
    case 3:
        filter_rows(src, stride, rows, t, n, coef, add, dst, 3);
        break;
    case 4:
        filter_rows(src, stride, rows, t, n, coef, add, dst, 4);
        break;
    case 5:
        filter_rows(src, stride, rows, t, n, coef, add, dst, 5);
        break;
    case 6:
        filter_rows(src, stride, rows, t, n, coef, add, dst, 6);
        break;
    default:
        filter_rows(src, stride, rows, t, n, coef, add, dst, t->k);
        break;
    }
}

/* dst [n][cols] = coef * the columns of src (rows stride floats apart) resized to n rows by t;
   with add, dst += that instead. */
static void pass_columns(const float *src, size_t stride, int cols, const AxisTaps *t, int n,
                         float coef, int add, float *restrict dst)
{
    const int k = t->k;
    for (int o = 0; o < n; o++) {
        const float *wt = t->weight + (size_t)o * k;
        const float *base = src + (size_t)t->first[o] * stride;
        float *restrict out = dst + (size_t)o * cols;
        if (!add) {
            memset(out, 0, (size_t)cols * sizeof *out);
        }
        for (int j = 0; j < k; j++) {
            const float c = coef * wt[j];
            const float *restrict row = base + (size_t)j * stride;
            if (c != 0.0f) {
                for (int x = 0; x < cols; x++) {
                    out[x] += c * row[x];
                }
            }
        }
    }
}

void image_scratch_free(ImageScratch *s)
{
    free(s->mem);
    memset(s, 0, sizeof *s);
}

/* Room for `floats` floats in s (grown by half again, so varying requests settle quickly). */
static float *scratch_reserve(ImageScratch *s, size_t floats)
{
    if (s->floats < floats) {
        size_t want = floats + floats / 2;
        float *p = malloc(want * sizeof *p);
        if (!p) {
            return NULL;
        }
        free(s->mem);
        s->mem = p;
        s->floats = want;
    }
    return s->mem;
}

int image_resize(const Image *img, const CropBox *box, int c, int h, int w, ImageScratch *s,
                 float *out)
{
    return image_resize_with(img, box, c, h, w, RESIZE_BILINEAR, s, out);
}

int image_resize_with(const Image *img, const CropBox *box, int c, int h, int w,
                      ResizeFilter filter, ImageScratch *s, float *out)
{
    static const float luma[3] = {0.299f, 0.587f, 0.114f};
    const CropBox whole = {0, 0, img->w, img->h};
    const CropBox *b = box ? box : &whole;
    AxisTaps tx = {.k = axis_length(b->w, w, filter)}, ty = {.k = axis_length(b->h, h, filter)};
    /* Multiply-adds per plane: across then down (tmp [b->h][w]), or down then across (tmp
       [h][b->w]); the first pass runs once per mixed source channel. */
    const int sources = c == 1 && img->c >= 3 ? 3 : 1;
    const double across_first = (double)sources * b->h * w * tx.k + (double)h * w * ty.k;
    const double down_first = (double)sources * h * b->w * ty.k + (double)h * w * tx.k;
    const int across = across_first <= down_first;
    /* Carved from s: tx.first [w], ty.first [h] (ints, the size of floats), the weights, then
       tmp. Reserved for the largest box of img, so that once one box of an image has been
       resized, no other box of an image of that size allocates. */
    const size_t taps = (size_t)w * (1 + axis_bound(img->w, w, filter)) +
                        (size_t)h * (1 + axis_bound(img->h, h, filter));
    const size_t tmp_bound =
        (size_t)img->h * w > (size_t)h * img->w ? (size_t)img->h * w : (size_t)h * img->w;
    float *mem = scratch_reserve(s, taps + tmp_bound);
    if (!mem) {
        return CDL_ERUNTIME;
    }
    tx.first = (int *)mem;
    ty.first = (int *)(mem + w);
    tx.weight = mem + w + h;
    ty.weight = tx.weight + (size_t)w * tx.k;
    float *tmp = ty.weight + (size_t)h * ty.k;
    axis_fill(&tx, b->w, w, filter);
    axis_fill(&ty, b->h, h, filter);
    const size_t in_plane = (size_t)img->h * img->w, stride = (size_t)img->w;
    const size_t corner = (size_t)b->y * stride + (size_t)b->x, plane = (size_t)h * w;
    for (int k = 0; k < c; k++) {
        for (int j = 0; j < sources; j++) {
            const int ch = sources == 3 ? j : k < img->c ? k : img->c - 1;
            const float *src = img->data + ch * in_plane + corner;
            const float coef = sources == 3 ? luma[j] : 1.0f;
            if (across) {
                pass_rows(src, stride, b->h, &tx, w, coef, j > 0, tmp);
            } else {
                pass_columns(src, stride, b->w, &ty, h, coef, j > 0, tmp);
            }
        }
        if (across) {
            pass_columns(tmp, (size_t)w, w, &ty, h, 1.0f, 0, out + k * plane);
        } else {
            pass_rows(tmp, (size_t)b->w, h, &tx, w, 1.0f, 0, out + k * plane);
        }
    }
    return CDL_OK;
}

int image_to_input(const Image *img, int c, int h, int w, float *out)
{
    ImageScratch s = {0};
    int st = image_resize(img, NULL, c, h, w, &s, out);
    image_scratch_free(&s);
    return st;
}

/* ---- PNG writer ---- */

int image_write_png(const char *path, const Image *img, Error *e)
{
    static const int color_types[5] = {0, PNG_COLOR_TYPE_GRAY, PNG_COLOR_TYPE_GRAY_ALPHA,
                                       PNG_COLOR_TYPE_RGB, PNG_COLOR_TYPE_RGB_ALPHA};
    if (img->c < 1 || img->c > 4 || img->h < 1 || img->w < 1) {
        return error_set(e, CDL_EUSAGE, "%s: cannot write a %dx%dx%d image as PNG", path, img->c,
                         img->h, img->w);
    }
    AtomicFile out;
    const int opened = atomic_file_open(&out, path, FILE_KIND_PNG, e);
    if (opened) {
        return opened;
    }
    PngSource status = {0};
    png_structp png =
        png_create_write_struct(PNG_LIBPNG_VER_STRING, &status, png_on_error, png_on_warning);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    uint8_t *volatile row = malloc((size_t)img->w * img->c);
    if (!info || !row) {
        png_destroy_write_struct(&png, NULL);
        free(row);
        atomic_file_abort(&out);
        return error_set(e, CDL_ERUNTIME, "%s: out of memory for the PNG encoder", path);
    }
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info);
        free(row);
        atomic_file_abort(&out);
        return error_set(e, CDL_ERUNTIME, "%s: cannot write: %s", path, status.msg);
    }
    png_init_io(png, out.file);
    png_set_IHDR(png, info, (png_uint_32)img->w, (png_uint_32)img->h, 8, color_types[img->c],
                 PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    size_t plane = (size_t)img->h * img->w;
    for (int y = 0; y < img->h; y++) {
        for (int x = 0; x < img->w; x++) {
            for (int ch = 0; ch < img->c; ch++) {
                float v = img->data[ch * plane + (size_t)y * img->w + x];
                v = v > 0.0f ? (v < 1.0f ? v : 1.0f) : 0.0f; /* NaN -> 0 */
                row[(size_t)x * img->c + ch] = (uint8_t)lrintf(v * 255.0f);
            }
        }
        png_write_row(png, row);
    }
    png_write_end(png, info);
    png_destroy_write_struct(&png, &info);
    free(row);
    return atomic_file_commit(&out, e);
}
