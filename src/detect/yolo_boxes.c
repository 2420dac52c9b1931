/* Decoding [yolo] outputs into boxes, as darknet's yolo_layer.c does after a forward. */
#include "detect/yolo_boxes.h"

#include "layers/yolo_loss_rules.h" /* yolo_predicted_box */

int yolo_boxes_append(const Yolo *yo, const float *out, int w, int h, float thresh,
                      DetectionList *list, Error *e)
{
    const size_t stride = (size_t)w * h, entries = (size_t)(yo->classes + 5) * stride;
    for (size_t cell = 0; cell < stride; cell++)
        for (int n = 0; n < yo->n_mask; n++) {
            const float *x = out + n * entries + cell;
            const float objectness = x[4 * stride];
            if (!(objectness > thresh))
                continue;
            if (detection_list_reserve(list, 1, e))
                return e->code;
            const YoloCell c = {n * entries + cell, (int)(cell % w), (int)(cell / w), yo->mask[n]};
            Detection *d = &list->items[list->n];
            d->box = yolo_predicted_box(yo, out, c, w, h, stride);
            d->objectness = objectness;
            d->index = list->n;
            float *prob = list->prob + (size_t)list->n * yo->classes;
            for (int k = 0; k < yo->classes; k++) {
                const float p = objectness * x[(5 + k) * stride];
                prob[k] = p > thresh ? p : 0;
            }
            list->n++;
        }
    return CDL_OK;
}

void yolo_boxes_to_image(Detection *d, int n, int image_w, int image_h, int net_w, int net_h,
                         int letterbox)
{
    int new_w = net_w, new_h = net_h;
    if (letterbox && (float)net_w / image_w < (float)net_h / image_h)
        new_h = image_h * net_w / image_w;
    else if (letterbox)
        new_w = image_w * net_h / image_h;
    for (int i = 0; i < n; i++) {
        Box *b = &d[i].box;
        b->x = (float)((b->x - (net_w - new_w) / 2. / net_w) / ((float)new_w / net_w));
        b->y = (float)((b->y - (net_h - new_h) / 2. / net_h) / ((float)new_h / net_h));
        b->w *= (float)net_w / new_w;
        b->h *= (float)net_h / new_h;
    }
}
