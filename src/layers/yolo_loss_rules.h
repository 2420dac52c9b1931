/* [yolo]'s loss rule by rule (darknet's delta and cost given truth boxes: AlexeyAB's
 * yolo_layer.c and box.c), as functions of one cell or one sample that the host's loop
 * (layers/yolo_loss.c) and the GPU's kernels (cuda/kernels/yolo.cu) both call, so that the two
 * compute the same rules from one source.
 *
 *   out, delta [batch][n_mask][classes + 5][h][w]   truth of a sample [n_truth][TRUTH_FLOATS]
 *
 * The order, which the rules depend on: delta zeroed; then per sample every cell's predictions
 * (yolo_cell_predictions: each cell only its own entries, so the cells are independent), then the
 * sample's truths in order (yolo_sample_truths: later truths add to or overwrite earlier ones'),
 * then with iou_thresh < 1 each cell's box deltas averaged (yolo_cell_average); the cost from
 * each sample's sums (its planes' squared deltas, layers/loss_squares.h, added by yolo_add_plane)
 * added over the samples in order (yolo_cost).
 *
 * What the delta is the gradient of (its sign flipped): on objectness and class scores, of the
 * binary cross-entropy of the logistic output against 0 or 1 (σ(z) - t is d BCE / dz); with
 * iou_loss=mse and scale_x_y=1, on x, y of s BCE(σ(z), t) and on w, h of s (t - z)^2 / 2, times
 * iou_normalizer, s = 2 - truth w h; label_smooth_eps smooths those class targets,
 * objectness_smooth makes some objectness and class targets IoUs (held fixed), focal_loss
 * (delta_class) puts the focal loss on the truth class. Not a gradient: the choices (which cell and
 * anchor a truth goes to, the ignore rule, a second truth in a cell overwriting the first's class
 * target) are steps; scale_x_y != 1 drops its factor; the IoU losses' deltas are darknet's own
 * expressions (dx_box_iou: w, h not halved, no logistic factor on x, y); iou_thresh < 1 divides box
 * deltas by the classes of positive delta. The printed cost is none of these losses either.
 * With new_coords the outputs are the input itself (x, y scaled): the objectness and class deltas
 * are then minus the gradient of half the squared error (t - in)^2, those of mse on w, h of
 * s (t - in)^2 / 2 and on x, y of s (t - out)^2 / (2 scale_x_y). counters_per_class multiplies a
 * truth's box and objectness deltas and its class's delta by the class's weight. */
#ifndef CDL_YOLO_LOSS_RULES_H
#define CDL_YOLO_LOSS_RULES_H

#include <float.h>
#include <math.h>

#include "data/box_overlap.h"
#include "layers/loss_squares.h"
#include "layers/yolo.h"
#include "util/host_device.h"

#define YOLO_PI 3.14159265358979323846 /* M_PI, which strict C++ hides */

/* Directions of a box's x, y, w, h that raise an IoU (darknet's dxrep, already in x, y, w, h). */
typedef struct YoloBoxGrad {
    float x, y, w, h;
} YoloBoxGrad;

/* What yolo_delta_box reports for the cost: the IoU and GIoU of the prediction with its truth. */
typedef struct YoloBoxIous {
    float iou, giou;
} YoloBoxIous;

/* Where one anchor of one cell keeps its entries: out[at + entry * stride]. */
typedef struct YoloCell {
    size_t at;
    int i, j;   /* column and row */
    int anchor; /* index among all num anchors */
} YoloCell;

/* darknet's CIoU aspect term 4/π² (atan(w_b/h_b) - atan(w_a/h_a))². */
static inline CDL_HOST_DEVICE float yolo_aspect_term(Box a, Box b)
{
    const float d = atanf(b.w / b.h) - atanf(a.w / a.h);
    return (float)(4 / (YOLO_PI * YOLO_PI)) * d * d;
}

