/* Data augmentation: the [net] keys, the train-time random transforms and the eval-time
 * framing, from a decoded Image to the net's input [out_c][out_h][out_w].
 *
 * [net] keys (defaults in brackets; the defaults transform nothing):
 *   random_resized_crop [0]   1: torchvision RandomResizedCrop: a random box of area fraction
 *                             crop_scale [0.08,1] and aspect ratio (w/h, log-uniform) crop_ratio
 *                             [0.75,1.333] (or [aspect, 1/aspect] when aspect is given), resized
 *   min_crop, max_crop [off]  darknet: short side scaled to a random size in [min_crop,
 *                             max_crop] (the absent one defaults to darknet's height / 2*width),
 *                             squeezed by aspect, rotated by angle, randomly shifted, cropped
 *   aspect [1]                darknet's aspect jitter for min/max_crop (rand_scale: [x, 1/x]);
 *                             without a crop recipe it is accepted and does nothing
 *   pad [0]                   pad with zeros on every side, then a random crop to size (CIFAR)
 *   flip [0]                  random left-right mirror with p = 0.5 (darknet always flips its
 *                             classifier images; cdl only when asked)
 *   flip_vertical [0]         random top-bottom mirror with p = 0.5
 *   angle [0]                 random rotation in [-angle, angle] degrees about the center, fill 0
 *                             (with min/max_crop: inside darknet's crop, edges extended)
 *   brightness [0], contrast [0]  torchvision ColorJitter: factor in [max(0, 1-x), 1+x]
 *   hue [0]                   darknet: hue shifted by a random fraction of the circle in [-x, x]
 *   saturation [1], exposure [1]  darknet: S and V scaled by rand_scale(x), in [1/x, x]
 *   mean [0], std [1]         normalise each channel: (x - mean) / std, after everything else
 *                             (one value, or one per channel)
 *   erasing [0]               torchvision RandomErasing probability (scale 0.02..0.33, ratio
 *                             0.3..3.3, value 0, on the normalised image)
 *   letterbox [0]             eval/predict: fit inside keeping the aspect, fill 0.5, resized
 *                             with darknet's own bilinear (data/resize_darknet.h), as darknet
 *   center_crop [0]           eval: short side to size/0.875, center crop (torchvision's eval);
 *                             0: plain resize to the net's size
 *   resize_size [0]           center_crop's short side instead of size/0.875 (torchvision's
 *                             resize_size: 232 for its newer weights' 224 crops)
 *   interpolation [bilinear]  the filter of every resize here (crops and framing): bilinear or
 *                             bicubic (data/image.h), torchvision's interpolation
 *   mosaic [0]                AlexeyAB's darknet: half the training samples are four images cut
 *                             to the quadrants around a random centre (data/mosaic.h; detectors)
 * Train-time order: crop (random resized, darknet, or the eval framing when neither is set),
 * pad + random crop, flips, rotation, brightness, contrast, HSV (darknet's order: hue,
 * saturation, exposure), channel conversion, normalisation, erasing. Colour works on the
 * decoded channels (RGB in [0,1]) before conversion to the net's channels. */
#include "data/augment.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "data/resize_darknet.h"

static const float default_scale[2] = {0.08f, 1.0f};
static const float default_ratio[2] = {3.0f / 4.0f, 4.0f / 3.0f};

/* ---- [net] keys ---- */

/* Reads a 2-value "min,max" list with 0 < min <= max (<= 1 when unit); *given = present. */
static int get_range(const Cfg *cfg, CfgSection *s, const char *key, int unit, float out[2],
                     int *given, Error *e)
{
    float v[CFG_MAX_LIST];
    int n;
    int st = cfg_get_float_list(cfg, s, key, v, CFG_MAX_LIST, &n, e);
    *given = n > 0;
    if (st || !n)
        return st;
    if (n != 2 || !(v[0] > 0) || v[0] > v[1] || (unit && v[1] > 1))
        return cfg_bad_value(cfg, s, key, e, "%s",
                             unit ? "expected min,max with 0 < min <= max <= 1"
                                  : "expected min,max with 0 < min <= max");
    out[0] = v[0];
    out[1] = v[1];
    return CDL_OK;
}

/* Reads mean= or std= (one value, or one per channel) into out[3]; untouched when absent. */
static int get_channel_values(const Cfg *cfg, CfgSection *s, const char *key, int c, float out[3],
                              Error *e)
{
    float v[CFG_MAX_LIST];
    int n;
    int st = cfg_get_float_list(cfg, s, key, v, CFG_MAX_LIST, &n, e);
    if (st || !n)
        return st;
    if (c > 3 || (n != 1 && n != c))
        return cfg_bad_value(cfg, s, key, e, "expected one value, or one per channel (at most 3)");
    for (int k = 0; k < 3; k++)
        out[k] = v[k < n ? k : 0];
    return CDL_OK;
}

/* Fails on key unless ok. */
static int require(int ok, const Cfg *cfg, CfgSection *s, const char *key, const char *rule,
                   Error *e)
{
    return ok ? CDL_OK : cfg_bad_value(cfg, s, key, e, "%s", rule);
}

