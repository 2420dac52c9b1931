#!/usr/bin/python3
"""Compares `darknet detector valid`'s results with `cdl detect --json` on the same image.

usage: compare_darknet_detections.py RESULTS_DIR CDL_JSON CDL_ALL_JSON THRESH NMS SCORE_TOL BOX_TOL

RESULTS_DIR holds darknet's comp4_det_test_<class>.txt files (classes named 0..N-1), each line
"ID SCORE XMIN YMIN XMAX YMAX": pixels of the image, 1-based, printed with %f, xmin and ymin
raised to 1, xmax and ymax lowered to the image's size (darknet's print_detector_detections).
CDL_JSON is cdl detect's output for one image, run with --thresh THRESH (darknet valid's .005)
and darknet's NMS (--nms NMS); CDL_ALL_JSON the same without NMS (--nms 0).

Two boxes of a class whose scores differ by less than float sums in another order move them,
and that overlap beyond NMS, are kept by darknet or cdl in either order, and each choice changes
what the kept box suppresses after it. So darknet's lines are compared with darknet's greedy NMS
(do_nms_sort) run here over cdl's detections before NMS, in score order but for such near ties
(scores within SCORE_TOL), where the box darknet kept goes first; and cdl's own NMS must give
what the same NMS gives in plain score order. Every darknet line must match a detection of the
same class within SCORE_TOL (absolute) and BOX_TOL (pixels, each edge), and the reverse; only a
detection whose score is within SCORE_TOL of THRESH may lack its partner (the two may round it
to either side). Prints the count, the near ties ordered as darknet's, the largest differences;
exits 1 on a mismatch.
"""
import glob
import json
import os
import sys


def darknet_lines(results):
    """(class, score, xmin, ymin, xmax, ymax) of every line (darknet valid repeats an image it
    was given several times: each distinct line once)."""
    found = set()
    for path in glob.glob(os.path.join(results, "comp4_det_test_*.txt")):
        k = int(os.path.basename(path)[len("comp4_det_test_"):-4])
        for line in open(path):
            found.add((k,) + tuple(float(v) for v in line.split()[1:]))
    return sorted(found, key=lambda t: -t[1])


def cdl_detections(path):
    """cdl's detections of one image: (class, score, x, y, w, h) in pixels, and the image size."""
    r = json.load(open(path))[0]
    dets = [(d["index"], d["score"], d["x"], d["y"], d["w"], d["h"]) for d in r["detections"]]
    return dets, r["width"], r["height"]


def as_printed(d, w, h):
    """A detection as darknet prints it."""
    k, score, x, y, bw, bh = d
    return (k, score, max(x + 1, 1), max(y + 1, 1), min(x + bw + 1, w), min(y + bh + 1, h))


def iou(a, b):
    """Intersection over union of two (.., x, y, w, h) boxes."""
    iw = min(a[2] + a[4], b[2] + b[4]) - max(a[2], b[2])
    ih = min(a[3] + a[5], b[3] + b[5]) - max(a[3], b[3])
    inter = max(iw, 0) * max(ih, 0)
    return inter / (a[4] * a[5] + b[4] * b[5] - inter)


def close(t, c, score_tol, box_tol):
    """The edge difference of printed detections t and c when they are of one class within the
    tolerances, else None."""
    if c[0] != t[0] or abs(c[1] - t[1]) > score_tol:
        return None
    edge = max(abs(a - b) for a, b in zip(c[2:], t[2:]))
    return edge if edge <= box_tol else None


def greedy_nms(dets, nms, tie=0.0, first=lambda d: False):
    """darknet's do_nms_sort over one image's detections, class by class: the highest remaining
    score kept, the boxes overlapping it beyond nms dropped; among remaining scores within tie of
    the highest, first(d) (a bool) chooses which goes first. Returns the kept detections and how
    many near ties first changed."""
    kept, reordered = [], 0
    for k in sorted({d[0] for d in dets}):
        left = sorted((d for d in dets if d[0] == k), key=lambda d: -d[1])
        while left:
            top = next((d for d in left if d[1] >= left[0][1] - tie and first(d)), left[0])
            reordered += top is not left[0]
            kept.append(top)
            left = [d for d in left if d is not top and iou(top, d) <= nms]
    return kept, reordered


def main():
    results, cdl_json, cdl_all_json = sys.argv[1:4]
    thresh, nms, score_tol, box_tol = (float(v) for v in sys.argv[4:8])
    darknet = darknet_lines(results)
    own, w, h = cdl_detections(cdl_json)
    every, _, _ = cdl_detections(cdl_all_json)
    by_score, _ = greedy_nms(every, nms)
    if sorted(by_score) != sorted(own):
        print("cdl's NMS differs from darknet's greedy NMS over its own detections")
        sys.exit(1)

    def kept_by_darknet(d):
        p = as_printed(d, w, h)
        return any(close(t, p, score_tol, box_tol) is not None for t in darknet)
    as_darknet, reordered = greedy_nms(every, nms, score_tol, kept_by_darknet)
    cdl = [as_printed(d, w, h) for d in as_darknet]
    used = [False] * len(cdl)
    worst_score = worst_box = 0.0
    missing = []
    for t in darknet:
        best = None
        for j, c in enumerate(cdl):
            edge = None if used[j] else close(t, c, score_tol, box_tol)
            if edge is not None and (best is None or edge < best[1]):
                best = (j, edge)
        if best is None:
            missing.append(("darknet only", t))
            continue
        used[best[0]] = True
        worst_score = max(worst_score, abs(cdl[best[0]][1] - t[1]))
        worst_box = max(worst_box, best[1])
    missing += [("cdl only", c) for j, c in enumerate(cdl) if not used[j]]
    bad = [m for m in missing if abs(m[1][1] - thresh) > score_tol]
    print("%d darknet, %d cdl detections (%d near ties in darknet's order); largest differences: "
          "score %.3g, box edge %.3g px; %d unpaired at the threshold"
          % (len(darknet), len(cdl), reordered, worst_score, worst_box, len(missing) - len(bad)))
    if bad or not darknet:
        print("unpaired:", bad[:10])
        sys.exit(1)


if __name__ == "__main__":
    main()
