/* The multi-scale training keys of the detection families ([yolo], [region]): darknet's random=
 * and AlexeyAB's resize=, which train/multi_scale.h turns into the sizes of a run's steps; with
 * random=0, resize= is the random rescale of the training crop (data/augment.h box_resize). */
#ifndef CDL_MULTI_SCALE_KEYS_H
#define CDL_MULTI_SCALE_KEYS_H

#include "io/cfg.h"
#include "util/error.h"

/* Reads random= (default 0; 0, 1, or a factor above 1) into *random and, when resize is not NULL,
 * resize= (default 0: not given; else at least 1) into *resize (0 when not read); CDL_EUSAGE
 * naming the key's line on another value. */
int parse_multi_scale(const Cfg *cfg, CfgSection *s, float *random, float *resize, Error *e);

#endif