int augment_config_parse(const Cfg *cfg, CfgSection *s, int c, int h, int w, AugmentConfig *a,
                         Error *e)
{
    memset(a, 0, sizeof *a);
    a->out_c = c;
    a->out_h = h;
    a->out_w = w;
    float scale[2] = {default_scale[0], default_scale[1]};
    float ratio[2] = {default_ratio[0], default_ratio[1]};
    int scale_given = 0, ratio_given = 0;
    int st = CDL_OK;
    st = st ? st : cfg_get_flag(cfg, s, "random_resized_crop", 0, &a->random_resized_crop, e);
    st = st ? st : get_range(cfg, s, "crop_scale", 1, scale, &scale_given, e);
    st = st ? st : get_range(cfg, s, "crop_ratio", 0, ratio, &ratio_given, e);
    st = st ? st : cfg_get_int(cfg, s, "min_crop", 0, &a->min_crop, e);
    st = st ? st : cfg_get_int(cfg, s, "max_crop", 0, &a->max_crop, e);
    st = st ? st : cfg_get_float(cfg, s, "aspect", 1.0f, &a->aspect, e);
    st = st ? st : cfg_get_int(cfg, s, "pad", 0, &a->pad, e);
    st = st ? st : cfg_get_flag(cfg, s, "flip", 0, &a->flip, e);
    st = st ? st : cfg_get_flag(cfg, s, "flip_vertical", 0, &a->flip_vertical, e);
    st = st ? st : cfg_get_float(cfg, s, "angle", 0.0f, &a->angle, e);
    st = st ? st : cfg_get_float(cfg, s, "brightness", 0.0f, &a->brightness, e);
    st = st ? st : cfg_get_float(cfg, s, "contrast", 0.0f, &a->contrast, e);
    st = st ? st : cfg_get_float(cfg, s, "hue", 0.0f, &a->hue, e);
    st = st ? st : cfg_get_float(cfg, s, "saturation", 1.0f, &a->saturation, e);
    st = st ? st : cfg_get_float(cfg, s, "exposure", 1.0f, &a->exposure, e);
    for (int k = 0; k < 3; k++)
        a->std[k] = 1.0f;
    st = st ? st : get_channel_values(cfg, s, "mean", c, a->mean, e);
    st = st ? st : get_channel_values(cfg, s, "std", c, a->std, e);
    st = st ? st : cfg_get_float(cfg, s, "erasing", 0.0f, &a->erasing, e);
    st = st ? st : cfg_get_flag(cfg, s, "letterbox", 0, &a->letterbox, e);
    st = st ? st : cfg_get_flag(cfg, s, "center_crop", 0, &a->center_crop, e);
    st = st ? st : cfg_get_int(cfg, s, "resize_size", 0, &a->resize_size, e);
    st = st ? st : cfg_get_flag(cfg, s, "mosaic", 0, &a->mosaic, e);
    if (st)
        return st;
    const char *interpolation = cfg_get_str(s, "interpolation", "bilinear");
    a->interpolation = !strcmp(interpolation, "bicubic") ? RESIZE_BICUBIC : RESIZE_BILINEAR;
    if (strcmp(interpolation, "bilinear") && strcmp(interpolation, "bicubic"))
        return cfg_bad_value(cfg, s, "interpolation", e, "expected bilinear or bicubic");

    const int darknet_crop = cfg_find(s, "min_crop") || cfg_find(s, "max_crop");
    if (darknet_crop) {
        a->min_crop = cfg_find(s, "min_crop") ? a->min_crop : h;
        a->max_crop = cfg_find(s, "max_crop") ? a->max_crop : 2 * w;
        const char *blame = cfg_find(s, "min_crop") ? "min_crop" : "max_crop";
        st = st ? st : require(a->min_crop >= 1, cfg, s, blame, "must be >= 1", e);
        st = st ? st
                : require(a->min_crop <= a->max_crop, cfg, s, blame,
                          "min_crop must not exceed max_crop", e);
        st = st ? st
                : require(!a->random_resized_crop, cfg, s, "random_resized_crop",
                          "choose one crop recipe: random_resized_crop or min_crop/max_crop", e);
    }
    st = st ? st
            : require(a->random_resized_crop || !scale_given, cfg, s, "crop_scale",
                      "needs random_resized_crop=1", e);
    st = st ? st
            : require(a->random_resized_crop || !ratio_given, cfg, s, "crop_ratio",
                      "needs random_resized_crop=1", e);
    st = st ? st : require(a->aspect > 0, cfg, s, "aspect", "must be > 0", e);
    st = st ? st : require(a->pad >= 0 && a->pad <= 4096, cfg, s, "pad", "must be in 0..4096", e);
    st = st ? st : require(a->angle >= 0, cfg, s, "angle", "must be >= 0 (degrees)", e);
    st = st ? st : require(a->brightness >= 0, cfg, s, "brightness", "must be >= 0", e);
    st = st ? st : require(a->contrast >= 0, cfg, s, "contrast", "must be >= 0", e);
    st = st ? st : require(a->hue >= 0 && a->hue <= 0.5f, cfg, s, "hue", "must be in [0, 0.5]", e);
    st = st ? st : require(a->saturation > 0, cfg, s, "saturation", "must be > 0", e);
    st = st ? st : require(a->exposure > 0, cfg, s, "exposure", "must be > 0", e);
    for (int k = 0; k < 3; k++)
        st = st ? st : require(a->std[k] > 0, cfg, s, "std", "must be > 0", e);
    st = st ? st
            : require(a->erasing >= 0 && a->erasing <= 1, cfg, s, "erasing",
                      "must be a probability in [0, 1]", e);
    st = st ? st
            : require(!(a->letterbox && a->center_crop), cfg, s, "center_crop",
                      "choose one eval framing: letterbox or center_crop", e);
    st = st ? st
            : require(!cfg_find(s, "resize_size") || a->center_crop, cfg, s, "resize_size",
                      "needs center_crop=1", e);
    st = st ? st
            : require(!cfg_find(s, "resize_size") ||
                          (a->resize_size >= h && a->resize_size >= w && a->resize_size <= 65536),
                      cfg, s, "resize_size",
                      "must be at least the net's height and width (the crop), at most 65536", e);
    if (st)
        return st;
    if (a->random_resized_crop && !ratio_given && a->aspect != 1.0f) {
        ratio[0] = fminf(a->aspect, 1.0f / a->aspect);
        ratio[1] = fmaxf(a->aspect, 1.0f / a->aspect);
    }
    a->crop_scale_min = scale[0];
    a->crop_scale_max = scale[1];
    a->crop_ratio_min = ratio[0];
    a->crop_ratio_max = ratio[1];
    return CDL_OK;
}

