/* Detection metrics against scripts/ref/make_detection_map.py: pycocotools' COCOeval on 8 images
 * of truths and detections (AP per class and IoU threshold, mAP@0.5 and @0.5:0.95), the same
 * matches' PASCAL VOC 11-point and area-under-the-curve APs, and darknet's TP/FP, precision,
 * recall, F1 and average IoU at a score threshold; and the refusals.
 *
 * Tolerances: APs are ratios of counts, the same in double on both sides once the matches are
 * (the script keeps every IoU 1e-4 away from a threshold, so float32 IoUs match alike); 1e-6 is
 * the fixture's float32 rounding. IoU sums: 1e-5 relative (float32 IoUs). */
#include <stdlib.h>

#include "check.h"
#include "detect/detection_metrics.h"
#include "ref_fixture.h"

enum { CLASSES = 4 };

/* The fixture's rows [n][skip + 4] (image, class, [score,] x, y, w, h: COCO's left-top
 * corner) as DetBoxes with centre boxes (malloc'd). */
static DetBox *boxes_of(const RefTensor *t, int with_score)
{
    const int n = t->dims[0], cols = t->dims[1];
    DetBox *b = malloc((size_t)n * sizeof *b);
    for (int i = 0; b && i < n; i++) {
        const float *r = t->data + (size_t)i * cols, *xywh = r + 2 + with_score;
        b[i] = (DetBox){(int)r[0],
                        (int)r[1],
                        with_score ? r[2] : 0,
                        {xywh[0] + xywh[2] / 2, xywh[1] + xywh[3] / 2, xywh[2], xywh[3]}};
    }
    return b;
}

static void expect_aps(const DetMetrics *m, const RefTensor *want)
{
    for (int t = 0; t < DET_IOU_STEPS; t++)
        for (int k = 0; k < CLASSES; k++)
            CHECK_NEAR(m->per_class[k].ap[t], want->data[t * CLASSES + k], 1e-6);
}

static void test_metrics_match_pycocotools(void)
{
    RefFixture f;
    if (ref_fixture_load("tests/ref/detection_map.ref", &f))
        return;
    const RefTensor *truths = ref_fixture_get(&f, "truths"), *dets = ref_fixture_get(&f, "dets");
    DetBox *gt = boxes_of(truths, 0), *dt = boxes_of(dets, 1);
    const float thresh = ref_fixture_get(&f, "thresh")->data[0];
    const char *ap_names[] = {"ap101", "ap11", "ap0"};
    const int points[] = {101, 11, 0};
    for (int p = 0; gt && dt && p < 3; p++) {
        DetMetrics m;
        Error e = {0};
        CHECK(det_metrics_compute(gt, truths->dims[0], dt, dets->dims[0], CLASSES, points[p],
                                  thresh, &m, &e) == CDL_OK);
        expect_aps(&m, ref_fixture_get(&f, ap_names[p]));
        if (points[p] == 101) { /* COCOeval.stats[0] and [1] */
            const float *stats = ref_fixture_get(&f, "stats")->data;
            CHECK_NEAR(m.map50_95, stats[0], 1e-6);
            CHECK_NEAR(m.map50, stats[1], 1e-6);
        }
        CHECK(m.classes_with_truths == 3); /* class 3 has detections only: left out */
        const float *pc = ref_fixture_get(&f, "per_class")->data;
        for (int k = 0; k < CLASSES; k++) {
            CHECK(m.per_class[k].tp == (int)pc[3 * k] && m.per_class[k].fp == (int)pc[3 * k + 1]);
            CHECK_NEAR(m.per_class[k].iou_sum, pc[3 * k + 2], 1e-5 * (1 + pc[3 * k + 2]));
        }
        const float *tot = ref_fixture_get(&f, "totals")->data;
        CHECK(m.tp == (int)tot[0] && m.fp == (int)tot[1] && m.fn == (int)tot[2]);
        CHECK_NEAR(m.precision, tot[3], 1e-6);
        CHECK_NEAR(m.recall, tot[4], 1e-6);
        CHECK_NEAR(m.f1, tot[5], 1e-6);
        CHECK_NEAR(m.avg_iou, tot[6], 1e-5);
        det_metrics_free(&m);
    }
    free(gt);
    free(dt);
    ref_fixture_free(&f);
}

static void test_no_truths_gives_no_mean(void)
{
    const DetBox found = {0, 1, 0.9f, {5, 5, 2, 2}};
    DetMetrics m;
    Error e = {0};
    CHECK(det_metrics_compute(NULL, 0, &found, 1, 2, 101, 0.25f, &m, &e) == CDL_OK);
    CHECK(m.classes_with_truths == 0 && m.map50 == 0 && m.map50_95 == 0);
    CHECK(m.per_class[1].ap[0] == -1 && m.fp == 1 && m.precision == 0 && m.recall == 0);
    det_metrics_free(&m);
}

static void test_refusals(void)
{
    const DetBox box = {0, 2, 0.5f, {5, 5, 2, 2}};
    DetMetrics m;
    Error e = {0};
    CHECK(det_metrics_compute(&box, 1, NULL, 0, 2, 101, 0.25f, &m, &e) == CDL_EUSAGE);
    CHECK_CONTAINS(e.msg, "truth 0 has class 2, outside 0..1");
    CHECK(det_metrics_compute(NULL, 0, NULL, 0, 2, 10, 0.25f, &m, &e) == CDL_EUSAGE);
    CHECK_CONTAINS(e.msg, "points must be 0, 11 or 101, not 10");
}

int main(void)
{
    test_metrics_match_pycocotools();
    test_no_truths_gives_no_mean();
    test_refusals();
    return check_report("test_detection_metrics");
}