/* box_iou, box_giou, box_diou (with darknet's exponent 0.6 on the distance term), box_ciou. */
static inline CDL_HOST_DEVICE float yolo_iou_kind(Box a, Box b, YoloIouLoss kind)
{
    if (kind == YOLO_DIOU)
        return box_diou(a, b, 0.6f);
    const float iou = box_iou(a, b);
    float cw, ch, inter, uni;
    box_enclosing(a, b, &cw, &ch);
    if (kind == YOLO_GIOU) {
        box_areas(a, b, &inter, &uni);
        return cw * ch == 0 ? iou : iou - (cw * ch - uni) / (cw * ch);
    }
    const float c2 = cw * cw + ch * ch;
    if (kind != YOLO_CIOU || c2 == 0)
        return iou;
    const float dist = ((a.x - b.x) * (a.x - b.x) + (a.y - b.y) * (a.y - b.y)) / c2;
    const float ar = yolo_aspect_term(a, b);
    return iou - (dist + ar / (1 - iou + ar + 0.000001f) * ar);
}

/* The centre-distance term of DIoU and CIoU, with the enclosing box's corners chosen as darknet
 * picks them (pred's side where it sticks out). */
static inline CDL_HOST_DEVICE YoloBoxGrad yolo_distance_grad(Box p, Box t)
{
    const float pt = p.y - p.h / 2, pb = p.y + p.h / 2, pl = p.x - p.w / 2, pr = p.x + p.w / 2;
    const float tt = t.y - t.h / 2, tb = t.y + t.h / 2, tl = t.x - t.w / 2, tr = t.x + t.w / 2;
    float cw, ch;
    box_enclosing(p, t, &cw, &ch);
    const float c = cw * cw + ch * ch;
    const float s = (p.x - t.x) * (p.x - t.x) + (p.y - t.y) * (p.y - t.y);
    const float dcw_dx = (float)(pr > tr) - (float)(pl < tl);
    const float dch_dy = (float)(pb > tb) - (float)(pt < tt);
    const float dcw_dw = 0.5f * (pr > tr) + 0.5f * (pl < tl);
    const float dch_dh = 0.5f * (pb > tb) + 0.5f * (pt < tt);
    const YoloBoxGrad g = {(2 * (t.x - p.x) * c - 2 * cw * dcw_dx * s) / (c * c),
                           (2 * (t.y - p.y) * c - 2 * ch * dch_dy * s) / (c * c),
                           2 * cw * dcw_dw * s / (c * c), 2 * ch * dch_dh * s / (c * c)};
    return g;
}

/* darknet's dx_box_iou: the direction that raises IoU (or GIoU, DIoU, CIoU) in the prediction's
 * x, y, w, h, from its top, bottom, left and right sides (the prediction's w, h are positive:
 * exp of the input, 0 replaced by 1). Where the boxes do not overlap, GIoU, DIoU and CIoU keep
 * only their extra term. */
static inline CDL_HOST_DEVICE YoloBoxGrad yolo_dx_box_iou(Box p, Box t, YoloIouLoss kind)
{
    const float pt = p.y - p.h / 2, pb = p.y + p.h / 2, pl = p.x - p.w / 2, pr = p.x + p.w / 2;
    const float tt = t.y - t.h / 2, tb = t.y + t.h / 2, tl = t.x - t.w / 2, tr = t.x + t.w / 2;
    const float area = (pb - pt) * (pr - pl), truth_area = (tb - tt) * (tr - tl);
    const float ih = fminf(pb, tb) - fmaxf(pt, tt), iw = fminf(pr, tr) - fmaxf(pl, tl);
    const float inter = iw * ih, uni = area + truth_area - inter;
    const float cw = fmaxf(pr, tr) - fminf(pl, tl), ch = fmaxf(pb, tb) - fminf(pt, tt);
    const float c = cw * ch;
    /* d/d(top, bottom, left, right) of the prediction's area, the intersection, the union and
     * the enclosing area. */
    const float dx_area[4] = {-(pr - pl), pr - pl, -(pb - pt), pb - pt};
    const float d_inter[4] = {pt > tt ? -iw : 0, pb < tb ? iw : 0, pl > tl ? -ih : 0,
                              pr < tr ? ih : 0};
    const float d_enc[4] = {pt < tt ? -cw : 0, pb > tb ? cw : 0, pl < tl ? -ch : 0,
                            pr > tr ? ch : 0};
    const int apart = iw <= 0 || ih <= 0;
    float side[4];
    for (int k = 0; k < 4; k++) {
        const float d_uni = dx_area[k] - d_inter[k];
        side[k] = uni > 0 ? (uni * d_inter[k] - inter * d_uni) / (uni * uni) : 0;
        if (kind == YOLO_GIOU) {
            const float extra = (c * d_uni - uni * d_enc[k]) / (c * c);
            side[k] = apart ? extra : side[k] + (c > 0 ? extra : 0);
        }
    }
    YoloBoxGrad g = {side[2] + side[3], side[0] + side[1], side[3] - side[2], side[1] - side[0]};
    if (kind != YOLO_DIOU && kind != YOLO_CIOU)
        return g;
    YoloBoxGrad d = yolo_distance_grad(p, t);
    if (kind == YOLO_CIOU) {
        const float diff = atanf(t.w / t.h) - atanf(p.w / p.h);
        const float ar = yolo_aspect_term(p, t);
        const float alpha = ar / (1 - inter / uni + ar + 0.000001f);
        d.w += alpha * (float)(8 / (YOLO_PI * YOLO_PI)) * diff * p.h;
        d.h -= alpha * (float)(8 / (YOLO_PI * YOLO_PI)) * diff * p.w;
    }
    if (apart)
        return d;
    if (cw * cw + ch * ch > 0) {
        g.x += d.x, g.y += d.y, g.w += d.w, g.h += d.h;
    }
    return g;
}

