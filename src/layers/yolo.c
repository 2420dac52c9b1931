/* [yolo]: YOLOv3/v4's detection layer and its loss, as AlexeyAB's darknet computes them
 * (src/yolo_layer.c, src/box.c; pjreddie's v3 is the case iou_loss=mse, iou_thresh=1,
 * scale_x_y=1, iou_normalizer=1).
 *
 *   in, out [batch][n_mask][classes + 5][h][w]   (darknet's layout: the [convolutional] before,
 *                                                 filters = |mask| (classes + 5))
 *   entries per anchor and cell: 0 x, 1 y, 2 w, 3 h, 4 objectness, 5.. class scores
 *   out: x, y = scale_x_y logistic(in) - (scale_x_y - 1)/2; objectness and classes
 *        logistic(in); w, h as they come in (the box is anchor * exp(w) / net width)
 *   new_coords=1 (scaled-YOLOv4, whose [convolutional] before has activation=logistic): no
 *        logistic here; x, y = scale_x_y in - (scale_x_y - 1)/2, the rest as it comes in, and the
 *        box is anchor * (2 w)^2 / net width
 *
 * Truth boxes: the loss reads StepContext.truth, [batch][truth_boxes][TRUTH_FLOATS] floats in
 * darknet's net.truth layout (data/boxes.h: x, y, w, h relative to the net input, class), the
 * detection counterpart of StepContext.labels (int class ids, which cannot hold boxes); NULL
 * computes no loss (inference). A net may hold several [yolo] layers anywhere (one per scale);
 * each reads the same boxes, the first max= of them, and keeps its output to the end of the pass
 * (core/net_memory.c) for detection.
 *
 * The loss: darknet's delta (the negative gradient it back-propagates into the convolution) and
 * its printed cost, per layer and mini-batch: with iou_loss=mse the sum of squared deltas; with
 * an IoU loss iou_normalizer times the mean of 1 - IoU (1 - GIoU for giou) over the matched
 * truths, plus obj_normalizer times the squared deltas of objectness and classes. cdl adds
 * cost / loss_divisor into the loss (darknet's per-image loss) and -delta / loss_divisor into
 * the input's gradient. The delta is the exact gradient of a loss for some terms only
 * (layers/yolo_loss_rules.h says which); it is not the gradient of the printed cost. */
#include "layers/yolo.h"

#include <float.h>

#include "core/net.h"
#include "layers/detector_onnx.h"
#include "layers/multi_scale_keys.h"

static const char *const iou_loss_names[] = {"mse", "iou", "giou", "diou", "ciou"};
static const char *const nms_kind_names[] = {"default", "greedynms", "diounms"};

/* mask= (default 0..num-1), each in [0, num). */
static int parse_mask(Yolo *yo, const Cfg *cfg, CfgSection *s, Error *e)
{
    int st = cfg_get_int_list(cfg, s, "mask", yo->mask, YOLO_MAX_ANCHORS, &yo->n_mask, e);
    if (st)
        return st;
    if (!yo->n_mask) {
        yo->n_mask = yo->total;
        for (int n = 0; n < yo->total; n++)
            yo->mask[n] = n;
    }
    for (int n = 0; n < yo->n_mask; n++)
        if (yo->mask[n] < 0 || yo->mask[n] >= yo->total)
            return cfg_bad_value(cfg, s, "mask", e, "anchor %d is not among num=%d anchors",
                                 yo->mask[n], yo->total);
    return CDL_OK;
}

/* anchors= w, h pairs in input pixels, one per num (darknet's default: 0.5 each). */
static int parse_anchors(Yolo *yo, const Cfg *cfg, CfgSection *s, Error *e)
{
    int n;
    int st = cfg_get_float_list(cfg, s, "anchors", yo->anchors, 2 * YOLO_MAX_ANCHORS, &n, e);
    if (st)
        return st;
    if (n == 0)
        for (int i = 0; i < 2 * yo->total; i++)
            yo->anchors[i] = 0.5f;
    else if (n != 2 * yo->total)
        return cfg_bad_value(cfg, s, "anchors", e,
                             "expected %d values (a width and a height for each of num=%d)",
                             2 * yo->total, yo->total);
    for (int i = 0; i < 2 * yo->total; i++)
        if (!(yo->anchors[i] > 0))
            return cfg_bad_value(cfg, s, "anchors", e, "anchor sizes must be > 0");
    return CDL_OK;
}

