/* How much two axis-aligned boxes overlap, as darknet's box.c measures it: boxes by centre and
 * size, IoU, the enclosing box of GIoU, and DIoU's centre-distance penalty. Shared by the
 * detection loss (layers/yolo_loss.c) and non-maximum suppression (detect/nms.c). */
#ifndef CDL_BOX_OVERLAP_H
#define CDL_BOX_OVERLAP_H

/* Centre x, y and width, height, in any one unit. */
typedef struct Box {
    float x, y, w, h;
} Box;

/* The intersection and union areas of a and b. */
void box_areas(Box a, Box b, float *inter, float *uni);

/* Intersection over union; 0 when either is 0. */
float box_iou(Box a, Box b);

/* Width and height of the smallest box holding a and b. */
void box_enclosing(Box a, Box b, float *w, float *h);

/* DIoU with darknet's exponent on the distance term: IoU - (d² / c²)^power, d the distance of the
 * centres, c the enclosing box's diagonal; the IoU when c is 0. darknet's box_diou is power 0.6,
 * its box_diounms power beta_nms. */
float box_diou(Box a, Box b, float power);

#endif
