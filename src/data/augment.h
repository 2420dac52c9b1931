/* Data augmentation as torchvision and darknet do it, configured by [net] keys (darknet's
 * names where darknet has them): the train-time random transforms and the eval-time
 * resize + center crop, both producing the net's input [c][h][w] from a decoded Image. */
#ifndef CDL_AUGMENT_H
#define CDL_AUGMENT_H

#include <stddef.h>
#include <stdint.h>

#include "data/boxes.h"
#include "data/image.h"
#include "io/cfg.h"
#include "util/rng.h"

typedef struct AugmentConfig {
    int out_c, out_h, out_w; /* the net's input shape */
    /* Filled by augment_config_parse from [net] keys; see augment.c for names and defaults. */
    int random_resized_crop;              /* crop a random area and aspect ratio, then resize */
    float crop_scale_min, crop_scale_max; /* area fraction range */
    float crop_ratio_min, crop_ratio_max; /* aspect ratio range */
    int min_crop, max_crop;  /* darknet: random short side in [min, max], then crop (0: off) */
    float aspect;            /* darknet: random horizontal squeeze in [1/x, x] with min/max_crop */
    int pad;                 /* pad by this many pixels, then random crop to size */
    int flip, flip_vertical; /* random horizontal / vertical flips (p = 0.5) */
    float angle;             /* random rotation in [-angle, angle] degrees */
    float hue, saturation, exposure; /* HSV jitter, darknet's meaning */
    float brightness, contrast;      /* torchvision ColorJitter meaning */
    float mean[3], std[3];           /* per-channel normalisation (0 and 1: none) */
    float erasing;                   /* probability of random erasing */
    int letterbox;                   /* eval/predict: fit inside, pad with 0.5 (darknet) */
    int center_crop;                 /* eval: resize the short side then center crop */
    int resize_size;                 /* center_crop's short side (0: the net's size / 0.875) */
    ResizeFilter interpolation;      /* the resizes' filter (data/image.h) */
    /* Detection (set by the net, not a [net] key: its [yolo] layers' jitter=): darknet's random
     * placement, the image at a random aspect and scale in [0.25, 2] of the input put at a random
     * position on grey, in place of the framing (augment_train); 0: off. */
    float box_jitter;
    /* Detection (set by the net: its [yolo] layers' resize= with random=0): above 1, AlexeyAB's
     * placement (load_data_detection) in place of darknet's: a crop of the image, each side moved
     * by up to box_jitter of the image and the crop rescaled by a factor in [1/box_resize,
     * box_resize] of the image, stretched (or letterboxed) to the input; 0: off. */
    float box_resize;
    int mosaic; /* AlexeyAB's mosaic=1: half the training samples are mosaics (data/mosaic.h) */
} AugmentConfig;

/* Reads the augmentation keys of the [net] section (so cfg_check_unused knows them) and
 * validates their ranges (FILE:LINE errors, CDL_EUSAGE). out_* come from the net's shape. */
int augment_config_parse(const Cfg *cfg, CfgSection *net, int c, int h, int w, AugmentConfig *a,
                         Error *e);
/* True when both augment_train and augment_eval reduce to copying a sample of shape
 * [c][h][w] (no random draws, no resize, no normalisation): the loader's fast path. */
int augment_is_identity(const AugmentConfig *a, int c, int h, int w);

/* Seeds the generator of one sample's augmentation: the draws depend only on (seed, epoch,
 * sample_index), where sample_index is the sample's index in its SampleSource, so they do
 * not depend on the shuffled order or on which loader thread augments the sample. */
void augment_seed(Rng *r, uint64_t seed, int epoch, int sample_index);

/* Per-thread workspace so that augmenting allocates nothing after the first calls: buffers 0 and 1
 * serve augment_train's steps, 2 and 3 a mosaic's pieces (data/mosaic.h), which also keeps the
 * truth boxes of its other three images in truth. */
enum { AUGMENT_SCRATCH_BUFFERS = 4 };
typedef struct AugmentScratch {
    float *buf[AUGMENT_SCRATCH_BUFFERS];
    size_t floats[AUGMENT_SCRATCH_BUFFERS];
    float *truth;
    size_t truth_floats;
    ImageScratch image; /* image_resize's */
} AugmentScratch;
void augment_scratch_free(AugmentScratch *s);
/* Scratch buffer k with room for at least floats values (grows, never shrinks); NULL when out of
 * memory. */
float *augment_scratch_reserve(AugmentScratch *s, int k, size_t floats);

/* Train-time transform of in into out [out_c][out_h][out_w]; every random draw comes from
 * rng, so a sample's augmentation depends only on how rng was seeded. placed (NULL: not asked)
 * receives where in's normalised coordinates land in out, for the transforms
 * augment_check_boxes accepts. Returns CDL_ERUNTIME only when scratch memory cannot be had. */
int augment_train(const AugmentConfig *a, const Image *in, Rng *rng, AugmentScratch *s, float *out,
                  BoxPlacement *placed);
/* augment_train in its two halves, for a mosaic (data/mosaic.h) that frames four images into one
 * before the rest. augment_frame_train: in's random placement (AlexeyAB's crop, darknet's jitter,
 * the resized or darknet crop, or the eval framing) into dst [in->c][out_h][out_w], placed as
 * augment_train's.
 * augment_framed_buffer: where to frame c channels for augment_train_framed (out itself when c is
 * the net's, else scratch buffer 1; NULL when out of memory). augment_train_framed: the steps
 * after the framing (pad, flips, rotation, colour, channel conversion, normalisation, erasing) of
 * framed [c][out_h][out_w] (changed) into out; framed_at is where the framing put the boxes. */