/* darknet's get_yolo_box: the box of cell c's anchor, relative to the net input (new_coords: w,
 * h the anchor's times (2 out)^2, else times exp(out)). */
static inline CDL_HOST_DEVICE Box yolo_predicted_box(const Yolo *yo, const float *out, YoloCell c,
                                                     int w, int h, size_t stride)
{
    const float tw = out[c.at + 2 * stride], th = out[c.at + 3 * stride];
    const Box b = {
        (c.i + out[c.at]) / w, (c.j + out[c.at + stride]) / h,
        (yo->new_coords ? 4 * tw * tw : expf(tw)) * yo->anchors[2 * c.anchor] / yo->net_w,
        (yo->new_coords ? 4 * th * th : expf(th)) * yo->anchors[2 * c.anchor + 1] / yo->net_h};
    return b;
}

/* The weight counters_per_class= gives a truth of class class_id (1 without it). */
static inline CDL_HOST_DEVICE float yolo_class_weight(const Yolo *yo, int class_id)
{
    return yo->has_multipliers ? yo->class_multipliers[class_id] : 1.0f;
}

static inline CDL_HOST_DEVICE float yolo_finite_or_zero(float v)
{
    return isfinite(v) ? v : 0;
}

/* darknet's delta_yolo_box with accumulate=1: adds the box deltas of cell c toward truth, weighed
 * by normalizer (iou_normalizer times the truth class's weight). With new_coords the w, h targets
 * of mse are sqrt(truth size / (4 anchor)) and the IoU deltas of w, h have no exp factor. */
static inline CDL_HOST_DEVICE YoloBoxIous yolo_delta_box(const Yolo *yo, const float *out,
                                                         float *delta, YoloCell c, Box truth, int w,
                                                         int h, size_t stride, float normalizer)
{
    Box pred = yolo_predicted_box(yo, out, c, w, h, stride);
    const YoloBoxIous ious = {box_iou(pred, truth), yolo_iou_kind(pred, truth, YOLO_GIOU)};
    const float *x = out + c.at;
    float *d = delta + c.at;
    if (yo->iou_loss == YOLO_MSE) {
        const float s = (2 - truth.w * truth.h) * normalizer;
        const float rw = truth.w * yo->net_w / yo->anchors[2 * c.anchor];
        const float rh = truth.h * yo->net_h / yo->anchors[2 * c.anchor + 1];
        d[0] += s * (truth.x * w - c.i - x[0]);
        d[stride] += s * (truth.y * h - c.j - x[stride]);
        d[2 * stride] += s * ((yo->new_coords ? sqrtf(rw / 4) : logf(rw)) - x[2 * stride]);
        d[3 * stride] += s * ((yo->new_coords ? sqrtf(rh / 4) : logf(rh)) - x[3 * stride]);
        return ious;
    }
    pred.w = pred.w == 0 ? 1 : pred.w;
    pred.h = pred.h == 0 ? 1 : pred.h;
    const YoloBoxGrad g = yolo_dx_box_iou(pred, truth, yo->iou_loss);
    float v[4] = {g.x, g.y, g.w, g.h};
    if (!yo->new_coords)
        v[2] *= expf(x[2 * stride]), v[3] *= expf(x[3 * stride]);
    for (int k = 0; k < 4; k++) {
        v[k] = yolo_finite_or_zero(v[k] * normalizer);
        if (yo->max_delta != FLT_MAX)
            v[k] = fminf(fmaxf(v[k], -yo->max_delta), yo->max_delta);
        d[k * stride] += v[k];
    }
    return ious;
}