int augment_normalises(const AugmentConfig *a)
{
    for (int k = 0; k < 3; k++)
        if (a->mean[k] != 0.0f || a->std[k] != 1.0f)
            return 1;
    return 0;
}

int augment_is_identity(const AugmentConfig *a, int c, int h, int w)
{
    return c == a->out_c && h == a->out_h && w == a->out_w && !a->random_resized_crop &&
           !a->max_crop && !a->pad && !a->flip && !a->flip_vertical && a->angle == 0 &&
           a->brightness == 0 && a->contrast == 0 && a->hue == 0 && a->saturation == 1 &&
           a->exposure == 1 && !augment_normalises(a) && a->erasing == 0 && !a->center_crop &&
           a->box_jitter == 0 && a->box_resize == 0 && !a->mosaic;
}

void augment_seed(Rng *r, uint64_t seed, int epoch, int sample_index)
{
    /* The seed is mixed so that these streams differ from the init and dropout generators
     * seeded from the same base seed. */
    rng_seed(r, seed ^ 0x6175676d656e74ULL,
             ((uint64_t)(uint32_t)epoch << 32) | (uint32_t)sample_index);
}

/* ---- random parameters ---- */

static float uniform(Rng *r, float lo, float hi)
{
    return lo + (hi - lo) * rng_uniform(r);
}

/* darknet's rand_scale: uniform between 1 and s, then its reciprocal with p = 0.5. */
static float rand_scale(Rng *r, float s)
{
    float v = uniform(r, 1.0f, s);
    return rng_uniform(r) < 0.5f ? v : 1.0f / v;
}

/* ColorJitter's factor for strength x: uniform in [max(0, 1 - x), 1 + x]. */
static float jitter_factor(Rng *r, float x)
{
    return uniform(r, fmaxf(0.0f, 1.0f - x), 1.0f + x);
}

void augment_resized_crop_box(int w, int h, const float scale[2], const float ratio[2], Rng *rng,
                              CropBox *box)
{
    const float area = (float)w * (float)h;
    const float log_lo = logf(ratio[0]), log_hi = logf(ratio[1]);
    for (int attempt = 0; attempt < 10; attempt++) {
        float target = area * uniform(rng, scale[0], scale[1]);
        float aspect = expf(uniform(rng, log_lo, log_hi));
        int bw = (int)rintf(sqrtf(target * aspect)), bh = (int)rintf(sqrtf(target / aspect));
        if (bw > 0 && bw <= w && bh > 0 && bh <= h) {
            box->y = (int)rng_below(rng, (uint32_t)(h - bh + 1));
            box->x = (int)rng_below(rng, (uint32_t)(w - bw + 1));
            box->w = bw;
            box->h = bh;
            return;
        }
    }
    const float in_ratio = (float)w / (float)h;
    box->w = w;
    box->h = h;
    if (in_ratio < ratio[0])
        box->h = (int)fmaxf(1.0f, rintf((float)w / ratio[0]));
    else if (in_ratio > ratio[1])
        box->w = (int)fmaxf(1.0f, rintf((float)h * ratio[1]));
    box->x = (w - box->w) / 2;
    box->y = (h - box->h) / 2;
}

