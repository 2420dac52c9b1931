/* Gathering a detector's boxes from its [yolo] or [region] layers. */
#include "detect/net_detections.h"

#include "detect/nms.h"
#include "detect/region_boxes.h"
#include "detect/yolo_boxes.h"
#include "layers/families.h"

int layer_is_detector(const Layer *l)
{
    return l->type == &yolo_layer || l->type == &region_layer;
}

const Layer *net_last_detector(const Net *net)
{
    for (int i = net->n_layers - 1; i >= 0; i--)
        if (layer_is_detector(&net->layers[i]))
            return &net->layers[i];
    return NULL;
}

int detector_classes(const Layer *l)
{
    return l->type == &yolo_layer ? ((const Yolo *)l->priv)->classes
                                  : ((const Region *)l->priv)->classes;
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
    const Layer *last = net_last_detector(net);
    if (!last)
        return error_set(e, CDL_EUSAGE,
                         "the net has no [yolo] or [region] layer: it is not a detector");
    list->n = 0;
    for (int i = 0; i < net->n_layers; i++) {
        const Layer *l = &net->layers[i];
        if (!layer_is_detector(l))
            continue;
        if (detector_classes(l) != list->classes)
            return error_set(e, CDL_EUSAGE,
                             "layer %d [%s] has classes=%d, layer %d [%s] classes=%d: a "
                             "detector's layers must agree",
                             l->index, l->type->name, detector_classes(l), last->index,
                             last->type->name, list->classes);
        const float *out = l->out + (size_t)b * shape_size(l->out_shape);
        const int st =
            l->type == &yolo_layer
                ? yolo_boxes_append(l->priv, out, l->out_shape.w, l->out_shape.h, thresh, list, e)
                : region_boxes_append(l->priv, out, l->out_shape.w, l->out_shape.h, thresh, list,
                                      e);
        if (st)
            return st;
    }
    yolo_boxes_to_image(list->items, list->n, frame->image_w, frame->image_h, net->in_shape.w,
                        net->in_shape.h, frame->letterbox);
    if (nms <= 0)
        return CDL_OK;
    if (last->type == &region_layer)
        return nms_sort(list, nms, NMS_DEFAULT, 0, e);
    const Yolo *yo = last->priv;
    return nms_sort(list, nms, (NmsKind)yo->nms_kind, yo->beta_nms, e);
}
