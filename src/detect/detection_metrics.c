/* COCO-style matching and average precision of detections against truth boxes, and darknet's
 * figures at a score threshold (detection_metrics.h says which rules). */
#include "detect/detection_metrics.h"

#include <float.h>
#include <stdlib.h>
#include <string.h>

double det_iou_threshold(int t)
{
    return 0.5 + 0.05 * t;
}

/* A box's place in the order boxes are grouped in: by class, image, descending score (0 for
 * truths), then position in the input. */
typedef struct SortedBox {
    int class_id, image, index;
    float score;
} SortedBox;

static int compare_sorted(const void *pa, const void *pb)
{
    const SortedBox *a = pa, *b = pb;
    if (a->class_id != b->class_id)
        return a->class_id < b->class_id ? -1 : 1;
    if (a->image != b->image)
        return a->image < b->image ? -1 : 1;
    if (a->score != b->score)
        return a->score > b->score ? -1 : 1;
    return (a->index > b->index) - (a->index < b->index);
}

/* One detection's outcome, what accumulation needs. */
typedef struct Outcome {
    float score;
    int image, rank;  /* rank: its place among its image and class's detections */
    unsigned matched; /* bit t: a true positive at IoU step t */
    float iou50;      /* the IoU with the truth it matched at step 0 */
} Outcome;

/* Descending score; equal scores in image order, then rank (a stable sort of the detections
 * concatenated image by image, as COCOeval.accumulate's mergesort). */
static int compare_outcomes(const void *pa, const void *pb)
{
    const Outcome *a = pa, *b = pb;
    if (a->score != b->score)
        return a->score > b->score ? -1 : 1;
    if (a->image != b->image)
        return a->image < b->image ? -1 : 1;
    return (a->rank > b->rank) - (a->rank < b->rank);
}

/* Sorted copies of boxes [n] (the detections' scores kept, the truths' taken as 0). */
static SortedBox *sort_boxes(const DetBox *boxes, int n, int with_scores)
{
    SortedBox *s = malloc((size_t)(n ? n : 1) * sizeof *s);
    if (!s)
        return NULL;
    for (int i = 0; i < n; i++)
        s[i] = (SortedBox){boxes[i].class_id, boxes[i].image, i, with_scores ? boxes[i].score : 0};
    qsort(s, (size_t)n, sizeof *s, compare_sorted);
    return s;
}

/* COCOeval.evaluateImg for one image and class at every IoU step: the detections dets [nd]
 * (descending score) against the truths gts [ng]; taken: room for ng flags. */
static void match_group(const DetBox *truths, const SortedBox *gts, int ng, const DetBox *found,
                        const SortedBox *dets, int nd, unsigned char *taken, Outcome *out)
{
    for (int d = 0; d < nd; d++)
        out[d] = (Outcome){dets[d].score, dets[d].image, d, 0, 0};
    for (int t = 0; t < DET_IOU_STEPS; t++) {
        memset(taken, 0, (size_t)ng);
        const double thresh = det_iou_threshold(t) < 1 - 1e-10 ? det_iou_threshold(t) : 1 - 1e-10;
        for (int d = 0; d < nd; d++) {
            double best = thresh;
            int m = -1;
            for (int g = 0; g < ng; g++) {
                if (taken[g])
                    continue;
                const double iou = box_iou(found[dets[d].index].box, truths[gts[g].index].box);
                if (iou < best)
                    continue;
                best = iou;
                m = g;
            }
            if (m < 0)
                continue;
            taken[m] = 1;
            out[d].matched |= 1u << t;
            if (t == 0)
                out[d].iou50 = (float)best;
        }
    }
}

/* AP of one class at one IoU step from its outcomes [nd] (sorted) and truths; env: room for nd. */
static double average_precision(const Outcome *o, int nd, int t, int truths, int points, double *rc,
                                double *env)
{
    int tp = 0, fp = 0;
    for (int i = 0; i < nd; i++) {
        tp += (o[i].matched >> t) & 1;
        fp += !((o[i].matched >> t) & 1);
        rc[i] = (double)tp / truths;
        env[i] = tp / (tp + fp + DBL_EPSILON); /* COCOeval's np.spacing(1) */
    }
    for (int i = nd - 1; i > 0; i--)
        env[i - 1] = env[i - 1] > env[i] ? env[i - 1] : env[i];
    if (points == 0) { /* the area under the envelope */
        double area = 0;
        for (int i = 0; i < nd; i++)
            area += (rc[i] - (i ? rc[i - 1] : 0)) * env[i];
        return area;
    }
    /* The envelope at the first point reaching each recall level k / (points - 1), written as
     * numpy's linspace (101) and arange (11) compute it. */
    const double step = points == 101 ? 0.01 : 0.1;
    double sum = 0;
    for (int k = 0, i = 0; k < points; k++) {
        const double level = k * step;
        while (i < nd && rc[i] < level)
            i++;
        sum += i < nd ? env[i] : 0;
    }
    return sum / points;
}

/* Matches class c's detections image by image into out (its outcomes, *n of them); dets and gts
 * point at the class's sorted boxes [nd], [ng]. */