int augment_erasing_box(int w, int h, Rng *rng, CropBox *box)
{
    const float area = (float)w * (float)h;
    const float log_lo = logf(0.3f), log_hi = logf(3.3f);
    for (int attempt = 0; attempt < 10; attempt++) {
        float target = area * uniform(rng, 0.02f, 0.33f);
        float aspect = expf(uniform(rng, log_lo, log_hi)); /* h / w, as torchvision's erasing */
        int bh = (int)rintf(sqrtf(target * aspect)), bw = (int)rintf(sqrtf(target / aspect));
        if (bh < h && bw < w) {
            box->y = (int)rng_below(rng, (uint32_t)(h - bh + 1));
            box->x = (int)rng_below(rng, (uint32_t)(w - bw + 1));
            box->w = bw;
            box->h = bh;
            return 1;
        }
    }
    return 0;
}

Affine augment_rotation(int w, int h, float degrees)
{
    const float rad = degrees * (float)(M_PI / 180.0);
    const float co = cosf(rad), si = sinf(rad);
    const float cx = 0.5f * (float)(w - 1), cy = 0.5f * (float)(h - 1);
    Affine m = {co, -si, cx - co * cx + si * cy, si, co, cy - si * cx - co * cy};
    return m;
}

Affine augment_darknet_crop(int iw, int ih, int ow, int oh, int min_crop, int max_crop,
                            float aspect, float angle, Rng *rng)
{
    const float squeeze = rand_scale(rng, aspect);
    const int side = min_crop + (int)rng_below(rng, (uint32_t)(max_crop - min_crop + 1));
    /* darknet compares h with w*aspect; the squeezed image's short side is min(h, w/aspect). */
    const float short_side = fminf((float)ih, (float)iw / squeeze);
    const float scale = (float)side / short_side;
    const float rad = uniform(rng, -angle, angle) * (float)(M_PI / 180.0);
    const float range_x = ((float)iw * scale / squeeze - (float)ow) / 2;
    const float range_y = ((float)ih * scale - (float)oh) / 2;
    const float dx = uniform(rng, -range_x, range_x), dy = uniform(rng, -range_y, range_y);
    /* Input offset from the image center of output pixel (x, y), before rotation:
     * X = (x + 0.5 - ow/2 + dx) * kx, Y = (y + 0.5 - oh/2 + dy) * ky. */
    const float kx = squeeze / scale, ky = 1.0f / scale, co = cosf(rad), si = sinf(rad);
    const float bx = (0.5f - 0.5f * (float)ow + dx) * kx, by = (0.5f - 0.5f * (float)oh + dy) * ky;
    Affine m = {co * kx, -si * ky, co * bx - si * by + 0.5f * (float)iw - 0.5f,
                si * kx, co * ky,  si * bx + co * by + 0.5f * (float)ih - 0.5f};
    return m;
}

/* ---- pixel operations ---- */

void augment_warp(const Image *src, const Affine *m, int clamp_edges, float fill, Image *dst)
{
    const int iw = src->w, ih = src->h;
    const size_t in_plane = (size_t)ih * iw, out_plane = (size_t)dst->h * dst->w;
    for (int y = 0; y < dst->h; y++) {
        for (int x = 0; x < dst->w; x++) {
            const float sx = m->xx * (float)x + m->xy * (float)y + m->x0;
            const float sy = m->yx * (float)x + m->yy * (float)y + m->y0;
            const float fx0 = floorf(sx), fy0 = floorf(sy);
            const float fx = sx - fx0, fy = sy - fy0;
            const float wts[4] = {(1 - fx) * (1 - fy), fx * (1 - fy), (1 - fx) * fy, fx * fy};
            /* The four neighbours' offsets in the plane, -1 for fill. */
            long idx[4];
            for (int k = 0; k < 4; k++) {
                float px = fx0 + (float)(k & 1), py = fy0 + (float)(k >> 1);
                if (clamp_edges) {
                    px = fminf(fmaxf(px, 0.0f), (float)(iw - 1));
                    py = fminf(fmaxf(py, 0.0f), (float)(ih - 1));
                }
                idx[k] = px >= 0 && px < (float)iw && py >= 0 && py < (float)ih
                             ? (long)py * iw + (long)px
                             : -1;
            }
            for (int ch = 0; ch < src->c; ch++) {
                const float *plane = src->data + ch * in_plane;
                float v = 0;
                for (int k = 0; k < 4; k++)
                    v += wts[k] * (idx[k] >= 0 ? plane[idx[k]] : fill);
                dst->data[ch * out_plane + (size_t)y * dst->w + x] = v;
            }
        }
    }
}

/* Copies the w x h block at (sx, sy) of src [c][sh][sw] to (dx, dy) of dst [c][dh][dw]. */
static void copy_block(const float *src, int c, int sh, int sw, int sx, int sy, float *dst, int dh,
                       int dw, int dx, int dy, int w, int h)
{
    for (int ch = 0; ch < c; ch++)
        for (int y = 0; y < h; y++)
            memcpy(dst + ((size_t)ch * dh + dy + y) * dw + dx,
                   src + ((size_t)ch * sh + sy + y) * sw + sx, (size_t)w * sizeof *dst);
}

static void fill_values(float *p, size_t n, float v)
{
    for (size_t i = 0; i < n; i++)
        p[i] = v;
}