/* A class target y with label_smooth_eps: y (1 - eps) + eps / 2. */
static inline CDL_HOST_DEVICE float yolo_smoothed(const Yolo *yo, float y)
{
    return yo->label_smooth_eps != 0 ? y * (1 - yo->label_smooth_eps) + 0.5f * yo->label_smooth_eps
                                     : y;
}

/* darknet's delta_yolo_class: targets 1 for the class and 0 for the others, smoothed by
 * label_smooth_eps; a cell that already has a target class only gets this one's set. With
 * counters_per_class the truth class's delta is weighed by its multiplier, and by cls_normalizer
 * too where all classes are set (without it cls_normalizer has no effect). With focal_loss (where a
 * cell gets its first class) every class's delta is (target - p) times alpha g(p_t), alpha = 0.5
 * and g(p) = (1 - p) (1 - p - 2 p log p): the truth class's is minus the gradient of the focal loss
 * -alpha (1 - p)^2 log p (gamma 2), the others' that of alpha g(p_t) BCE(p, 0), g(p_t) taken as
 * a constant. */
static inline CDL_HOST_DEVICE void yolo_delta_class(const Yolo *yo, const float *out, float *delta,
                                                    size_t at, int class_id, size_t stride)
{
    if (delta[at + stride * class_id] != 0) {
        const float r = yolo_smoothed(yo, 1) - out[at + stride * class_id];
        if (isfinite(r))
            delta[at + stride * class_id] = r;
        delta[at + stride * class_id] *= yolo_class_weight(yo, class_id);
        return;
    }
    if (yo->focal_loss) {
        const float pt = out[at + stride * class_id] + 0.000000000000001f;
        const float weight = 0.5f * -(1 - pt) * (2 * pt * logf(pt) + pt - 1);
        for (int k = 0; k < yo->classes; k++)
            delta[at + stride * k] = ((float)(k == class_id) - out[at + stride * k]) * weight;
        return;
    }
    for (int k = 0; k < yo->classes; k++) {
        const float r = yolo_smoothed(yo, (float)(k == class_id)) - out[at + stride * k];
        if (isfinite(r))
            delta[at + stride * k] = r;
    }
    if (yo->has_multipliers)
        delta[at + stride * class_id] *= yo->class_multipliers[class_id] * yo->cls_normalizer;
}

/* Steps *t to the next truth from there among the first n_truth of a sample, as darknet reads
 * them: a box with x = 0 ends the list, a class out of range is skipped; its class through map=.
 * Returns 0 at the end. */
static inline CDL_HOST_DEVICE int yolo_next_truth(const Yolo *yo, const float *truth, int n_truth,
                                                  int *t, Box *box, int *class_id)
{
    for (; *t < n_truth; ++*t) {
        const float *f = truth + (size_t)*t * TRUTH_FLOATS;
        box->x = f[TRUTH_X], box->y = f[TRUTH_Y], box->w = f[TRUTH_W], box->h = f[TRUTH_H];
        *class_id = f[TRUTH_CLASS] >= 0 && f[TRUTH_CLASS] < yo->classes ? (int)f[TRUTH_CLASS] : -1;
        if (box->x == 0)
            return 0;
        if (*class_id >= 0) {
            *class_id = yo->has_class_map ? yo->class_map[*class_id] : *class_id;
            return 1;
        }
    }
    return 0;
}

