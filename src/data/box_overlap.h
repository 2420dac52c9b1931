/* How much two axis-aligned boxes overlap, as darknet's box.c measures it: boxes by centre and
 * size, IoU, the enclosing box of GIoU, and DIoU's centre-distance penalty. Shared by the
 * detection losses (layers/yolo_loss_rules.h, on the host and in CUDA kernels) and non-maximum
 * suppression (detect/nms.c). */
#ifndef CDL_BOX_OVERLAP_H
#define CDL_BOX_OVERLAP_H

#include <math.h>

#include "util/host_device.h"

/* Centre x, y and width, height, in any one unit. */
typedef struct Box {
    float x, y, w, h;
} Box;

/* The length two segments (centre, width) share; negative when they are apart. */
static inline CDL_HOST_DEVICE float box_overlap_1d(float x1, float w1, float x2, float w2)
{
    const float left = fmaxf(x1 - w1 / 2, x2 - w2 / 2);
    const float right = fminf(x1 + w1 / 2, x2 + w2 / 2);
    return right - left;
}

/* The intersection and union areas of a and b. */
static inline CDL_HOST_DEVICE void box_areas(Box a, Box b, float *inter, float *uni)
{
    const float w = box_overlap_1d(a.x, a.w, b.x, b.w), h = box_overlap_1d(a.y, a.h, b.y, b.h);
    *inter = w < 0 || h < 0 ? 0 : w * h;
    *uni = a.w * a.h + b.w * b.h - *inter;
}

/* Intersection over union; 0 when either is 0. */
static inline CDL_HOST_DEVICE float box_iou(Box a, Box b)
{
    float inter, uni;
    box_areas(a, b, &inter, &uni);
    return inter == 0 || uni == 0 ? 0 : inter / uni;
}

/* Width and height of the smallest box holding a and b. */
static inline CDL_HOST_DEVICE void box_enclosing(Box a, Box b, float *w, float *h)
{
    *w = fmaxf(a.x + a.w / 2, b.x + b.w / 2) - fminf(a.x - a.w / 2, b.x - b.w / 2);
    *h = fmaxf(a.y + a.h / 2, b.y + b.h / 2) - fminf(a.y - a.h / 2, b.y - b.h / 2);
}

/* DIoU with darknet's exponent on the distance term: IoU - (d² / c²)^power, d the distance of the
 * centres, c the enclosing box's diagonal; the IoU when c is 0. darknet's box_diou is power 0.6,
 * its box_diounms power beta_nms. */
static inline CDL_HOST_DEVICE float box_diou(Box a, Box b, float power)
{
    float cw, ch;
    box_enclosing(a, b, &cw, &ch);
    const float c2 = cw * cw + ch * ch, iou = box_iou(a, b);
    if (c2 == 0)
        return iou;
    const float d2 = (a.x - b.x) * (a.x - b.x) + (a.y - b.y) * (a.y - b.y);
    return iou - powf(d2 / c2, power);
}

#endif