void augment_pad_crop(const float *src, int c, int h, int w, int pad, int ox, int oy, float *dst)
{
    /* The output window starts at (ox - pad, oy - pad) of src; copy its overlap with src. */
    const int sx = ox - pad, sy = oy - pad;
    const int x0 = sx > 0 ? sx : 0, y0 = sy > 0 ? sy : 0;
    const int x1 = sx + w < w ? sx + w : w, y1 = sy + h < h ? sy + h : h;
    fill_values(dst, (size_t)c * h * w, 0.0f);
    if (x1 > x0 && y1 > y0)
        copy_block(src, c, h, w, x0, y0, dst, h, w, x0 - sx, y0 - sy, x1 - x0, y1 - y0);
}

void augment_flip(float *img, int c, int h, int w, int vertical)
{
    for (int ch = 0; ch < c; ch++) {
        float *p = img + (size_t)ch * h * w;
        if (vertical) {
            for (int y = 0; y < h / 2; y++)
                for (int x = 0; x < w; x++) {
                    float t = p[(size_t)y * w + x];
                    p[(size_t)y * w + x] = p[(size_t)(h - 1 - y) * w + x];
                    p[(size_t)(h - 1 - y) * w + x] = t;
                }
        } else {
            for (int y = 0; y < h; y++)
                for (int x = 0; x < w / 2; x++) {
                    float t = p[(size_t)y * w + x];
                    p[(size_t)y * w + x] = p[(size_t)y * w + w - 1 - x];
                    p[(size_t)y * w + w - 1 - x] = t;
                }
        }
    }
}

/* darknet's rgb_to_hsv for one pixel (grays get hue 0 where darknet divides by zero). */
static void pixel_rgb_to_hsv(float r, float g, float b, float *h, float *s, float *v)
{
    const float max = fmaxf(r, fmaxf(g, b)), min = fminf(r, fminf(g, b));
    const float delta = max - min;
    *v = max;
    *s = max > 0 ? delta / max : 0;
    *h = 0;
    if (delta > 0) {
        float hh = r == max   ? (g - b) / delta
                   : g == max ? 2 + (b - r) / delta
                              : 4 + (r - g) / delta;
        *h = (hh < 0 ? hh + 6 : hh) / 6;
    }
}

/* darknet's hsv_to_rgb for one pixel. */
static void pixel_hsv_to_rgb(float h, float s, float v, float *r, float *g, float *b)
{
    if (s == 0) {
        *r = *g = *b = v;
        return;
    }
    const float h6 = h * 6;
    const int sector = (int)floorf(h6);
    const float f = h6 - (float)sector;
    const float p = v * (1 - s), q = v * (1 - s * f), t = v * (1 - s * (1 - f));
    switch (sector) {
    case 0:
        *r = v, *g = t, *b = p;
        break;
    case 1:
        *r = q, *g = v, *b = p;
        break;
    case 2:
        *r = p, *g = v, *b = t;
        break;
    case 3:
        *r = p, *g = q, *b = v;
        break;
    case 4:
        *r = t, *g = p, *b = v;
        break;
    default:
        *r = v, *g = p, *b = q;
        break;
    }
}

void augment_rgb_to_hsv(float *img, size_t plane)
{
    float *r = img, *g = img + plane, *b = img + 2 * plane;
    for (size_t i = 0; i < plane; i++)
        pixel_rgb_to_hsv(r[i], g[i], b[i], &r[i], &g[i], &b[i]);
}

void augment_hsv_to_rgb(float *img, size_t plane)
{
    float *h = img, *s = img + plane, *v = img + 2 * plane;
    for (size_t i = 0; i < plane; i++)
        pixel_hsv_to_rgb(h[i], s[i], v[i], &h[i], &s[i], &v[i]);
}

static float clamp01(float v)
{
    return v < 0 ? 0 : v > 1 ? 1 : v;
}

void augment_distort_hsv(float *img, int c, size_t plane, float dhue, float dsat, float dexp)
{
    if (c != 3) {
        for (size_t i = 0; i < (size_t)c * plane; i++)
            img[i] = clamp01(img[i] * dexp);
        return;
    }
    float *r = img, *g = img + plane, *b = img + 2 * plane;
    for (size_t i = 0; i < plane; i++) {
        float h, s, v;
        pixel_rgb_to_hsv(r[i], g[i], b[i], &h, &s, &v);
        h += dhue;
        h = h > 1 ? h - 1 : h < 0 ? h + 1 : h;
        pixel_hsv_to_rgb(h, s * dsat, v * dexp, &r[i], &g[i], &b[i]);
        r[i] = clamp01(r[i]);
        g[i] = clamp01(g[i]);
        b[i] = clamp01(b[i]);
    }
}

void augment_brightness(float *img, size_t n, float factor)
{
    for (size_t i = 0; i < n; i++)
        img[i] = clamp01(img[i] * factor);
}

void augment_contrast(float *img, int c, size_t plane, float factor)
{
    const size_t n = (size_t)c * plane;
    double sum = 0;
    if (c == 3) {
        for (size_t i = 0; i < plane; i++)
            sum += 0.299 * img[i] + 0.587 * img[plane + i] + 0.114 * img[2 * plane + i];
        sum /= (double)plane;
    } else {
        for (size_t i = 0; i < n; i++)
            sum += img[i];
        sum /= (double)n;
    }
    const float offset = (1 - factor) * (float)sum;
    for (size_t i = 0; i < n; i++)
        img[i] = clamp01(factor * img[i] + offset);
}