/* Anchor n as a box at the origin, relative to the net input. */
static inline CDL_HOST_DEVICE Box yolo_anchor_shape(const Yolo *yo, int n)
{
    const Box b = {0, 0, yo->anchors[2 * n] / yo->net_w, yo->anchors[2 * n + 1] / yo->net_h};
    return b;
}

/* The rule for anchor n of cell (i, j) of the sample at `sample` (its entries zeroed before),
 * where its prediction overlaps a truth of the sample's truth [n_truth][TRUTH_FLOATS]: objectness
 * is pushed to 0 unless the best IoU with a truth of a class the cell already scores above 0.25
 * passes ignore_thresh (then, with objectness_smooth, pushed to that IoU where that raises the
 * delta); above truth_thresh the cell learns that truth as if assigned to it, objectness and the
 * truth's class toward the IoU squared with objectness_smooth (the class's and the box's deltas
 * weighed by the class's weight, the objectness's not). */
static inline CDL_HOST_DEVICE void yolo_cell_predictions(const Yolo *yo, const float *out,
                                                         float *delta, const float *truth,
                                                         int n_truth, size_t sample, int w, int h,
                                                         int n, int j, int i)
{
    const size_t stride = (size_t)w * h, entries = (size_t)(yo->classes + 5) * stride;
    const YoloCell c = {sample + n * entries + (size_t)j * w + i, i, j, yo->mask[n]};
    const size_t obj = c.at + 4 * stride, cls = c.at + 5 * stride;
    const Box pred = yolo_predicted_box(yo, out, c, w, h, stride);
    float best_match = 0, best = 0;
    int best_class = 0, scored = 0, class_id;
    Box tb, best_box = {0, 0, 0, 0};
    for (int k = 0; k < yo->classes; k++)
        scored |= out[cls + stride * k] > 0.25f;
    for (int t = 0; yolo_next_truth(yo, truth, n_truth, &t, &tb, &class_id); t++) {
        const float iou = box_iou(pred, tb);
        if (iou > best_match && scored)
            best_match = iou;
        if (iou > best) {
            best = iou;
            best_box = tb;
            best_class = class_id;
        }
    }
    delta[obj] = yo->obj_normalizer * (0 - out[obj]);
    if (best_match > yo->ignore_thresh)
        delta[obj] = yo->objectness_smooth
                         ? fmaxf(delta[obj], yo->obj_normalizer * (best_match - out[obj]))
                         : 0;
    if (best > yo->truth_thresh) {
        const float target = yo->objectness_smooth ? best * best : 1;
        delta[obj] = yo->obj_normalizer * (target - out[obj]);
        const float weight = yolo_class_weight(yo, best_class);
        yolo_delta_class(yo, out, delta, cls, best_class, stride);
        if (yo->objectness_smooth)
            delta[cls + stride * best_class] = weight * (target - out[cls + stride * best_class]);
        yolo_delta_box(yo, out, delta, c, best_box, w, h, stride, yo->iou_normalizer * weight);
    }
}

/* Assigns truth tb to cell c: box, objectness 1 (with objectness_smooth only where the cell's
 * objectness delta is still 0) and class deltas, the box and objectness weighed by the class's
 * weight, and the tally. */
static inline CDL_HOST_DEVICE void yolo_assign_truth(const Yolo *yo, const float *out, float *delta,
                                                     YoloCell c, Box tb, int class_id, int w, int h,
                                                     YoloSampleLoss *tally)
{
    const size_t stride = (size_t)w * h;
    const float weight = yolo_class_weight(yo, class_id);
    const YoloBoxIous ious =
        yolo_delta_box(yo, out, delta, c, tb, w, h, stride, yo->iou_normalizer * weight);
    tally->iou_loss += 1 - ious.iou;
    tally->giou_loss += 1 - ious.giou;
    tally->count++;
    float *obj = &delta[c.at + 4 * stride];
    if (!yo->objectness_smooth || *obj == 0)
        *obj = weight * yo->obj_normalizer * (1 - out[c.at + 4 * stride]);
    yolo_delta_class(yo, out, delta, c.at + 5 * stride, class_id, stride);
}

static inline CDL_HOST_DEVICE int yolo_mask_index(const Yolo *yo, int anchor)
{
    for (int n = 0; n < yo->n_mask; n++)
        if (yo->mask[n] == anchor)
            return n;
    return -1;
}

