/* A small raster canvas for charts: RGB pixels, anti-aliased lines and discs, filled
 * rectangles, bitmap-font text, PNG output. Coordinates are pixels, x right, y down; pixel
 * (i, j) covers [i, i+1) x [j, j+1), so its centre is (i + 0.5, j + 0.5). */
#ifndef CDL_CANVAS_H
#define CDL_CANVAS_H

#include <stdint.h>

#include "util/error.h"

/* Largest canvas side (the largest image side cdl reads or writes). */
enum { CANVAS_MAX_SIDE = 16384 };

typedef struct Rgb {
    float r, g, b; /* [0,1] */
} Rgb;

/* 0xRRGGBB -> Rgb */
Rgb rgb_hex(uint32_t hex);

typedef struct Canvas {
    int height, width;
    float *rgb; /* [3][height][width] in [0,1] */
} Canvas;

/* How canvas_text lays a string out: left to right, or rotated to read bottom to top. */
typedef enum TextDir { TEXT_RIGHT, TEXT_UP } TextDir;

int canvas_init(Canvas *c, int width, int height, Rgb background, Error *e);
void canvas_free(Canvas *c);

/* Fills [x0, x1) x [y0, y1), clipped to the canvas. */
void canvas_fill_rect(Canvas *c, int x0, int y0, int x1, int y1, Rgb color);

/* An anti-aliased segment of the given width with round ends. */
void canvas_line(Canvas *c, double x0, double y0, double x1, double y1, double width, Rgb color);

/* Segments through the n points (x[i], y[i]); dash > 0 draws dash pixels on, 0.7 dash off,
 * continuing the pattern across vertices. */
void canvas_polyline(Canvas *c, const double *x, const double *y, int n, double width, double dash,
                     Rgb color);

/* An anti-aliased filled disc. */
void canvas_disc(Canvas *c, double cx, double cy, double radius, Rgb color);

/* Draws s with the built-in font, each font pixel a scale x scale square. TEXT_RIGHT: (x, y)
 * is the top-left corner of the first glyph cell. TEXT_UP: the text is rotated a quarter
 * turn counter-clockwise and (x, y) is the bottom-left corner of the rotated run. */
void canvas_text(Canvas *c, int x, int y, const char *s, int scale, TextDir dir, Rgb color);

/* Length in pixels of s drawn at scale (along the reading direction). */
int canvas_text_width(const char *s, int scale);

/* Writes an 8-bit RGB PNG. */
int canvas_write_png(const Canvas *c, const char *path, Error *e);

#endif
