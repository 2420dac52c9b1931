/* Non-maximum suppression of detections, per class, as darknet's do_nms_sort and diounms_sort. */
#ifndef CDL_NMS_H
#define CDL_NMS_H

#include "detect/detection.h"

/* How a box suppresses a lower-scored one of its class ([yolo] nms_kind=): when their IoU
 * (NMS_DEFAULT, do_nms_sort), their DIoU with exponent 0.6 (NMS_GREEDY: diounms_sort's
 * greedynms) or their DIoU with exponent beta_nms (NMS_DIOU) is above the threshold. */
typedef enum { NMS_DEFAULT, NMS_GREEDY, NMS_DIOU } NmsKind;

/* For each class k in turn: ranks the detections by prob[k], highest first (equal scores by
 * Detection.index: darknet's qsort leaves their order unspecified), then zeroes prob[k] of every
 * detection that a higher-ranked one of nonzero prob[k] suppresses. Detections of objectness 0
 * take no part, as in darknet. The list keeps its order. CDL_ERUNTIME when out of memory. */
int nms_sort(DetectionList *list, float thresh, NmsKind kind, float beta_nms, Error *e);

#endif
