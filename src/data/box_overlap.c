/* Overlap measures of boxes given by centre and size (darknet's box.c). */
#include "data/box_overlap.h"

#include <math.h>

/* The length two segments (centre, width) share; negative when they are apart. */
static float overlap(float x1, float w1, float x2, float w2)
{
    const float left = fmaxf(x1 - w1 / 2, x2 - w2 / 2);
    const float right = fminf(x1 + w1 / 2, x2 + w2 / 2);
    return right - left;
}

void box_areas(Box a, Box b, float *inter, float *uni)
{
    const float w = overlap(a.x, a.w, b.x, b.w), h = overlap(a.y, a.h, b.y, b.h);
    *inter = w < 0 || h < 0 ? 0 : w * h;
    *uni = a.w * a.h + b.w * b.h - *inter;
}

float box_iou(Box a, Box b)
{
    float inter, uni;
    box_areas(a, b, &inter, &uni);
    return inter == 0 || uni == 0 ? 0 : inter / uni;
}

void box_enclosing(Box a, Box b, float *w, float *h)
{
    *w = fmaxf(a.x + a.w / 2, b.x + b.w / 2) - fminf(a.x - a.w / 2, b.x - b.w / 2);
    *h = fmaxf(a.y + a.h / 2, b.y + b.h / 2) - fminf(a.y - a.h / 2, b.y - b.h / 2);
}

float box_diou(Box a, Box b, float power)
{
    float cw, ch;
    box_enclosing(a, b, &cw, &ch);
    const float c2 = cw * cw + ch * ch, iou = box_iou(a, b);
    if (c2 == 0)
        return iou;
    const float d2 = (a.x - b.x) * (a.x - b.x) + (a.y - b.y) * (a.y - b.y);
    return iou - powf(d2 / c2, power);
}