void augment_normalize(float *img, int c, size_t plane, const float *mean, const float *std)
{
    for (int k = 0; k < c; k++) {
        const float m = mean[k], inv = 1.0f / std[k];
        float *p = img + (size_t)k * plane;
        for (size_t i = 0; i < plane; i++)
            p[i] = (p[i] - m) * inv;
    }
}

/* ---- the pipelines ---- */

void augment_scratch_free(AugmentScratch *s)
{
    for (int k = 0; k < AUGMENT_SCRATCH_BUFFERS; k++) {
        free(s->buf[k]);
        s->buf[k] = NULL;
        s->floats[k] = 0;
    }
    free(s->truth);
    s->truth = NULL;
    s->truth_floats = 0;
    image_scratch_free(&s->image);
}

float *augment_scratch_reserve(AugmentScratch *s, int k, size_t floats)
{
    if (s->floats[k] < floats) {
        float *p = realloc(s->buf[k], floats * sizeof *p);
        if (!p)
            return NULL;
        s->buf[k] = p;
        s->floats[k] = floats;
    }
    return s->buf[k];
}

/* Frames in as eval does into dst [c][out_h][out_w] (letterbox, short-side resize + center
 * crop, or a plain resize), converting channels, and says where in's normalised coordinates land
 * in placed; scratch buffer 0 holds the resized image. */
static int frame_eval(const AugmentConfig *a, const Image *in, int c, AugmentScratch *s, float *dst,
                      BoxPlacement *placed)
{
    const int oh = a->out_h, ow = a->out_w;
    int rh = oh, rw = ow; /* the resized image */
    *placed = box_placement_identity();
    if (a->letterbox) {
        if ((double)ow / in->w < (double)oh / in->h)
            rh = (int)((long)in->h * ow / in->w);
        else
            rw = (int)((long)in->w * oh / in->h);
        rh = rh > 0 ? rh : 1;
        rw = rw > 0 ? rw : 1;
    } else if (a->center_crop) {
        const float th = a->resize_size ? (float)a->resize_size : (float)oh / 0.875f,
                    tw = a->resize_size ? (float)a->resize_size : (float)ow / 0.875f;
        if ((double)in->w * th >= (double)in->h * tw) {
            rh = (int)th;
            rw = (int)((double)th * in->w / in->h);
        } else {
            rw = (int)tw;
            rh = (int)((double)tw * in->h / in->w);
        }
    } else {
        return image_resize_with(in, NULL, c, oh, ow, a->interpolation, &s->image, dst);
    }
    float *resized = augment_scratch_reserve(s, 0, (size_t)c * rh * rw);
    if (!resized)
        return CDL_ERUNTIME;
    if (a->letterbox) /* darknet's own resize: the same input as darknet's predict */
        resize_darknet(in, c, rh, rw, resized);
    else if (image_resize_with(in, NULL, c, rh, rw, a->interpolation, &s->image, resized))
        return CDL_ERUNTIME;
    /* The resized image's corner in dst: inside it (letterbox) or outside (center crop). */
    int x0, y0;
    if (a->letterbox) {
        x0 = (ow - rw) / 2;
        y0 = (oh - rh) / 2;
        fill_values(dst, (size_t)c * oh * ow, 0.5f);
        copy_block(resized, c, rh, rw, 0, 0, dst, oh, ow, x0, y0, rw, rh);
    } else {
        /* torchvision CenterCrop: offsets round half to even, as Python's round. */
        x0 = -(int)rint((rw - ow) / 2.0);
        y0 = -(int)rint((rh - oh) / 2.0);
        copy_block(resized, c, rh, rw, -x0, -y0, dst, oh, ow, 0, 0, ow, oh);
    }
    *placed = (BoxPlacement){(float)rw / (float)ow, (float)rh / (float)oh, (float)x0 / (float)ow,
                             (float)y0 / (float)oh, 0};
    return CDL_OK;
}

/* Normalises out [out_c][out_h][out_w]; then, given rng (train), erases a random box. */
static void finish(const AugmentConfig *a, Rng *rng, float *out)
{
    const size_t plane = (size_t)a->out_h * a->out_w;
    if (augment_normalises(a))
        augment_normalize(out, a->out_c, plane, a->mean, a->std);
    CropBox box;
    if (rng && a->erasing > 0 && rng_uniform(rng) < a->erasing &&
        augment_erasing_box(a->out_w, a->out_h, rng, &box))
        for (int ch = 0; ch < a->out_c; ch++)
            for (int y = box.y; y < box.y + box.h; y++)
                fill_values(out + ch * plane + (size_t)y * a->out_w + box.x, (size_t)box.w, 0.0f);
}

/* darknet's detection placement (pjreddie's load_data_detection) of in into dst
 * [in->c][out_h][out_w]: the aspect w/h of in, each side moved by up to jitter of itself, at a
 * scale in [0.25, 2] of the input's width (or height, for an aspect below 1), placed at a random
 * position, the rest grey (0.5); draws the two sides, the scale, then x and y. placed maps in's
 * normalised coordinates into dst. */
