/* [region]'s configuration (layers/region.c parses it; layers/region_loss.c and the CPU's region
 * kernels compute with it). */
#ifndef CDL_REGION_H
#define CDL_REGION_H

#include "core/layer.h"
#include "data/boxes.h" /* the truth-box layout every detection loss reads (TRUTH_X ..) */

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
