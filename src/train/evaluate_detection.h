/* Evaluation of a detector on a dataset with truth boxes (darknet's detector map): every image
 * of the set detected as `cdl detect` does, at darknet's mAP threshold, then scored against its
 * label file's boxes (detect/detection_metrics.h). */
#ifndef CDL_EVALUATE_DETECTION_H
#define CDL_EVALUATE_DETECTION_H

#include "core/net.h"
#include "data/source.h"
#include "detect/detection_metrics.h"

/* Detections with a score at or below this are not scored (darknet's validate_detector_map). */
#define DETECTION_EVAL_MIN_SCORE 0.005f
/* Truth boxes read per image at most (a label file's first ones). */
enum { DETECTION_EVAL_MAX_TRUTHS = 4096 };

typedef struct DetectionEvalOptions {
    float thresh; /* the score threshold of TP, FP, precision, recall, F1 and average IoU */
    float nms;    /* NMS threshold (0: none) */
    int points;   /* 0, 11 or 101 (detection_metrics.h) */
} DetectionEvalOptions;

/* Every truth and detection of an evaluation, in image order, boxes relative to their image. */
typedef struct DetectionEvalBoxes {
    DetBox *truths, *found;
    int n_truths, n_found;
    int truths_capacity, found_capacity;
} DetectionEvalBoxes;
void detection_eval_boxes_free(DetectionEvalBoxes *b);

/* Runs net (with [yolo] layers, sized for at least one sample) over every image of src in order,
 * one forward each, and fills m (det_metrics_free it) and *images. A sample's boxes come from
 * src->read_boxes; a source without boxes is CDL_EUSAGE. Restores net->train and net->batch.
 * keep (NULL: not kept) receives the truths and detections scored (free them with
 * detection_eval_boxes_free, on failure too). */
int evaluate_detection(Net *net, const SampleSource *src, const DetectionEvalOptions *opt,
                       DetMetrics *m, int *images, DetectionEvalBoxes *keep, Error *e);

#endif
