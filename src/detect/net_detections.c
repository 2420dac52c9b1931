/* Gathering a detector's boxes from its [yolo] layers. */
#include "detect/net_detections.h"

#include "detect/nms.h"
#include "detect/yolo_boxes.h"
#include "layers/families.h"

const Layer *net_last_yolo(const Net *net)
{
    for (int i = net->n_layers - 1; i >= 0; i--)
        if (net->layers[i].type == &yolo_layer)
            return &net->layers[i];
    return NULL;
}

int detect_check_framing(const AugmentConfig *aug, Error *e)
{
    if (aug->center_crop)
        return error_set(e, CDL_EUSAGE,
                         "[net] center_crop=1: a detector frames its input with letterbox=1 or a "
                         "plain resize (the crop would cut boxes off)");
    return CDL_OK;
}

int net_detections(const Net *net, int b, const DetectFrame *frame, float thresh, float nms,
                   DetectionList *list, Error *e)
{
    const Layer *last = net_last_yolo(net);
    if (!last)
        return error_set(e, CDL_EUSAGE, "the net has no [yolo] layer: it is not a detector");
    list->n = 0;
    for (int i = 0; i < net->n_layers; i++) {
        const Layer *l = &net->layers[i];
        if (l->type != &yolo_layer)
            continue;
        const Yolo *yo = l->priv;
        if (yo->classes != list->classes)
            return error_set(e, CDL_EUSAGE,
                             "layer %d [yolo] has classes=%d, layer %d [yolo] classes=%d: a "
                             "detector's [yolo] layers must agree",
                             l->index, yo->classes, last->index, list->classes);
        const float *out = l->out + (size_t)b * shape_size(l->out_shape);
        if (yolo_boxes_append(yo, out, l->out_shape.w, l->out_shape.h, thresh, list, e))
            return e->code;
    }
    yolo_boxes_to_image(list->items, list->n, frame->image_w, frame->image_h, net->in_shape.w,
                        net->in_shape.h, frame->letterbox);
    const Yolo *yo = last->priv;
    return nms > 0 ? nms_sort(list, nms, (NmsKind)yo->nms_kind, yo->beta_nms, e) : CDL_OK;
}
