/* Decoding [region] outputs into boxes, as pjreddie's region_layer.c does after a forward (with
 * background=1 every box has objectness 1, its classes their own scores). */
#include "detect/region_boxes.h"

#include <math.h>

int region_boxes_append(const Region *r, const float *out, int w, int h, float thresh,
                        DetectionList *list, Error *e)
{
    const size_t stride = (size_t)w * h, entries = (size_t)(r->classes + 5) * stride;
    for (int n = 0; n < r->num; n++)
        for (size_t cell = 0; cell < stride; cell++) {
            const float *x = out + n * entries + cell;
            const float objectness = r->background ? 1 : x[4 * stride];
            if (!(objectness > thresh))
                continue;
            if (detection_list_reserve(list, 1, e))
                return e->code;
            Detection *d = &list->items[list->n];
            const int i = (int)(cell % w), j = (int)(cell / w);
            d->box = (Box){(i + x[0]) / w, (j + x[stride]) / h,
                           (float)(exp(x[2 * stride]) * r->anchors[2 * n] / w),
                           (float)(exp(x[3 * stride]) * r->anchors[2 * n + 1] / h)};
            d->objectness = objectness;
            d->index = list->n;
            float *prob = list->prob + (size_t)list->n * r->classes;
            for (int k = 0; k < r->classes; k++) {
                const float p = objectness * x[(5 + k) * stride];
                prob[k] = p > thresh ? p : 0;
            }
            list->n++;
        }
    return CDL_OK;
}
