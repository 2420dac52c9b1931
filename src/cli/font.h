/* A built-in bitmap font: 5x9 glyphs for printable ASCII (rows 0-6 above the baseline, 7-8
 * for descenders), drawn in 6x11 cells. */
#ifndef CDL_FONT_H
#define CDL_FONT_H

enum {
    FONT_GLYPH_W = 5,
    FONT_GLYPH_H = 9,
    FONT_ADVANCE = 6, /* horizontal distance between glyph origins */
    FONT_LINE_H = 11, /* vertical distance between lines */
    FONT_CAP_H = 7,   /* rows above the baseline */
};

/* 1 when pixel (x, y) of ch's glyph is set, x in [0, FONT_GLYPH_W), y in [0, FONT_GLYPH_H),
 * y = 0 at the top. Characters outside printable ASCII draw as '?'. */
int font_pixel(char ch, int x, int y);

#endif