static int parse_thresholds(Yolo *yo, const Cfg *cfg, CfgSection *s, Error *e)
{
    int kind = 0;
    int st = cfg_get_float(cfg, s, "ignore_thresh", 0.5f, &yo->ignore_thresh, e);
    st = st ? st : cfg_get_float(cfg, s, "truth_thresh", 1.0f, &yo->truth_thresh, e);
    st = st ? st : cfg_get_float(cfg, s, "iou_thresh", 1.0f, &yo->iou_thresh, e);
    st = st ? st : cfg_get_named(cfg, s, "iou_thresh_kind", iou_loss_names + 1, 4, &kind, e);
    st = st ? st : cfg_get_float(cfg, s, "scale_x_y", 1.0f, &yo->scale_x_y, e);
    st = st ? st : cfg_get_float(cfg, s, "iou_normalizer", 0.75f, &yo->iou_normalizer, e);
    st = st ? st : cfg_get_float(cfg, s, "cls_normalizer", 1.0f, &yo->cls_normalizer, e);
    st = st ? st : cfg_get_float(cfg, s, "obj_normalizer", 1.0f, &yo->obj_normalizer, e);
    st = st ? st : cfg_get_float(cfg, s, "max_delta", FLT_MAX, &yo->max_delta, e);
    st = st ? st : cfg_require_min(cfg, s, "max_delta", yo->max_delta, 0, e);
    st = st ? st : cfg_get_flag(cfg, s, "focal_loss", 0, &yo->focal_loss, e);
    st = st ? st : cfg_get_flag(cfg, s, "objectness_smooth", 0, &yo->objectness_smooth, e);
    st = st ? st : cfg_get_float(cfg, s, "label_smooth_eps", 0.0f, &yo->label_smooth_eps, e);
    st = st ? st : cfg_require_min(cfg, s, "label_smooth_eps", yo->label_smooth_eps, 0, e);
    st = st ? st : cfg_require_max(cfg, s, "label_smooth_eps", yo->label_smooth_eps, 1, 1, e);
    yo->iou_thresh_kind = (YoloIouLoss)(kind + 1);
    return st;
}

/* The layer before must give |mask| (classes + 5) channels: darknet's "filters= in the
 * [convolutional]-layer doesn't correspond to classes= or mask=", with both places named. */
static int check_filters(const Layer *l, const Yolo *yo, const Cfg *cfg, CfgSection *s,
                         const Net *net, Error *e)
{
    const int want = yo->n_mask * (yo->classes + 5);
    if (l->in_shape.c == want)
        return CDL_OK;
    if (l->index == 0)
        return error_set(e, CDL_EUSAGE,
                         "%s:%d: layer 0 [%s]: the net input has %d channels; classes=%d and %d "
                         "anchors in mask= need (classes + 5) x %d = %d",
                         cfg->path, s->line, s->name, l->in_shape.c, yo->classes, yo->n_mask,
                         yo->n_mask, want);
    const Layer *prev = &net->layers[l->index - 1];
    return error_set(e, CDL_EUSAGE,
                     "%s:%d: layer %d [%s]: layer %d [%s] at line %d gives %d channels; "
                     "classes=%d and %d anchors in mask= need (classes + 5) x %d = %d (set "
                     "filters=%d there)",
                     cfg->path, s->line, l->index, s->name, prev->index, prev->type->name,
                     prev->line, l->in_shape.c, yo->classes, yo->n_mask, yo->n_mask, want, want);
}

static void yolo_multi_scale(const Layer *l, float *random, float *resize)
{
    const Yolo *yo = l->priv;
    *random = yo->random;
    *resize = yo->resize;
}

