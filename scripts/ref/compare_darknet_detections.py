#!/usr/bin/python3
"""Compares `darknet detector valid`'s results with `cdl detect --json` on the same image.

usage: compare_darknet_detections.py RESULTS_DIR CDL_JSON THRESH SCORE_TOL BOX_TOL

RESULTS_DIR holds darknet's comp4_det_test_<class>.txt files (classes named 0..N-1), each line
"ID SCORE XMIN YMIN XMAX YMAX": pixels of the image, 1-based, printed with %f, xmin and ymin
raised to 1, xmax and ymax lowered to the image's size (darknet's print_detector_detections).
CDL_JSON is cdl detect's output for one image, run with --thresh THRESH (darknet valid's .005)
and darknet's NMS. Every darknet line must match a cdl detection of the same class within
SCORE_TOL (absolute) and BOX_TOL (pixels, each edge), and the reverse; only a detection whose
score is within SCORE_TOL of THRESH may lack its partner (the two may round it to either side).
Prints the count and the largest differences; exits 1 on a mismatch.
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


def cdl_lines(path):
    """cdl's detections as darknet prints them."""
    r = json.load(open(path))[0]
    w, h = r["width"], r["height"]
    return [(d["index"], d["score"], max(d["x"] + 1, 1), max(d["y"] + 1, 1),
             min(d["x"] + d["w"] + 1, w), min(d["y"] + d["h"] + 1, h)) for d in r["detections"]]


def main():
    results, cdl_json = sys.argv[1], sys.argv[2]
    thresh, score_tol, box_tol = (float(v) for v in sys.argv[3:6])
    darknet, cdl = darknet_lines(results), cdl_lines(cdl_json)
    used = [False] * len(cdl)
    worst_score = worst_box = 0.0
    missing = []
    for t in darknet:
        best = None
        for j, c in enumerate(cdl):
            if used[j] or c[0] != t[0] or abs(c[1] - t[1]) > score_tol:
                continue
            edge = max(abs(a - b) for a, b in zip(c[2:], t[2:]))
            if edge <= box_tol and (best is None or edge < best[1]):
                best = (j, edge)
        if best is None:
            missing.append(("darknet only", t))
            continue
        used[best[0]] = True
        worst_score = max(worst_score, abs(cdl[best[0]][1] - t[1]))
        worst_box = max(worst_box, best[1])
    missing += [("cdl only", c) for j, c in enumerate(cdl) if not used[j]]
    bad = [m for m in missing if abs(m[1][1] - thresh) > score_tol]
    print("%d darknet, %d cdl detections; largest differences: score %.3g, box edge %.3g px; "
          "%d unpaired at the threshold" % (len(darknet), len(cdl), worst_score, worst_box,
                                            len(missing) - len(bad)))
    if bad or not darknet:
        print("unpaired:", bad[:10])
        sys.exit(1)


if __name__ == "__main__":
    main()
