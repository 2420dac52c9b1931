/* Boxes from a [region] layer's output (darknet's get_region_detections). */
#ifndef CDL_REGION_BOXES_H
#define CDL_REGION_BOXES_H

#include "detect/detection.h"
#include "layers/region.h"

/* Appends to list (whose classes are r->classes) every anchor and cell of one sample's output
 * out [num][classes + 5][h][w] (what [region]'s forward leaves: x, y, objectness logistic, w, h
 * raw, class probabilities) whose objectness is above thresh, in darknet's order (anchor by
 * anchor, then the cells row-major): the box ((i + x) / w, (j + y) / h, anchor_w exp(tw) / w,
 * anchor_h exp(th) / h), relative to the net input (anchors are in grid cells), and
 * prob = objectness x class probability where that is above thresh, else 0. */
int region_boxes_append(const Region *r, const float *out, int w, int h, float thresh,
                        DetectionList *list, Error *e);

#endif