static int yolo_parse(Layer *l, const Cfg *cfg, CfgSection *s, const Net *net, Error *e)
{
    Yolo *yo = l->priv;
    int loss = 0;
    int st = cfg_get_int_min(cfg, s, "classes", 20, 1, &yo->classes, e);
    st = st ? st : cfg_get_int_min(cfg, s, "num", 1, 1, &yo->total, e);
    st = st ? st : cfg_require_max(cfg, s, "num", yo->total, YOLO_MAX_ANCHORS, 1, e);
    st = st ? st : parse_mask(yo, cfg, s, e);
    st = st ? st : parse_anchors(yo, cfg, s, e);
    st = st ? st : cfg_get_int_min(cfg, s, "max", 200, 1, &yo->max_boxes, e);
    st = st ? st : cfg_get_float(cfg, s, "jitter", 0.2f, &yo->jitter, e);
    st = st ? st : cfg_get_named(cfg, s, "iou_loss", iou_loss_names, 5, &loss, e);
    st = st ? st : parse_thresholds(yo, cfg, s, e);
    st = st ? st : cfg_get_flag(cfg, s, "new_coords", 0, &yo->new_coords, e);
    st = st ? st : class_map_parse(cfg, s, yo->classes, yo->class_map, &yo->has_class_map, e);
    st = st ? st
            : class_multipliers_parse(cfg, s, yo->classes, yo->max_delta, yo->class_multipliers,
                                      &yo->has_multipliers, e);
    st = st ? st : cfg_get_named(cfg, s, "nms_kind", nms_kind_names, 3, &yo->nms_kind, e);
    st = st ? st : cfg_get_float(cfg, s, "beta_nms", 0.6f, &yo->beta_nms, e);
    st = st ? st : parse_multi_scale(cfg, s, &yo->random, &yo->resize, e);
    st = st ? st : check_filters(l, yo, cfg, s, net, e);
    if (st)
        return st;
    yo->iou_loss = (YoloIouLoss)loss;
    yo->net_w = net->in_shape.w;
    yo->net_h = net->in_shape.h;
    l->out_shape = l->in_shape;
    l->flops = 0;
    return CDL_OK;
}

static float yolo_box_jitter(const Layer *l)
{
    return ((const Yolo *)l->priv)->jitter;
}

static int yolo_truth_boxes(const Layer *l)
{
    const Yolo *yo = l->priv;
    return yo->max_boxes;
}

/* The layer's output (logistic entries, w and h as they come); the box decode is the exporter's
 * (model/onnx_detector.c). */
static int yolo_export_onnx(const Layer *l, const Net *net, OnnxGraph *g, Error *e)
{
    (void)net;
    const Yolo *yo = l->priv;
    if (yo->new_coords)
        return error_set(e, CDL_EUSAGE,
                         "layer %d [yolo]: new_coords=1 is not exported (the ONNX decode is "
                         "darknet's exp box of the logistic outputs)",
                         l->index);
    const DetectorActivations a = {yo->n_mask, yo->classes, yo->scale_x_y, 0};
    detector_export_onnx(l, g, &a);
    return CDL_OK;
}

/* The grid of the input's new size; the anchors, in pixels, are divided by the net's new size. */
static int yolo_set_size(Layer *l, const Net *net, Error *e)
{
    Yolo *yo = l->priv;
    yo->net_w = net->in_shape.w;
    yo->net_h = net->in_shape.h;
    return layer_size_follow_input(l, net, e);
}

const LayerType yolo_layer = {
    .name = "yolo",
    .priv_size = sizeof(Yolo),
    .parse = yolo_parse,
    .reads_truth = 1,
    .truth_boxes = yolo_truth_boxes,
    .box_jitter = yolo_box_jitter,
    .multi_scale = yolo_multi_scale,
    .export_onnx = yolo_export_onnx,
    .set_size = yolo_set_size,
    .backward_ignores_inputs = 1,
    .backward_ignores_output = 1,
};
