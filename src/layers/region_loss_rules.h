/* [region]'s loss rule by rule (pjreddie's forward_region_layer after the activations, for
 * coords=4 without softmax tree), as functions of one cell or one sample that the
 * host's loop (layers/region_loss.c) and the GPU's kernels (cuda/kernels/region.cu) both call, so
 * that the two compute the same rules from one source.
 *
 *   out, delta of a sample [num][classes + 5][h][w]   truth of a sample [n_truth][TRUTH_FLOATS]
 *
 * Per sample: every prediction's objectness is pushed to 0 (noobject_scale) unless its box
 * overlaps a truth by more than thresh; before REGION_PRIOR_IMAGES images its box is also pulled
 * (scale 0.01) toward its anchor at its cell's centre (region_cell_predictions: each cell only its
 * own entries, so the cells are independent); then each truth in order goes to the cell holding
 * its centre and the anchor whose shape fits it best (bias_match: the anchor's own shape, else
 * the predicted one), which learns the box (coord_scale (2 - w h)), objectness 1 (or the IoU
 * with rescore, object_scale) and the class (class_scale); later writes replace earlier ones, as
 * in darknet (region_sample_truths). With background=1 the objectness targets swap: 1 where no
 * truth is (pushed by noobject_scale), 0 at a truth's anchor (object_scale). A truth's class goes
 * through map= first. The cost: the squared deltas summed per plane, then per
 * sample, then over the samples in order (layers/loss_squares.h). The arithmetic follows darknet's
 * types (exp and log in double, the rest float). */
#ifndef CDL_REGION_LOSS_RULES_H
#define CDL_REGION_LOSS_RULES_H

#include <math.h>
#include <stdint.h>

#include "data/box_overlap.h"
#include "layers/region.h"
#include "util/host_device.h"

/* darknet's get_region_box: the box of anchor n at cell (i, j), relative to the input. */
static inline CDL_HOST_DEVICE Box region_box(const Region *r, const float *x, int n, int i, int j,
                                             int w, int h, size_t stride)
{
    const Box b = {(i + x[0]) / w, (j + x[stride]) / h,
                   (float)(exp(x[2 * stride]) * r->anchors[2 * n] / w),
                   (float)(exp(x[3 * stride]) * r->anchors[2 * n + 1] / h)};
    return b;
}

/* darknet's delta_region_box: writes the box deltas of anchor n at cell (i, j) toward truth;
 * returns the IoU of its prediction with truth. */
static inline CDL_HOST_DEVICE float region_delta_box(const Region *r, const float *x, float *d,
                                                     Box truth, int n, int i, int j, int w, int h,
                                                     size_t stride, float scale)
{
    const float iou = box_iou(region_box(r, x, n, i, j, w, h, stride), truth);
    const float tx = truth.x * w - i, ty = truth.y * h - j;
    const float tw = (float)log(truth.w * w / r->anchors[2 * n]);
    const float th = (float)log(truth.h * h / r->anchors[2 * n + 1]);
    d[0] = scale * (tx - x[0]);
    d[stride] = scale * (ty - x[stride]);
    d[2 * stride] = scale * (tw - x[2 * stride]);
    d[3 * stride] = scale * (th - x[3 * stride]);
    return iou;
}

/* darknet's delta_region_class (no tree): targets 1 for the class and 0 for the others; with
 * logistic classes, a cell whose class 0 already has a delta only gets this class's set. */
static inline CDL_HOST_DEVICE void region_delta_class(const Region *r, const float *x, float *d,
                                                      int class_id, size_t stride)
{
    if (d[0] != 0 && !r->softmax) {
        d[stride * class_id] = r->class_scale * (1 - x[stride * class_id]);
        return;
    }
    for (int k = 0; k < r->classes; k++)
        d[stride * k] = r->class_scale * ((float)(k == class_id) - x[stride * k]);
}

/* Steps *t to the next truth from there of a sample's truth [n_truth][TRUTH_FLOATS] as darknet
 * reads them: at most max= boxes, a box with x = 0 ends the list, a class out of range is
 * skipped; its class through map=. Returns 0 at the end. */
