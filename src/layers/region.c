/* [region]: YOLOv2's detection layer and its loss, as pjreddie's darknet computes them
 * (src/region_layer.c; coords=4, no softmax tree).
 *
 *   in, out [batch][num][classes + 5][h][w]   (darknet's layout: the [convolutional] before,
 *                                             filters = num (classes + 5))
 *   entries per anchor and cell: 0 x, 1 y, 2 w, 3 h, 4 objectness, 5.. class scores
 *   out: x, y, objectness logistic(in); w, h as they come in (the box is anchor * exp(w) / grid
 *        width: anchors are in grid cells); classes softmax over the classes of the cell and
 *        anchor (softmax=1) or logistic each
 *   background=1: entry 4 a background score, as it comes in, or with softmax=1 in the softmax
 *        over entries 4.. (background and classes); its targets are 1 off the truths, 0 at them
 *        (the delta is then with respect to the input), and detections take objectness 1
 *
 * The loss (layers/region_loss.c) reads StepContext.truth as [yolo] does, its first max= boxes.
 * darknet's delta is the negative gradient of: on x, y and objectness, scale/2 (t - out)^2 of
 * the logistic's output; on w, h, scale/2 (t - in)^2; on the classes, class_scale times the
 * softmax's cross-entropy (with logistic classes, each one's binary cross-entropy). The targets
 * are choices, not functions of the input (rescore's IoU target included). cdl adds darknet's
 * printed cost (the sum of squared deltas) / loss_divisor into the loss and the gradient of that
 * surrogate / loss_divisor into the input's gradient, as darknet's GPU backward does (its CPU
 * backward passes nothing). On a GPU the outputs and the loss are computed on the device, by the
 * same rules (layers/region_loss_rules.h, cuda/region.c). */
#include "layers/region.h"

#include "core/net.h"
#include "layers/detector_onnx.h"
#include "layers/multi_scale_keys.h"

/* anchors= w, h pairs in grid cells, one per num (darknet's default: 0.5 each). */
static int parse_anchors(Region *r, const Cfg *cfg, CfgSection *s, Error *e)
{
    int n;
    int st = cfg_get_float_list(cfg, s, "anchors", r->anchors, 2 * REGION_MAX_ANCHORS, &n, e);
    if (st)
        return st;
    if (n == 0)
        for (int i = 0; i < 2 * r->num; i++)
            r->anchors[i] = 0.5f;
    else if (n != 2 * r->num)
        return cfg_bad_value(cfg, s, "anchors", e,
                             "expected %d values (a width and a height for each of num=%d)",
                             2 * r->num, r->num);
    for (int i = 0; i < 2 * r->num; i++)
        if (!(r->anchors[i] > 0))
            return cfg_bad_value(cfg, s, "anchors", e, "anchor sizes must be > 0");
    return CDL_OK;
}

static int parse_scales(Region *r, const Cfg *cfg, CfgSection *s, Error *e)
{
    int st = cfg_get_float(cfg, s, "thresh", 0.5f, &r->thresh, e);
    st = st ? st : cfg_get_float(cfg, s, "coord_scale", 1.0f, &r->coord_scale, e);
    st = st ? st : cfg_get_float(cfg, s, "object_scale", 1.0f, &r->object_scale, e);
    st = st ? st : cfg_get_float(cfg, s, "noobject_scale", 1.0f, &r->noobject_scale, e);
    st = st ? st : cfg_get_float(cfg, s, "class_scale", 1.0f, &r->class_scale, e);
    st = st ? st : cfg_get_float(cfg, s, "jitter", 0.2f, &r->jitter, e);
    return st;
}