/* The truths of the sample at `sample`, in order, after its cells' predictions: each goes to the
 * cell holding its centre, with the anchor of best IoU by width and height among all num (when
 * this layer has it), and with iou_thresh < 1 also every other anchor of this layer whose IoU of
 * kind iou_thresh_kind passes it; tally's sums start from 0 here. The cell is
 * clamped into the grid: darknet indexes past the row for a centre at exactly 1. */
static inline CDL_HOST_DEVICE void yolo_sample_truths(const Yolo *yo, const float *out,
                                                      float *delta, const float *truth, int n_truth,
                                                      size_t sample, int w, int h,
                                                      YoloSampleLoss *tally)
{
    const size_t stride = (size_t)w * h, entries = (size_t)(yo->classes + 5) * stride;
    int class_id;
    Box tb;
    tally->iou_loss = tally->giou_loss = tally->count = 0;
    tally->squares = tally->box_squares = 0;
    for (int t = 0; yolo_next_truth(yo, truth, n_truth, &t, &tb, &class_id); t++) {
        const Box shape = {0, 0, tb.w, tb.h};
        float best = 0;
        int best_n = 0;
        for (int n = 0; n < yo->total; n++) {
            const float iou = box_iou(yolo_anchor_shape(yo, n), shape);
            if (iou > best) {
                best = iou;
                best_n = n;
            }
        }
        const int i = (int)fminf(tb.x * w, (float)(w - 1)),
                  j = (int)fminf(tb.y * h, (float)(h - 1));
        const size_t at = sample + (size_t)j * w + i;
        for (int n = 0; n < yo->total; n++) {
            const int m = yolo_mask_index(yo, n);
            if (m < 0)
                continue;
            if (n == best_n ||
                (yo->iou_thresh < 1.0f && yolo_iou_kind(yolo_anchor_shape(yo, n), shape,
                                                        yo->iou_thresh_kind) > yo->iou_thresh)) {
                const YoloCell c = {at + m * entries, i, j, n};
                yolo_assign_truth(yo, out, delta, c, tb, class_id, w, h, tally);
            }
        }
    }
}

/* With iou_thresh < 1, a cell's box deltas (added once per truth given it) are divided by the
 * number of its classes with a positive delta; d: the cell's entries, stride apart. */
static inline CDL_HOST_DEVICE void yolo_cell_average(const Yolo *yo, float *d, size_t stride)
{
    if (d[4 * stride] == 0)
        return;
    int positive = 0;
    for (int k = 0; k < yo->classes; k++)
        positive += d[(5 + k) * stride] > 0;
    for (int k = 0; positive && k < 4; k++)
        d[k * stride] /= positive;
}

/* Adds plane k's sum of squared deltas (loss_plane_squares of a sample's [n_mask][classes + 5]
 * planes, k counting them in order) into s->squares, and into s->box_squares where the plane is
 * an x, y, w or h. */
static inline CDL_HOST_DEVICE void yolo_add_plane(const Yolo *yo, int k, double squares,
                                                  YoloSampleLoss *s)
{
    s->squares += squares;
    if (k % (yo->classes + 5) < 4)
        s->box_squares += squares;
}

/* total += s, field by field (the mini-batch's sums, added over the samples in order). */
static inline CDL_HOST_DEVICE void yolo_loss_add(YoloSampleLoss *total, const YoloSampleLoss *s)
{
    total->squares += s->squares;
    total->box_squares += s->box_squares;
    total->iou_loss += s->iou_loss;
    total->giou_loss += s->giou_loss;
    total->count += s->count;
}

/* darknet's cost of the mini-batch (show_details=1, its default) from its sums. */
static inline CDL_HOST_DEVICE double yolo_cost(const Yolo *yo, const YoloSampleLoss *t)
{
    if (yo->iou_loss == YOLO_MSE)
        return t->squares;
    const double iou_loss = yo->iou_loss == YOLO_GIOU ? t->giou_loss : t->iou_loss;
    const double avg = t->count > 0 ? yo->iou_normalizer * iou_loss / t->count : 0;
    return avg + yo->obj_normalizer * (t->squares - t->box_squares);
}

#endif
