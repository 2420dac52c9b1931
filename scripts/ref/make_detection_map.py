"""Reference fixture for cdl's detection metrics (src/detect/detection_metrics.c): pycocotools'
COCOeval on a set of truth boxes and detections, and the other figures cdl reports computed in
numpy from COCOeval's own matches.

Usage: python3 scripts/ref/make_detection_map.py
(a Python with pycocotools and numpy: `python3 -m pip install pycocotools`; writes
tests/ref/detection_map.ref.)

The set: 8 images of 640 x 480, 4 classes. Truths: 2-5 boxes per image of classes 0-2 (class 3
has none). Detections: 0-3 per truth (jittered copies of it, one in five of another class), false
positives anywhere, and image 7 has 110 weak class-0 detections, past COCOeval's 100 per image
and class, and a class-0 truth found only by a detection weaker still, which the limit drops.
Scores are distinct.

Stored (boxes as COCO's [x, y, w, h] in pixels, left-top corner):
  truths [n][6]        image, class, x, y, w, h
  dets [m][7]          image, class, score, x, y, w, h
  ap101 [10][4]        COCOeval's AP per IoU threshold 0.50:0.05:0.95 and class (mean of
                       eval['precision'][t, :, k, area all, maxDets 100]; -1: no truths)
  stats [2]            COCOeval.stats[0] (mAP@0.5:0.95) and stats[1] (mAP@0.5)
  ap11 [10][4], ap0 [10][4]   the same matches' AP as PASCAL VOC 2007 (11 points) and the area
                       under the precision envelope (VOC 2010+), written from the VOC devkit's
                       definitions
  thresh [1]           the score threshold of the figures below (0.25)
  per_class [4][3]     TP, FP (detections above the threshold, COCOeval's matches at IoU 0.5) and
                       the true positives' IoU summed
  totals [7]           TP, FP, FN, precision, recall, F1, average IoU (darknet's: the TP IoUs
                       summed over TP + FP)

The script checks that no IoU lies within 1e-4 of a threshold, so float32 IoUs on the C side
take the same matches.
"""
import contextlib
import io

import numpy as np
from pycocotools.coco import COCO
from pycocotools.cocoeval import COCOeval

from ref_format import fixture_dir, write_ref

IMAGES, CLASSES, W, H = 8, 4, 640, 480
THRESH = 0.25
IOU_THRS = [0.5 + 0.05 * t for t in range(10)]


def random_box(rng):
    w, h = rng.uniform(20, 200), rng.uniform(20, 160)
    return [rng.uniform(0, W - w), rng.uniform(0, H - h), w, h]


def make_set(rng):
    truths, dets = [], []
    for image in range(IMAGES):
        for _ in range(rng.integers(2, 6)):
            cls, box = int(rng.integers(0, 3)), random_box(rng)
            truths.append([image, cls] + box)
            for _ in range(rng.integers(0, 4)):
                jitter = rng.normal(0, 0.12, 4) * [box[2], box[3], box[2], box[3]]
                jbox = [box[0] + jitter[0], box[1] + jitter[1], max(4, box[2] + jitter[2]),
                        max(4, box[3] + jitter[3])]
                dcls = cls if rng.uniform() > 0.2 else int(rng.integers(0, CLASSES))
                dets.append([image, dcls, rng.uniform(0.01, 1)] + jbox)
        for _ in range(rng.integers(0, 4)):
            dets.append([image, int(rng.integers(0, CLASSES)), rng.uniform(0.01, 1)] +
                        random_box(rng))
    for _ in range(110):
        dets.append([7, 0, rng.uniform(0.001, 0.2)] + random_box(rng))
    # a truth found only by a detection weaker than those 110: COCOeval drops it (a miss)
    box = random_box(rng)
    truths.append([7, 0] + box)
    dets.append([7, 0, 0.0005] + [box[0] + 1, box[1] + 1, box[2], box[3]])
    return np.array(truths), np.array(dets)


def coco_eval(truths, dets):
    gt = COCO()
    gt.dataset = {
        "images": [{"id": i, "width": W, "height": H} for i in range(IMAGES)],
        "categories": [{"id": k} for k in range(CLASSES)],
        "annotations": [{"id": n + 1, "image_id": int(t[0]), "category_id": int(t[1]),
                         "bbox": list(t[2:6]), "area": t[4] * t[5], "iscrowd": 0}
                        for n, t in enumerate(truths)]}
    with contextlib.redirect_stdout(io.StringIO()):
        gt.createIndex()
        dt = gt.loadRes([{"image_id": int(d[0]), "category_id": int(d[1]), "score": d[2],
                          "bbox": list(d[3:7])} for d in dets])
        ev = COCOeval(gt, dt, "bbox")
        ev.evaluate()
        ev.accumulate()
        ev.summarize()
    return ev


def check_margins(ev):
    for ious in ev.ious.values():
        if len(ious):
            near = np.abs(np.asarray(ious)[..., None] - np.array(IOU_THRS)) < 1e-4
            assert not near.any(), "an IoU within 1e-4 of a threshold: pick another seed"