/* The layer before must give num (classes + 5) channels, naming both places. */
static int check_filters(const Layer *l, const Region *r, const Cfg *cfg, CfgSection *s,
                         const Net *net, Error *e)
{
    const int want = r->num * (r->classes + 5);
    if (l->in_shape.c == want)
        return CDL_OK;
    if (l->index == 0)
        return error_set(e, CDL_EUSAGE,
                         "%s:%d: layer 0 [%s]: the net input has %d channels; classes=%d and "
                         "num=%d need (classes + 5) x %d = %d",
                         cfg->path, s->line, s->name, l->in_shape.c, r->classes, r->num, r->num,
                         want);
    const Layer *prev = &net->layers[l->index - 1];
    return error_set(e, CDL_EUSAGE,
                     "%s:%d: layer %d [%s]: layer %d [%s] at line %d gives %d channels; "
                     "classes=%d and num=%d need (classes + 5) x %d = %d (set filters=%d there)",
                     cfg->path, s->line, l->index, s->name, prev->index, prev->type->name,
                     prev->line, l->in_shape.c, r->classes, r->num, r->num, want, want);
}

static void region_multi_scale(const Layer *l, float *random, float *resize)
{
    *random = ((const Region *)l->priv)->random;
    *resize = 0;
}

static int region_parse(Layer *l, const Cfg *cfg, CfgSection *s, const Net *net, Error *e)
{
    Region *r = l->priv;
    int coords;
    int st = cfg_get_int_min(cfg, s, "classes", 20, 1, &r->classes, e);
    st = st ? st : cfg_get_int(cfg, s, "coords", 4, &coords, e);
    if (!st && coords != 4)
        st = cfg_bad_value(cfg, s, "coords", e,
                           "only 4 (a box) is supported; darknet's extra mask coordinates are not");
    st = st ? st : cfg_get_int_min(cfg, s, "num", 1, 1, &r->num, e);
    st = st ? st : cfg_require_max(cfg, s, "num", r->num, REGION_MAX_ANCHORS, 1, e);
    st = st ? st : parse_anchors(r, cfg, s, e);
    st = st ? st : cfg_get_int(cfg, s, "softmax", 0, &r->softmax, e);
    st = st ? st : cfg_get_flag(cfg, s, "background", 0, &r->background, e);
    st = st ? st : class_map_parse(cfg, s, r->classes, r->class_map, &r->has_class_map, e);
    st = st ? st : cfg_get_int(cfg, s, "bias_match", 0, &r->bias_match, e);
    st = st ? st : cfg_get_int(cfg, s, "rescore", 0, &r->rescore, e);
    st = st ? st : cfg_get_int_min(cfg, s, "max", 30, 1, &r->max_boxes, e);
    st = st ? st : parse_scales(r, cfg, s, e);
    st = st ? st : parse_multi_scale(cfg, s, &r->random, NULL, e);
    st = st ? st : check_filters(l, r, cfg, s, net, e);
    if (st)
        return st;
    l->out_shape = l->in_shape;
    l->flops = 0;
    return CDL_OK;
}

static int region_truth_boxes(const Layer *l)
{
    const Region *r = l->priv;
    return r->max_boxes;
}

/* The layer's output (logistic x, y and objectness, softmax or logistic classes, w and h as they
 * come); the box decode is the exporter's (model/onnx_detector.c). */
static int region_export_onnx(const Layer *l, const Net *net, OnnxGraph *g, Error *e)
{
    (void)net;
    const Region *r = l->priv;
    if (r->background)
        return error_set(e, CDL_EUSAGE,
                         "layer %d [region]: background=1 is not exported (the ONNX decode reads "
                         "entry 4 as a logistic objectness)",
                         l->index);
    const DetectorActivations a = {r->num, r->classes, 1.0f, r->softmax};
    detector_export_onnx(l, g, &a);
    return CDL_OK;
}

const LayerType region_layer = {
    .name = "region",
    .priv_size = sizeof(Region),
    .parse = region_parse,
    .reads_truth = 1,
    .truth_boxes = region_truth_boxes,
    .multi_scale = region_multi_scale,
    .export_onnx = region_export_onnx,
    .set_size = layer_size_follow_input,
    .backward_ignores_inputs = 1,
};
