/* [yolo]'s configuration (layers/yolo.c parses it; layers/yolo_loss.c and each backend's yolo
 * kernels compute with it). */
#ifndef CDL_YOLO_H
#define CDL_YOLO_H

#include "core/layer.h"
#include "data/boxes.h"        /* the truth-box layout every detection loss reads (TRUTH_X ..) */
#include "layers/class_keys.h" /* CLASS_TABLE_MAX */

#define YOLO_MAX_ANCHORS 64

/* How a box's position is learned (iou_loss=): darknet's IOU_LOSS. */
typedef enum { YOLO_MSE, YOLO_IOU, YOLO_GIOU, YOLO_DIOU, YOLO_CIOU } YoloIouLoss;

/* What darknet's cost of a mini-batch adds over its samples (layers/yolo_loss_rules.h): the sums
 * of the squared deltas, all and those of x, y, w, h, and over the truths given a cell, the sums
 * of 1 - IoU and 1 - GIoU and their count. */
typedef struct YoloSampleLoss {
    double squares, box_squares;
    double iou_loss, giou_loss, count;
} YoloSampleLoss;

typedef struct Yolo {
    int classes;
    int n_mask;                          /* anchors this layer predicts (|mask|) */
    int mask[YOLO_MAX_ANCHORS];          /* their indices among all anchors */
    int total;                           /* num=: all anchors of the net */
    float anchors[2 * YOLO_MAX_ANCHORS]; /* w, h in input pixels, for all num anchors */
    int net_w, net_h;                    /* the net input, what anchors are relative to */
    int max_boxes;                       /* max=: truth boxes read per sample (at most) */
    float ignore_thresh, truth_thresh, iou_thresh;
    YoloIouLoss iou_loss;
    YoloIouLoss iou_thresh_kind; /* how iou_thresh compares anchors (never YOLO_MSE) */
    float iou_normalizer, cls_normalizer, obj_normalizer, max_delta, scale_x_y;
    /* AlexeyAB's class and objectness targets (layers/yolo_loss_rules.h): focal_loss=1 the focal
     * loss's deltas on the classes, label_smooth_eps=e class targets 1 - e/2 and e/2,
     * objectness_smooth=1 IoU-valued objectness targets. */
    int focal_loss, objectness_smooth;
    float label_smooth_eps;
    /* new_coords=1 (scaled-YOLOv4): the input is already logistic (the [convolutional] before has
     * activation=logistic); out = in but x, y scaled by scale_x_y, and the box's w, h are
     * (2 w)^2 anchor / net width instead of exp(w) anchor. */
    int new_coords;
    /* map=: a truth of class k is learned as class_map[k]; counters_per_class=: the class's
     * weight class_multipliers[k] on its class, box and objectness deltas (then cls_normalizer
     * weighs the truth class's delta too). Both for classes <= CLASS_TABLE_MAX only. */
    int has_class_map, has_multipliers;
    int class_map[CLASS_TABLE_MAX];
    float class_multipliers[CLASS_TABLE_MAX];
    /* Read for detection (the data's placement, NMS), unused by the loss: */
    float jitter, beta_nms;
    float random, resize; /* multi-scale training (LayerType.multi_scale); resize 0: not given */
    int nms_kind;         /* 0 default, 1 greedynms, 2 diounms */
    /* Per-batch state (resize): darknet's l.delta, the negative gradient of the loss with
     * respect to the layer's input, [batch][out_shape], written by the forward. */
    float *delta;
    /* On a GPU (cuda/yolo.c), device memory made by its resize: each sample's sums of the loss
     * [batch], each plane's squared deltas [batch][n_mask][classes + 5] and the mini-batch's
     * cost; NULL on the CPU. */
    YoloSampleLoss *sample_loss;
    double *plane_squares, *cost;
} Yolo;

#endif