static inline CDL_HOST_DEVICE int region_next_truth(const Region *r, const float *truth,
                                                    int n_truth, int *t, Box *box, int *class_id)
{
    for (; *t < n_truth && *t < r->max_boxes; ++*t) {
        const float *f = truth + (size_t)*t * TRUTH_FLOATS;
        if (f[TRUTH_X] == 0)
            return 0;
        box->x = f[TRUTH_X], box->y = f[TRUTH_Y], box->w = f[TRUTH_W], box->h = f[TRUTH_H];
        *class_id = (int)f[TRUTH_CLASS];
        if (f[TRUTH_CLASS] >= 0 && f[TRUTH_CLASS] < r->classes) {
            *class_id = r->has_class_map ? r->class_map[*class_id] : *class_id;
            return 1;
        }
    }
    return 0;
}

/* Objectness toward 0 unless a truth overlaps, and the early anchor prior (prior: 1 while fewer
 * than REGION_PRIOR_IMAGES images were seen), for anchor n of cell (i, j) of a sample (out, delta
 * at the sample; the cell's entries zeroed before). */
static inline CDL_HOST_DEVICE void region_cell_predictions(const Region *r, const float *out,
                                                           float *delta, const float *truth,
                                                           int n_truth, int w, int h, int prior,
                                                           int n, int j, int i)
{
    const size_t stride = (size_t)w * h, entries = (size_t)(r->classes + 5) * stride;
    const size_t at = n * entries + (size_t)j * w + i;
    const Box pred = region_box(r, out + at, n, i, j, w, h, stride);
    float best = 0;
    Box tb;
    int class_id;
    for (int t = 0; region_next_truth(r, truth, n_truth, &t, &tb, &class_id); t++) {
        const float iou = box_iou(pred, tb);
        best = iou > best ? iou : best;
    }
    const size_t obj = at + 4 * stride;
    delta[obj] = r->noobject_scale * ((float)r->background - out[obj]);
    if (best > r->thresh)
        delta[obj] = 0;
    if (prior) {
        const Box anchor = {(float)((i + .5) / w), (float)((j + .5) / h), r->anchors[2 * n] / w,
                            r->anchors[2 * n + 1] / h};
        region_delta_box(r, out + at, delta + at, anchor, n, i, j, w, h, stride, .01f);
    }
}

/* The anchor of cell (i, j) whose shape fits truth best (the first of equal ones). */
static inline CDL_HOST_DEVICE int region_best_anchor(const Region *r, const float *out, Box truth,
                                                     int i, int j, int w, int h)
{
    const size_t stride = (size_t)w * h, entries = (size_t)(r->classes + 5) * stride;
    const Box shape = {0, 0, truth.w, truth.h};
    float best = 0;
    int best_n = 0;
    for (int n = 0; n < r->num; n++) {
        Box pred = region_box(r, out + n * entries + (size_t)j * w + i, n, i, j, w, h, stride);
        if (r->bias_match) {
            pred.w = r->anchors[2 * n] / w;
            pred.h = r->anchors[2 * n + 1] / h;
        }
        pred.x = pred.y = 0;
        const float iou = box_iou(pred, shape);
        if (iou > best) {
            best = iou;
            best_n = n;
        }
    }
    return best_n;
}

/* A sample's truths in order, after its cells' predictions (x, d at the sample). darknet indexes
 * past the row for a centre at exactly 1: cdl keeps it in the grid. */
static inline CDL_HOST_DEVICE void region_sample_truths(const Region *r, const float *x, float *d,
                                                        const float *truth, int n_truth, int w,
                                                        int h)
{
    const size_t stride = (size_t)w * h, entries = (size_t)(r->classes + 5) * stride;
    Box tb;
    int class_id;
    for (int t = 0; region_next_truth(r, truth, n_truth, &t, &tb, &class_id); t++) {
        const int i = (int)fminf(tb.x * w, (float)(w - 1));
        const int j = (int)fminf(tb.y * h, (float)(h - 1));
        const int n = region_best_anchor(r, x, tb, i, j, w, h);
        const size_t at = n * entries + (size_t)j * w + i;
        const float iou = region_delta_box(r, x + at, d + at, tb, n, i, j, w, h, stride,
                                           r->coord_scale * (2 - tb.w * tb.h));
        const float target = r->background ? 0 : r->rescore ? iou : 1;
        d[at + 4 * stride] = r->object_scale * (target - x[at + 4 * stride]);
        region_delta_class(r, x + at + 5 * stride, d + at + 5 * stride, class_id, stride);
    }
}

#endif