int augment_frame_train(const AugmentConfig *a, const Image *in, Rng *rng, AugmentScratch *s,
                        float *dst, BoxPlacement *placed);
float *augment_framed_buffer(const AugmentConfig *a, int c, AugmentScratch *s, float *out);
int augment_train_framed(const AugmentConfig *a, int c, float *framed, Rng *rng, AugmentScratch *s,
                         float *out, const BoxPlacement *framed_at, BoxPlacement *placed);
/* Eval-time: resize (+ center crop or letterbox) and normalise; deterministic. placed as for
 * augment_train (center crop's boxes may leave the frame). */
int augment_eval(const AugmentConfig *a, const Image *in, AugmentScratch *s, float *out,
                 BoxPlacement *placed);
/* CDL_OK when every transform a configures carries truth boxes (BoxPlacement): letterbox or a
 * plain resize, the left-right flip, colour jitter, normalisation, erasing; else CDL_EUSAGE
 * naming the first [net] key whose transform does not move boxes yet. */
int augment_check_boxes(const AugmentConfig *a, Error *e);

/* ---- The steps, exposed for tests. Images are planar [c][h][w]. ---- */

/* torchvision RandomResizedCrop.get_params on a w x h image: up to 10 tries of an area
 * fraction uniform in scale[0..1] and a log-uniform aspect ratio (w/h) in ratio[0..1], each
 * drawing rng_uniform twice; the first box that fits draws its top row then its left column
 * (rng_below). When none fits, the largest centered box whose ratio is within range. */
void augment_resized_crop_box(int w, int h, const float scale[2], const float ratio[2], Rng *rng,
                              CropBox *box);
/* torchvision RandomErasing.get_params (scale 0.02..0.33, ratio 0.3..3.3) on a w x h image:
 * returns 0 (no erasing) when 10 tries find no box smaller than the image. */
int augment_erasing_box(int w, int h, Rng *rng, CropBox *box);

/* Maps output pixel (x, y) to the input position (sx, sy), pixel centers at integers:
 * sx = xx*x + xy*y + x0, sy = yx*x + yy*y + y0. */
typedef struct Affine {
    float xx, xy, x0, yx, yy, y0;
} Affine;
/* Rotation of a w x h image about its center by degrees (counter-clockwise as displayed). */
Affine augment_rotation(int w, int h, float degrees);
/* darknet's random_augment_image: the short side scaled to a random size in [min_crop,
 * max_crop], squeezed horizontally by rand_scale(aspect), rotated by a random angle in
 * [-angle, angle] degrees and shifted randomly, sampled at ow x oh. Draws, in order: two for
 * the aspect (value, reciprocal coin), the size, the angle, the x then y shift. */
Affine augment_darknet_crop(int iw, int ih, int ow, int oh, int min_crop, int max_crop,
                            float aspect, float angle, Rng *rng);
/* dst [src.c][dst->h][dst->w] = bilinear samples of src at m's positions; a neighbour outside
 * src counts as fill, or as the nearest edge pixel when clamp_edges. */
void augment_warp(const Image *src, const Affine *m, int clamp_edges, float fill, Image *dst);

/* dst [c][h][w] = src [c][h][w] padded by pad zeros on every side, cropped at (ox, oy) of the
 * padded image (0 <= ox, oy <= 2*pad): ox = oy = pad is the identity. */
void augment_pad_crop(const float *src, int c, int h, int w, int pad, int ox, int oy, float *dst);
/* Mirrors img [c][h][w] in place, left-right or (vertical) top-bottom. */
void augment_flip(float *img, int c, int h, int w, int vertical);

/* In place on img [3][plane] between RGB in [0,1] and darknet's HSV (all in [0,1]; hue as a
 * fraction of the circle, 0 for grays). */
void augment_rgb_to_hsv(float *img, size_t plane);
void augment_hsv_to_rgb(float *img, size_t plane);
/* darknet's distort_image on img [c][plane]: hue + dhue (wrapped), saturation * dsat, value *
 * dexp, clamped to [0,1]. A gray image (c != 3) has no hue or saturation: value * dexp. */
void augment_distort_hsv(float *img, int c, size_t plane, float dhue, float dsat, float dexp);
/* The HSV colour jitter of a's hue, saturation and exposure on img [c][plane]: dhue uniform in
 * [-hue, hue], dsat = rand_scale(saturation), dexp = rand_scale(exposure), drawn from rng in that
 * order (a key at its neutral value draws nothing), then augment_distort_hsv. */
void augment_jitter_hsv(const AugmentConfig *a, float *img, int c, size_t plane, Rng *rng);
/* torchvision adjust_brightness: clamp(img * factor) on n values. */
void augment_brightness(float *img, size_t n, float factor);
/* torchvision adjust_contrast: clamp(factor * img + (1 - factor) * m), m the mean luma
 * (0.299 R + 0.587 G + 0.114 B) when c == 3, else the mean of all values. */
void augment_contrast(float *img, int c, size_t plane, float factor);
/* 1 when a's mean or std changes a value (its normalisation is not the identity). */
int augment_normalises(const AugmentConfig *a);
/* img [c][plane] = (img - mean[k]) / std[k] per channel k. */
void augment_normalize(float *img, int c, size_t plane, const float *mean, const float *std);

#endif
