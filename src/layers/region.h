/* [region]'s configuration (layers/region.c parses it; layers/region_loss.c and the CPU's region
 * kernels compute with it). */
#ifndef CDL_REGION_H
#define CDL_REGION_H

#include "core/layer.h"
#include "data/boxes.h"        /* the truth-box layout every detection loss reads (TRUTH_X ..) */
#include "layers/class_keys.h" /* CLASS_TABLE_MAX */

#define REGION_MAX_ANCHORS 64
/* darknet's early anchor prior: while fewer images than this have been seen, every prediction is
 * also pulled toward its anchor at its cell's centre. */
#define REGION_PRIOR_IMAGES 12800

typedef struct Region {
    int classes;
    int num;                               /* anchors per cell */
    float anchors[2 * REGION_MAX_ANCHORS]; /* w, h in grid cells */
    int softmax;                           /* 1: classes by softmax; 0: logistic each */
    int bias_match, rescore, max_boxes;
    float thresh; /* a prediction overlapping a truth above it is not pushed to objectness 0 */
    float coord_scale, object_scale, noobject_scale, class_scale;
    /* background=1 (pjreddie's): entry 4 is a background score, not a logistic objectness; with
     * softmax=1 the softmax runs over it and the classes. Its targets are 1 where no truth is and
     * 0 at a truth's anchor, and detections take objectness 1. */
    int background;
    int has_class_map; /* map=: a truth of class k is learned as class_map[k] */
    int class_map[CLASS_TABLE_MAX];
    float jitter; /* read for darknet's training augmentation, unused by the loss */
    float random; /* multi-scale training (LayerType.multi_scale) */
    /* Per-batch state (resize): darknet's l.delta, [batch][out_shape], written by the forward:
     * the negative gradient of the loss with respect to the outputs (x, y, objectness: before
     * their logistic's derivative) or the inputs (w, h, classes). */
    float *delta;
    /* On a GPU (cuda/region.c), device memory made by its resize: each plane's squared deltas
     * [batch][num][classes + 5] and the mini-batch's cost; NULL on the CPU. */
    double *plane_squares, *cost;
} Region;

#endif
