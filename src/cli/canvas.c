/* Raster canvas: coverage-based anti-aliasing (a pixel's ink is how far its centre lies
 * inside the shape, clamped to [0, 1]) blended over float RGB planes. */
#include "cli/canvas.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "api/cdl.h"
#include "cli/font.h"

Rgb rgb_hex(uint32_t hex)
{
    return (Rgb){(float)((hex >> 16) & 0xff) / 255.0f, (float)((hex >> 8) & 0xff) / 255.0f,
                 (float)(hex & 0xff) / 255.0f};
}

int canvas_init(Canvas *c, int width, int height, Rgb background, Error *e)
{
    memset(c, 0, sizeof *c);
    if (width < 1 || height < 1 || width > CANVAS_MAX_SIDE || height > CANVAS_MAX_SIDE)
        return error_set(e, CDL_EUSAGE, "canvas size %dx%d out of range 1..%d", width, height,
                         CANVAS_MAX_SIDE);
    const size_t plane = (size_t)width * (size_t)height;
    c->rgb = malloc(3 * plane * sizeof *c->rgb);
    if (!c->rgb)
        return error_set(e, CDL_ERUNTIME, "out of memory for a %dx%d canvas", width, height);
    c->width = width;
    c->height = height;
    canvas_fill_rect(c, 0, 0, width, height, background);
    return CDL_OK;
}

void canvas_free(Canvas *c)
{
    free(c->rgb);
    memset(c, 0, sizeof *c);
}

/* Mixes color into pixel (x, y) with weight alpha in [0, 1]; outside the canvas: nothing. */
static void blend(Canvas *c, int x, int y, Rgb color, float alpha)
{
    if (x < 0 || y < 0 || x >= c->width || y >= c->height || alpha <= 0.0f)
        return;
    if (alpha > 1.0f)
        alpha = 1.0f;
    const size_t plane = (size_t)c->width * (size_t)c->height;
    float *p = c->rgb + (size_t)y * c->width + x;
    p[0] += alpha * (color.r - p[0]);
    p[plane] += alpha * (color.g - p[plane]);
    p[2 * plane] += alpha * (color.b - p[2 * plane]);
}

void canvas_fill_rect(Canvas *c, int x0, int y0, int x1, int y1, Rgb color)
{
    x0 = x0 < 0 ? 0 : x0;
    y0 = y0 < 0 ? 0 : y0;
    x1 = x1 > c->width ? c->width : x1;
    y1 = y1 > c->height ? c->height : y1;
    for (int y = y0; y < y1; y++)
        for (int x = x0; x < x1; x++)
            blend(c, x, y, color, 1.0f);
}

/* Distance from (px, py) to the segment (x0, y0)-(x1, y1). */
static double segment_distance(double px, double py, double x0, double y0, double x1, double y1)
{
    const double dx = x1 - x0, dy = y1 - y0, len2 = dx * dx + dy * dy;
    double t = len2 > 0 ? ((px - x0) * dx + (py - y0) * dy) / len2 : 0;
    t = t < 0 ? 0 : t > 1 ? 1 : t;
    const double ex = px - (x0 + t * dx), ey = py - (y0 + t * dy);
    return sqrt(ex * ex + ey * ey);
}

void canvas_line(Canvas *c, double x0, double y0, double x1, double y1, double width, Rgb color)
{
    const double reach = width / 2 + 1;
    const int xa = (int)floor(fmin(x0, x1) - reach), xb = (int)ceil(fmax(x0, x1) + reach);
    const int ya = (int)floor(fmin(y0, y1) - reach), yb = (int)ceil(fmax(y0, y1) + reach);
    for (int y = ya < 0 ? 0 : ya; y <= yb && y < c->height; y++)
        for (int x = xa < 0 ? 0 : xa; x <= xb && x < c->width; x++) {
            const double d = segment_distance(x + 0.5, y + 0.5, x0, y0, x1, y1);
            blend(c, x, y, color, (float)(width / 2 + 0.5 - d));
        }
}

void canvas_polyline(Canvas *c, const double *x, const double *y, int n, double width, double dash,
                     Rgb color)
{
    const double gap = 0.7 * dash;
    double phase = 0; /* distance into the current dash period */
    for (int i = 0; i + 1 < n; i++) {
        if (dash <= 0) {
            canvas_line(c, x[i], y[i], x[i + 1], y[i + 1], width, color);
            continue;
        }
        const double dx = x[i + 1] - x[i], dy = y[i + 1] - y[i], len = hypot(dx, dy);
        double pos = 0;
        while (pos < len) {
            const int on = phase < dash;
            const double run = fmin(on ? dash - phase : dash + gap - phase, len - pos);
            if (on)
                canvas_line(c, x[i] + dx * pos / len, y[i] + dy * pos / len,
                            x[i] + dx * (pos + run) / len, y[i] + dy * (pos + run) / len, width,
                            color);
            pos += run;
            phase = fmod(phase + run, dash + gap);
        }
    }
}

void canvas_disc(Canvas *c, double cx, double cy, double radius, Rgb color)
{
    canvas_line(c, cx, cy, cx, cy, 2 * radius, color);
}

void canvas_text(Canvas *c, int x, int y, const char *s, int scale, TextDir dir, Rgb color)
{
    for (int i = 0; s[i]; i++)
        for (int gy = 0; gy < FONT_GLYPH_H; gy++)
            for (int gx = 0; gx < FONT_GLYPH_W; gx++) {
                if (!font_pixel(s[i], gx, gy))
                    continue;
                const int u = (i * FONT_ADVANCE + gx) * scale, v = gy * scale;
                if (dir == TEXT_RIGHT)
                    canvas_fill_rect(c, x + u, y + v, x + u + scale, y + v + scale, color);
                else
                    canvas_fill_rect(c, x + v, y - u - scale, x + v + scale, y - u, color);
            }
}

int canvas_text_width(const char *s, int scale)
{
    const int n = (int)strlen(s);
    return n ? (n * FONT_ADVANCE - (FONT_ADVANCE - FONT_GLYPH_W)) * scale : 0;
}

int canvas_write_png(const Canvas *c, const char *path, Error *e)
{
    char msg[sizeof e->msg];
    const int st = cdl_write_png(path, c->rgb, 3, c->height, c->width, msg, sizeof msg);
    return st ? error_set(e, st, "%s", msg) : CDL_OK;
}