static void match_class(const DetBox *truths, const SortedBox *gts, int ng, const DetBox *found,
                        const SortedBox *dets, int nd, unsigned char *taken, Outcome *out, int *n)
{
    *n = 0;
    for (int d = 0, g = 0; d < nd || g < ng;) {
        const int image =
            d < nd && (g >= ng || dets[d].image <= gts[g].image) ? dets[d].image : gts[g].image;
        int d1 = d, g1 = g;
        while (d1 < nd && dets[d1].image == image)
            d1++;
        while (g1 < ng && gts[g1].image == image)
            g1++;
        const int kept = d1 - d < DET_MAX_PER_IMAGE ? d1 - d : DET_MAX_PER_IMAGE;
        match_group(truths, gts + g, g1 - g, found, dets + d, kept, taken, out + *n);
        *n += kept;
        d = d1;
        g = g1;
    }
    qsort(out, (size_t)*n, sizeof *out, compare_outcomes);
}

/* The class's figures from its outcomes [n]. */
static void class_figures(const Outcome *o, int n, int points, float thresh, double *rc,
                          double *env, DetClassMetrics *c)
{
    for (int t = 0; t < DET_IOU_STEPS; t++)
        c->ap[t] = c->truths ? average_precision(o, n, t, c->truths, points, rc, env) : -1;
    for (int i = 0; i < n; i++) {
        if (!(o[i].score > thresh))
            continue;
        const int hit = o[i].matched & 1;
        c->tp += hit;
        c->fp += !hit;
        c->iou_sum += hit ? o[i].iou50 : 0;
    }
}

/* The means and totals over the classes. */
static void summarise(DetMetrics *m)
{
    double iou_sum = 0, ap50 = 0, ap_all = 0;
    for (int k = 0; k < m->classes; k++) {
        const DetClassMetrics *c = &m->per_class[k];
        m->tp += c->tp;
        m->fp += c->fp;
        iou_sum += c->iou_sum;
        if (!c->truths)
            continue;
        m->classes_with_truths++;
        ap50 += c->ap[0];
        for (int t = 0; t < DET_IOU_STEPS; t++)
            ap_all += c->ap[t];
    }
    const int n = m->classes_with_truths;
    m->map50 = n ? ap50 / n : 0;
    m->map50_95 = n ? ap_all / (n * DET_IOU_STEPS) : 0;
    m->fn = m->truths - m->tp;
    m->precision = m->tp + m->fp ? (double)m->tp / (m->tp + m->fp) : 0;
    m->recall = m->truths ? (double)m->tp / m->truths : 0;
    m->f1 = m->precision + m->recall > 0 ? 2 * m->precision * m->recall / (m->precision + m->recall)
                                         : 0;
    m->avg_iou = m->tp + m->fp ? iou_sum / (m->tp + m->fp) : 0;
}

static int check_classes(const DetBox *boxes, int n, int classes, const char *what, Error *e)
{
    for (int i = 0; i < n; i++)
        if (boxes[i].class_id < 0 || boxes[i].class_id >= classes)
            return error_set(e, CDL_EUSAGE, "%s %d has class %d, outside 0..%d", what, i,
                             boxes[i].class_id, classes - 1);
    return CDL_OK;
}

int det_metrics_compute(const DetBox *truths, int n_truths, const DetBox *found, int n_found,
                        int classes, int points, float thresh, DetMetrics *m, Error *e)
{
    *m = (DetMetrics){.classes = classes, .points = points, .truths = n_truths};
    if (points != 0 && points != 11 && points != 101)
        return error_set(e, CDL_EUSAGE, "points must be 0, 11 or 101, not %d", points);
    if (check_classes(truths, n_truths, classes, "truth", e) ||
        check_classes(found, n_found, classes, "detection", e))
        return e->code;
    const size_t room = (size_t)(n_found ? n_found : 1);
    SortedBox *gts = sort_boxes(truths, n_truths, 0), *dets = sort_boxes(found, n_found, 1);
    Outcome *outcomes = malloc(room * sizeof *outcomes);
    double *rc = malloc(room * sizeof *rc), *env = malloc(room * sizeof *env);
    unsigned char *taken = malloc((size_t)(n_truths ? n_truths : 1));
    m->per_class = calloc((size_t)(classes ? classes : 1), sizeof *m->per_class);
    int st = gts && dets && outcomes && rc && env && taken && m->per_class
                 ? CDL_OK
                 : error_set(e, CDL_ERUNTIME, "out of memory matching %d detections", n_found);
    for (int k = 0, g = 0, d = 0; !st && k < classes; k++) {
        int g1 = g, d1 = d, n;
        while (g1 < n_truths && gts[g1].class_id == k)
            g1++;
        while (d1 < n_found && dets[d1].class_id == k)
            d1++;
        m->per_class[k].truths = g1 - g;
        match_class(truths, gts + g, g1 - g, found, dets + d, d1 - d, taken, outcomes, &n);
        class_figures(outcomes, n, points, thresh, rc, env, &m->per_class[k]);
        g = g1;
        d = d1;
    }
    if (!st)
        summarise(m);
    free(gts);
    free(dets);
    free(outcomes);
    free(rc);
    free(env);
    free(taken);
    if (st)
        det_metrics_free(m);
    return st;
}

void det_metrics_free(DetMetrics *m)
{
    free(m->per_class);
    m->per_class = NULL;
}