static void jitter_place(const AugmentConfig *a, const Image *in, Rng *rng, float *dst,
                         BoxPlacement *placed)
{
    const float w = (float)a->out_w, h = (float)a->out_h;
    const float dw = a->box_jitter * (float)in->w, dh = a->box_jitter * (float)in->h;
    const float side_w = (float)in->w + uniform(rng, -dw, dw);
    const float aspect = side_w / ((float)in->h + uniform(rng, -dh, dh));
    const float scale = uniform(rng, 0.25f, 2.0f);
    const float nw = aspect < 1 ? scale * h * aspect : scale * w;
    const float nh = aspect < 1 ? scale * h : scale * w / aspect;
    const float dx = uniform(rng, 0.0f, w - nw), dy = uniform(rng, 0.0f, h - nh);
    const Affine m = {(float)in->w / nw,      0, -dx * (float)in->w / nw, 0, (float)in->h / nh,
                      -dy * (float)in->h / nh};
    Image placed_image = {in->c, a->out_h, a->out_w, dst};
    augment_warp(in, &m, 0, 0.5f, &placed_image);
    *placed = (BoxPlacement){nw / w, nh / h, dx / w, dy / h, 0};
}

/* AlexeyAB's detection placement (load_data_detection) of in into dst [in->c][out_h][out_w]: the
 * crop [left, w - right) x [top, h - bottom) of in, each offset uniform in [-jitter, jitter] of
 * its side plus a rescale part uniform in [(1 - resize) / 2, (1 - 1 / resize) / 2] of its side,
 * drawn with one number r_near for left and top and another r_far for right and bottom (so the
 * rescale keeps the aspect); with letterbox, the crop widened or heightened about its centre to
 * the input's aspect. The crop is stretched to the input, the parts outside in grey (0.5). Draws
 * r_near, r_far, then the left, right, top and bottom jitters; placed maps in's normalised
 * coordinates into dst. Unlike AlexeyAB's, the offsets are not rounded to whole pixels and the
 * crop keeps at least a pixel. */
static void crop_place(const AugmentConfig *a, const Image *in, Rng *rng, float *dst,
                       BoxPlacement *placed)
{
    const float iw = (float)in->w, ih = (float)in->h;
    const float r_near = rng_uniform(rng), r_far = rng_uniform(rng);
    const float lo = (1 - a->box_resize) / 2, hi = (1 - 1 / a->box_resize) / 2;
    const float dw = a->box_jitter * iw, dh = a->box_jitter * ih;
    float left = uniform(rng, -dw, dw) + iw * (lo + (hi - lo) * r_near);
    float right = uniform(rng, -dw, dw) + iw * (lo + (hi - lo) * r_far);
    float top = uniform(rng, -dh, dh) + ih * (lo + (hi - lo) * r_near);
    float bottom = uniform(rng, -dh, dh) + ih * (lo + (hi - lo) * r_far);
    if (a->letterbox) { /* AlexeyAB's: the image's aspect against the input's, not the crop's */
        const float net_aspect = (float)a->out_w / (float)a->out_h;
        if (iw / ih > net_aspect) {
            const float grow = (iw / net_aspect - ih) / 2;
            top -= grow;
            bottom -= grow;
        } else {
            const float grow = (ih * net_aspect - iw) / 2;
            left -= grow;
            right -= grow;
        }
    }
    /* at least a pixel where jitter and rescale together remove more than the image (AlexeyAB's
     * crop would be empty or inside out) */
    right = fminf(right, iw - left - 1);
    bottom = fminf(bottom, ih - top - 1);
    const float crop_w = iw - left - right, crop_h = ih - top - bottom;
    const float w = (float)a->out_w, h = (float)a->out_h;
    /* output pixel centre x + 0.5 of w is input position left + (x + 0.5) crop_w / w */
    const float sx = crop_w / w, sy = crop_h / h;
    const Affine m = {sx, 0, left + 0.5f * sx - 0.5f, 0, sy, top + 0.5f * sy - 0.5f};
    Image placed_image = {in->c, a->out_h, a->out_w, dst};
    augment_warp(in, &m, 0, 0.5f, &placed_image);
    *placed = (BoxPlacement){iw / crop_w, ih / crop_h, -left / crop_w, -top / crop_h, 0};
}

int augment_frame_train(const AugmentConfig *a, const Image *in, Rng *rng, AugmentScratch *s,
                        float *dst, BoxPlacement *placed)
{
    const int c = in->c;
    Image cropped = {c, a->out_h, a->out_w, dst};
    if (a->box_resize > 1) {
        crop_place(a, in, rng, dst, placed);
        return CDL_OK;
    }
    if (a->box_jitter > 0) {
        jitter_place(a, in, rng, dst, placed);
        return CDL_OK;
    }
    if (a->random_resized_crop) {
        const float scale[2] = {a->crop_scale_min, a->crop_scale_max};
        const float ratio[2] = {a->crop_ratio_min, a->crop_ratio_max};
        CropBox b;
        augment_resized_crop_box(in->w, in->h, scale, ratio, rng, &b);
        return image_resize_with(in, &b, c, a->out_h, a->out_w, a->interpolation, &s->image, dst);
    }
    if (a->max_crop) {
        Affine m = augment_darknet_crop(in->w, in->h, a->out_w, a->out_h, a->min_crop, a->max_crop,
                                        a->aspect, a->angle, rng);
        augment_warp(in, &m, 1, 0.0f, &cropped);
        return CDL_OK;
    }
    return frame_eval(a, in, c, s, dst, placed);
}