def class_outcomes(ev, k):
    """Per detection of class k that COCOeval kept: score, matched flags [10], matched IoU at
    0.5; in accumulate's order (mergesort of the images' lists by descending score)."""
    scores, matches, ious = [], [], []
    area_all = ev.params.areaRng[0]
    for e in ev.evalImgs:
        if e is None or e["category_id"] != k or e["aRng"] != area_all:
            continue
        n = len(e["dtIds"][:100])
        gts = {g: j for j, g in enumerate(e["gtIds"])}
        # evaluateImg's IoU matrix is over dts sorted by score and gts sorted by ignore flag
        # (none are ignored: their order is kept)
        iou = ev.ious[(e["image_id"], k)]
        for d in range(n):
            scores.append(e["dtScores"][d])
            matches.append([e["dtMatches"][t][d] > 0 for t in range(10)])
            g = e["dtMatches"][0][d]
            ious.append(iou[d, gts[int(g)]] if g > 0 else 0.0)
    order = np.argsort(-np.array(scores), kind="mergesort")
    return (np.array(scores)[order], np.array(matches, dtype=bool).reshape(-1, 10)[order],
            np.array(ious)[order])


def voc_ap(rc, pr, points):
    """VOC 2007's 11 points (arange(0, 1.1, 0.1)) or VOC 2010's area (points 0)."""
    if points == 11:
        return sum(pr[rc >= level].max() if (rc >= level).any() else 0.0
                   for level in np.arange(0.0, 1.1, 0.1)) / 11
    mrec = np.concatenate(([0.0], rc, [1.0]))
    mpre = np.concatenate(([0.0], pr, [0.0]))
    for i in range(mpre.size - 1, 0, -1):
        mpre[i - 1] = max(mpre[i - 1], mpre[i])
    i = np.where(mrec[1:] != mrec[:-1])[0]
    return float(np.sum((mrec[i + 1] - mrec[i]) * mpre[i + 1]))


def main():
    rng = np.random.default_rng(2024)
    truths, dets = make_set(rng)
    truths = truths.astype(np.float32).astype(np.float64)  # what the C side reads
    dets = dets.astype(np.float32).astype(np.float64)
    assert len(set(dets[:, 2])) == len(dets), "scores must be distinct"
    ev = coco_eval(truths, dets)
    check_margins(ev)
    precision = ev.eval["precision"]  # [T, R, K, A, M]
    ap101 = np.full((10, CLASSES), -1.0)
    ap11, ap0 = np.full((10, CLASSES), -1.0), np.full((10, CLASSES), -1.0)
    per_class = np.zeros((CLASSES, 3))
    for k in range(CLASSES):
        n_truths = int((truths[:, 1] == k).sum())
        scores, matches, ious = class_outcomes(ev, k)
        above = scores > THRESH
        per_class[k] = [(matches[:, 0] & above).sum(), (~matches[:, 0] & above).sum(),
                        ious[matches[:, 0] & above].sum()]
        if not n_truths:
            assert (precision[:, :, k, 0, 2] == -1).all()
            continue
        for t in range(10):
            p = precision[t, :, k, 0, 2]
            ap101[t, k] = p[p > -1].mean()
            tp = np.cumsum(matches[:, t])
            fp = np.cumsum(~matches[:, t])
            rc = tp / n_truths
            pr = tp / (tp + fp + np.spacing(1))
            ap11[t, k] = voc_ap(rc, pr, 11) if len(rc) else 0.0
            ap0[t, k] = voc_ap(rc, pr, 0) if len(rc) else 0.0
    tp, fp = per_class[:, 0].sum(), per_class[:, 1].sum()
    fn = len(truths) - tp
    prec, rec = tp / (tp + fp), tp / len(truths)
    totals = [tp, fp, fn, prec, rec, 2 * prec * rec / (prec + rec), per_class[:, 2].sum() / (tp + fp)]
    assert abs(np.mean(ap101[:, ap101[0] > -1]) - ev.stats[0]) < 1e-12
    assert abs(np.mean(ap101[0, ap101[0] > -1]) - ev.stats[1]) < 1e-12
    print("%d truths, %d detections; mAP@0.5:0.95 %.4f, mAP@0.5 %.4f; AP@0.5 per class %s"
          % (len(truths), len(dets), ev.stats[0], ev.stats[1], np.round(ap101[0], 4)))
    print("at %.2f: TP %d FP %d FN %d precision %.4f recall %.4f F1 %.4f avg IoU %.4f"
          % (THRESH, *totals))
    write_ref(fixture_dir() + "/detection_map.ref", [
        ("truths", truths), ("dets", dets), ("ap101", ap101),
        ("stats", np.array(ev.stats[:2])), ("ap11", ap11), ("ap0", ap0),
        ("thresh", np.array([THRESH])), ("per_class", per_class), ("totals", np.array(totals))])


if __name__ == "__main__":
    main()
