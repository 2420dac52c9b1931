/* Label audit: suspects ranked from truths and detections (see det_audit.h). */
#include "detect/det_audit.h"

#include <stdlib.h>

#define MATCH_IOU 0.5f

/* The first index at or after from whose image is not image (boxes in image order). */
static int image_end(const DetBox *b, int n, int from, int image)
{
    while (from < n && b[from].image == image)
        from++;
    return from;
}

/* Suspects of truth t among the image's detections [d0, d1): a wrong class or an off box; marks
 * the evidence used. Returns 1 when *s was filled. */
static int audit_truth(const DetBox *truths, int t, const DetBox *found, int d0, int d1,
                       float confident, char *used, AuditSuspect *s)
{
    const DetBox *truth = &truths[t];
    float p_same = 0, best_iou = 0;
    int other = -1, placed = -1;
    for (int d = d0; d < d1; d++) {
        const float iou = box_iou(truth->box, found[d].box);
        if (found[d].class_id == truth->class_id) {
            if (iou >= MATCH_IOU && found[d].score > p_same)
                p_same = found[d].score;
            if (iou < MATCH_IOU && iou > best_iou) {
                best_iou = iou;
                placed = d;
            }
        } else if (iou >= MATCH_IOU && (other < 0 || found[d].score > found[other].score))
            other = d;
    }
    if (other >= 0 && found[other].score >= confident && found[other].score > p_same) {
        used[other] = 1;
        *s = (AuditSuspect){AUDIT_CLASS, found[other].score * (1 - p_same),    truth->image, t,
                            other,       box_iou(truth->box, found[other].box)};
        return 1;
    }
    if (p_same < confident && placed >= 0 && found[placed].score >= confident) {
        used[placed] = 1;
        *s = (AuditSuspect){
            AUDIT_BOX, found[placed].score * (1 - best_iou), truth->image, t, placed, best_iou};
        return 1;
    }
    return 0;
}

/* Detection d as a missing label, when it is one: confident, unused, matching no truth of
 * [t0, t1), and the highest scoring such detection of those overlapping it. */
static int audit_detection(const DetBox *truths, int t0, int t1, const DetBox *found, int d0,
                           int d1, int d, float confident, const char *used, AuditSuspect *s)
{
    if (used[d] || found[d].score < confident)
        return 0;
    float best = 0;
    for (int t = t0; t < t1; t++) {
        const float iou = box_iou(truths[t].box, found[d].box);
        best = iou > best ? iou : best;
    }
    if (best >= MATCH_IOU)
        return 0;
    for (int o = d0; o < d1; o++)
        if (o != d && !used[o] && found[o].score >= found[d].score &&
            (found[o].score > found[d].score || o < d) &&
            box_iou(found[o].box, found[d].box) >= MATCH_IOU) {
            /* o outranks d at the same place when it is itself a missing label there */
            float o_best = 0;
            for (int t = t0; t < t1; t++) {
                const float iou = box_iou(truths[t].box, found[o].box);
                o_best = iou > o_best ? iou : o_best;
            }
            if (o_best < MATCH_IOU)
                return 0;
        }
    *s = (AuditSuspect){AUDIT_MISSING, found[d].score * (1 - best), found[d].image, -1, d, best};
    return 1;
}

static int by_suspicion(const void *pa, const void *pb)
{
    const AuditSuspect *a = pa, *b = pb;
    if (a->suspicion != b->suspicion)
        return a->suspicion > b->suspicion ? -1 : 1;
    if (a->image != b->image)
        return a->image < b->image ? -1 : 1;
    if (a->kind != b->kind)
        return a->kind < b->kind ? -1 : 1;
    return (a->truth > b->truth) - (a->truth < b->truth);
}

int det_audit(const DetBox *truths, int n_truths, const DetBox *found, int n_found, float confident,
              AuditSuspect **out, int *n, Error *e)
{
    /* at most one suspect per truth and per detection */
    AuditSuspect *s = malloc((size_t)(n_truths + n_found + 1) * sizeof *s);
    char *used = calloc((size_t)n_found + 1, 1);
    if (!s || !used) {
        free(s);
        free(used);
        return error_set(e, CDL_ERUNTIME, "out of memory auditing %d truths", n_truths);
    }
    int count = 0, t0 = 0, d0 = 0;
    while (t0 < n_truths || d0 < n_found) {
        const int image = t0 < n_truths && (d0 >= n_found || truths[t0].image <= found[d0].image)
                              ? truths[t0].image
                              : found[d0].image;
        const int t1 = image_end(truths, n_truths, t0, image);
        const int d1 = image_end(found, n_found, d0, image);
        for (int t = t0; t < t1; t++)
            count += audit_truth(truths, t, found, d0, d1, confident, used, &s[count]);
        for (int d = d0; d < d1; d++)
            count += audit_detection(truths, t0, t1, found, d0, d1, d, confident, used, &s[count]);
        t0 = t1;
        d0 = d1;
    }
    free(used);
    qsort(s, (size_t)count, sizeof *s, by_suspicion);
    *out = s;
    *n = count;
    return CDL_OK;
}