int augment_train(const AugmentConfig *a, const Image *in, Rng *rng, AugmentScratch *s, float *out,
                  BoxPlacement *placed)
{
    BoxPlacement where = box_placement_identity();
    float *framed = augment_framed_buffer(a, in->c, s, out);
    if (!framed || augment_frame_train(a, in, rng, s, framed, &where))
        return CDL_ERUNTIME;
    return augment_train_framed(a, in->c, framed, rng, s, out, &where, placed);
}

void augment_jitter_hsv(const AugmentConfig *a, float *img, int c, size_t plane, Rng *rng)
{
    if (a->hue == 0 && a->saturation == 1 && a->exposure == 1)
        return;
    const float dhue = a->hue > 0 ? uniform(rng, -a->hue, a->hue) : 0.0f;
    const float dsat = a->saturation != 1 ? rand_scale(rng, a->saturation) : 1.0f;
    const float dexp = a->exposure != 1 ? rand_scale(rng, a->exposure) : 1.0f;
    augment_distort_hsv(img, c, plane, dhue, dsat, dexp);
}

float *augment_framed_buffer(const AugmentConfig *a, int c, AugmentScratch *s, float *out)
{
    /* The steps work in out itself when it has the decoded channels (no copy at the end). */
    return c == a->out_c ? out : augment_scratch_reserve(s, 1, (size_t)c * a->out_h * a->out_w);
}

int augment_train_framed(const AugmentConfig *a, int c, float *cur, Rng *rng, AugmentScratch *s,
                         float *out, const BoxPlacement *framed_at, BoxPlacement *placed)
{
    const int oh = a->out_h, ow = a->out_w;
    const size_t plane = (size_t)oh * ow;
    BoxPlacement where = *framed_at;
    float *other = augment_scratch_reserve(s, 0, (size_t)c * plane);
    if (!other)
        return CDL_ERUNTIME;
    if (a->pad) {
        const uint32_t offsets = (uint32_t)(2 * a->pad + 1);
        const int oy = (int)rng_below(rng, offsets), ox = (int)rng_below(rng, offsets);
        augment_pad_crop(cur, c, oh, ow, a->pad, ox, oy, other);
        float *t = cur;
        cur = other;
        other = t;
    }
    if (a->flip && rng_uniform(rng) < 0.5f) {
        augment_flip(cur, c, oh, ow, 0);
        where.flip = 1;
    }
    if (a->flip_vertical && rng_uniform(rng) < 0.5f)
        augment_flip(cur, c, oh, ow, 1);
    if (a->angle > 0 && !a->max_crop) {
        const Affine m = augment_rotation(ow, oh, uniform(rng, -a->angle, a->angle));
        const Image from = {c, oh, ow, cur};
        Image to = {c, oh, ow, other};
        augment_warp(&from, &m, 0, 0.0f, &to);
        cur = other;
    }
    if (a->brightness > 0)
        augment_brightness(cur, (size_t)c * plane, jitter_factor(rng, a->brightness));
    if (a->contrast > 0)
        augment_contrast(cur, c, plane, jitter_factor(rng, a->contrast));
    augment_jitter_hsv(a, cur, c, plane, rng);
    if (c == a->out_c) {
        if (cur != out)
            memcpy(out, cur, (size_t)c * plane * sizeof *out);
    } else {
        const Image converted = {c, oh, ow, cur};
        if (image_resize(&converted, NULL, a->out_c, oh, ow, &s->image, out))
            return CDL_ERUNTIME;
    }
    finish(a, rng, out);
    if (placed)
        *placed = where;
    return CDL_OK;
}

int augment_eval(const AugmentConfig *a, const Image *in, AugmentScratch *s, float *out,
                 BoxPlacement *placed)
{
    BoxPlacement where;
    int st = frame_eval(a, in, a->out_c, s, out, &where);
    if (!st)
        finish(a, NULL, out);
    if (placed)
        *placed = where;
    return st;
}

int augment_check_boxes(const AugmentConfig *a, Error *e)
{
    const char *key = a->random_resized_crop ? "random_resized_crop"
                      : a->max_crop          ? "min_crop/max_crop"
                      : a->pad               ? "pad"
                      : a->flip_vertical     ? "flip_vertical"
                      : a->angle > 0         ? "angle"
                      : a->center_crop       ? "center_crop"
                                             : NULL;
    return key ? error_set(e, CDL_EUSAGE,
                           "[net] %s: this augmentation does not move truth boxes yet (a detection "
                           "net takes letterbox or a plain resize, flip, and colour jitter)",
                           key)
               : CDL_OK;
}
