/* Detection metrics over a dataset: average precision per class at IoU thresholds 0.50, 0.55, ..
 * 0.95 as pycocotools' COCOeval computes it (bbox, area "all", 100 detections per image and
 * class), its mean (mAP@0.5, mAP@0.5:0.95), and darknet's detector-map figures at a score
 * threshold (TP, FP, precision, recall, F1, average IoU at IoU 0.5).
 *
 * Matching (COCOeval.evaluateImg): per image and class, detections in descending score (at most
 * 100, the highest) each take the not yet matched truth of the highest IoU that is at least the
 * threshold (of equal IoUs the last in truth order); a detection that takes none is a false
 * positive. Per class, detections of all images in descending score (equal scores: image order,
 * then score order within the image) give precision p_i = TP_i / (TP_i + FP_i) and recall
 * r_i = TP_i / truths. AP by `points`:
 *   101  COCO: the mean over recall levels 0, 0.01, .. 1 of the precision envelope (the maximum
 *        precision at any recall >= that) at the first point reaching the level, 0 where none;
 *   11   PASCAL VOC 2007: the mean over recall levels 0, 0.1, .. 1 of the maximum precision at
 *        a recall >= the level, 0 where none;
 *   0    the area under the precision envelope (PASCAL VOC 2010+, darknet's default): the sum
 *        over points where recall rises of the rise times the envelope there.
 * A class without truths has no AP (pycocotools' -1) and is left out of the means; a class with
 * truths and no detections has AP 0. */
#ifndef CDL_DETECTION_METRICS_H
#define CDL_DETECTION_METRICS_H

#include "data/box_overlap.h"
#include "util/error.h"

enum { DET_IOU_STEPS = 10, DET_MAX_PER_IMAGE = 100 };

/* The IoU threshold of step t: 0.50 + 0.05 t. */
double det_iou_threshold(int t);

/* A truth box or a detection of image `image` (0-based), class class_id; the boxes of one image
 * share one unit (pixels, or fractions of the image). */
typedef struct DetBox {
    int image, class_id;
    float score; /* detections only */
    Box box;
} DetBox;

typedef struct DetClassMetrics {
    int truths;
    double ap[DET_IOU_STEPS]; /* -1 when the class has no truths */
    int tp, fp;               /* detections above the score threshold, at IoU 0.5 */
    double iou_sum;           /* of those true positives */
} DetClassMetrics;

typedef struct DetMetrics {
    int classes, points;
    DetClassMetrics *per_class; /* [classes] */
    int classes_with_truths;
    double map50, map50_95; /* over classes with truths (0 when none has) */
    /* at the score threshold, IoU 0.5, over all classes: fn = truths - tp */
    int truths, tp, fp, fn;
    double precision, recall, f1;
    double avg_iou; /* darknet's: the true positives' IoU summed, over tp + fp */
} DetMetrics;

/* Computes m (zeroed first; free with det_metrics_free) from the truths [n_truths] and the
 * detections found [n_found] of `classes` classes (ids outside [0, classes) are CDL_EUSAGE);
 * points 0, 11 or 101 as above; thresh the score threshold of the TP/FP figures (a detection
 * counts when its score is above it). CDL_ERUNTIME when out of memory. */
int det_metrics_compute(const DetBox *truths, int n_truths, const DetBox *found, int n_found,
                        int classes, int points, float thresh, DetMetrics *m, Error *e);
void det_metrics_free(DetMetrics *m);

#endif
