/* Data augmentation as torchvision and darknet do it, configured by [net] keys (darknet's
 * names where darknet has them): the train-time random transforms and the eval-time
 * resize + center crop, both producing the net's input [c][h][w] from a decoded Image. */
#ifndef CDL_AUGMENT_H
#define CDL_AUGMENT_H

#include "data/image.h"
#include "io/cfg.h"
#include "util/rng.h"

typedef struct AugmentConfig {
    int out_c, out_h, out_w; /* the net's input shape */
    /* Filled by augment_config_parse from [net] keys; see augment.c for names and defaults. */
    int random_resized_crop;              /* crop a random area and aspect ratio, then resize */
    float crop_scale_min, crop_scale_max; /* area fraction range */
    float crop_ratio_min, crop_ratio_max; /* aspect ratio range */
    int pad;                              /* pad by this many pixels, then random crop to size */
    int flip, flip_vertical;              /* random horizontal / vertical flips (p = 0.5) */
    float angle;                          /* random rotation in [-angle, angle] degrees */
    float hue, saturation, exposure;      /* HSV jitter, darknet's meaning */
    float brightness, contrast;           /* torchvision ColorJitter meaning */
    float mean[3], std[3];                /* per-channel normalisation (0 and 1: none) */
    float erasing;                        /* probability of random erasing */
    int letterbox;                        /* eval/predict: fit inside, pad with 0.5 (darknet) */
    int center_crop;                      /* eval: resize the short side then center crop */
} AugmentConfig;

/* Reads the augmentation keys of the [net] section (so cfg_check_unused knows them) and
 * validates their ranges (FILE:LINE errors, CDL_EUSAGE). out_* come from the net's shape. */
int augment_config_parse(const Cfg *cfg, CfgSection *net, int c, int h, int w, AugmentConfig *a,
                         Error *e);
/* True when training needs no transform beyond copying (same-size in-memory samples and no
 * random draws configured): the loader's fast path. */
int augment_is_identity(const AugmentConfig *a, int c, int h, int w);

/* Per-thread workspace so that augmenting allocates nothing after the first calls. */
typedef struct AugmentScratch {
    float *buf[2];
    size_t floats[2];
} AugmentScratch;
void augment_scratch_free(AugmentScratch *s);

/* Train-time transform of in into out [out_c][out_h][out_w]; every random draw comes from
 * rng, so a sample's augmentation depends only on how rng was seeded. Returns CDL_ERUNTIME
 * only when scratch memory cannot be had. */
int augment_train(const AugmentConfig *a, const Image *in, Rng *rng, AugmentScratch *s, float *out);
/* Eval-time: resize (+ center crop or letterbox) and normalise; deterministic. */
int augment_eval(const AugmentConfig *a, const Image *in, AugmentScratch *s, float *out);

#endif
