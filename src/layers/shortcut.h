/* [shortcut]'s configuration and darknet's index mapping between inputs of different shapes
 * (layers/shortcut.c parses it and exports it; backend/cpu/shortcut.c computes with it). */
#ifndef CDL_SHORTCUT_H
#define CDL_SHORTCUT_H

#include "core/layer.h"

typedef struct Shortcut {
    float alpha, beta;
    Shape from; /* the shape of input 1 (`from`) */
} Shortcut;

/* The index mapping between `from` (shape a) and the output (shape o). */
typedef struct ShortcutMapping {
    int channels, rows, cols;       /* loop extents: the smaller of the two shapes */
    int stride_h, stride_w;         /* step through `from` */
    int sample_h, sample_w;         /* step through the output */
    int from_w, out_w;              /* row lengths */
    size_t from_plane, out_plane;   /* h*w of each */
    size_t from_sample, out_sample; /* c*h*w of each */
} ShortcutMapping;

static inline int shortcut_ratio(int num, int den)
{
    return num / den > 1 ? num / den : 1;
}

static inline ShortcutMapping shortcut_mapping(Shape a, Shape o)
{
    ShortcutMapping m;
    m.channels = a.c < o.c ? a.c : o.c;
    m.rows = a.h < o.h ? a.h : o.h;
    m.cols = a.w < o.w ? a.w : o.w;
    m.stride_h = shortcut_ratio(a.h, o.h);
    m.stride_w = shortcut_ratio(a.w, o.w);
    m.sample_h = shortcut_ratio(o.h, a.h);
    m.sample_w = shortcut_ratio(o.w, a.w);
    m.from_w = a.w;
    m.out_w = o.w;
    m.from_plane = (size_t)a.h * a.w;
    m.out_plane = (size_t)o.h * o.w;
    m.from_sample = shape_size(a);
    m.out_sample = shape_size(o);
    return m;
}

static inline int shortcut_same_shape(Shape a, Shape b)
{
    return a.c == b.c && a.h == b.h && a.w == b.w;
}

static inline Shape shortcut_from_shape(const Layer *l)
{
    return ((const Shortcut *)l->priv)->from;
}

#endif
