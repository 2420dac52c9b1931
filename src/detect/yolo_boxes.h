/* Boxes from a [yolo] layer's output (darknet's get_yolo_detections and correct_yolo_boxes). */
#ifndef CDL_YOLO_BOXES_H
#define CDL_YOLO_BOXES_H

#include "detect/detection.h"
#include "layers/yolo.h"

/* Appends to list (whose classes are yo->classes) every cell and anchor of one sample's output
 * out [n_mask][classes + 5][h][w] (what [yolo]'s forward leaves: x, y already logistic and
 * scaled by scale_x_y, objectness and classes logistic, w, h raw) whose objectness is above
 * thresh, in darknet's order (cell by cell, row-major, then anchor): the box
 * ((i + x) / w, (j + y) / h, anchor_w exp(tw) / net_w, anchor_h exp(th) / net_h), relative to
 * the net input, and prob = objectness x class probability where that is above thresh, else 0. */
int yolo_boxes_append(const Yolo *yo, const float *out, int w, int h, float thresh,
                      DetectionList *list, Error *e);

/* Maps boxes relative to the net input back onto an image_w x image_h image that was resized to
 * it, or with letterbox fitted inside it keeping its aspect (darknet's correct_yolo_boxes: the
 * fitted size in whole pixels, the offset half the rest, not rounded). */
void yolo_boxes_to_image(Detection *d, int n, int image_w, int image_h, int net_w, int net_h,
                         int letterbox);

#endif
