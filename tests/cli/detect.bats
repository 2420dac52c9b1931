#!/usr/bin/env bats
# cdl detect: a detector's boxes for image files, as text, --json and drawn (-o); and its
# refusals.
load helpers
load detection_helpers

# Trains tiny.cfg on the detection set into det.cdl (400 epochs of 16 images: about 5 s), on
# the letterboxed images detect sees (jitter=0: no random placement).
train_detector() {
    detection_set
    sed -i 's/^max=4$/max=4\njitter=0/' tiny.cfg
    grep -q '^jitter=0$' tiny.cfg
    "$CDL" train tiny.cfg --data det.data --epochs 400 --out det.cdl --threads 1 \
        --log-every 100000 >/dev/null 2>&1
}

@test "detect finds the trained squares: the best box of most images overlaps the truth" {
    train_detector
    run "$CDL" detect det.cdl set/images/*.png --json --threads 1
    [ "$status" -eq 0 ]
    printf '%s\n' "$output" > all.json
    /usr/bin/python3 - <<'PY'
import json
results = json.load(open("all.json"))
assert len(results) == 16, len(results)
found = 0
for r in results:
    W, H = r["width"], r["height"]
    assert (W, H) in ((48, 36), (36, 48)), r
    _, x, y, w, h = map(float, open(r["file"].replace("/images/", "/labels/")[:-4] + ".txt").read().split())
    truth = ((x - w / 2) * W, (y - h / 2) * H, w * W, h * H)
    scores = [d["score"] for d in r["detections"]]
    assert scores == sorted(scores, reverse=True), scores
    assert all(d["class"] == "square" and d["index"] == 0 and d["score"] > 0.25
               for d in r["detections"]), r
    if not r["detections"]:
        continue
    b = r["detections"][0]
    iw = min(truth[0] + truth[2], b["x"] + b["w"]) - max(truth[0], b["x"])
    ih = min(truth[1] + truth[3], b["y"] + b["h"]) - max(truth[1], b["y"])
    inter = max(iw, 0) * max(ih, 0)
    found += inter / (truth[2] * truth[3] + b["w"] * b["h"] - inter) > 0.5
# 15 of 16 when written; a detector decoded or letterboxed wrongly finds almost none.
assert found >= 12, found
PY
}

@test "detect's text lines say what --json says" {
    train_detector
    run "$CDL" detect det.cdl set/images/2.png set/images/3.png --threads 1
    [ "$status" -eq 0 ]
    printf '%s\n' "$output" > text.txt
    "$CDL" detect det.cdl set/images/2.png set/images/3.png --json --threads 1 > all.json
    /usr/bin/python3 - <<'PY'
import json, re
lines = open("text.txt").read().splitlines()
want = []
for r in json.load(open("all.json")):
    n = len(r["detections"])
    want.append("%s: %d object%s" % (r["file"], n, "" if n == 1 else "s"))
    want += ["  %s %.2f%%  x=%.1f y=%.1f w=%.1f h=%.1f" % (d["class"], 100 * d["score"], d["x"],
             d["y"], d["w"], d["h"]) for d in r["detections"]]
assert lines == want, (lines, want)
PY
}

@test "detect --thresh and --nms: fewer boxes above a higher threshold, more without NMS" {
    train_detector
    for args in "" "--thresh 0.6" "--nms 0" "--thresh 0.05 --nms 0"; do
        "$CDL" detect det.cdl set/images/*.png --json --threads 1 $args > "run${args// /}.json"
    done
    /usr/bin/python3 - <<'PY'
import json
def boxes(name):
    return [len(r["detections"]) for r in json.load(open(name))]
base, high, no_nms, low = (boxes(n) for n in
    ("run.json", "run--thresh0.6.json", "run--nms0.json", "run--thresh0.05--nms0.json"))
assert all(h <= b <= n <= l for b, h, n, l in zip(base, high, no_nms, low)), (base, high, no_nms, low)
assert sum(high) < sum(base) < sum(no_nms) < sum(low), (base, high, no_nms, low)
assert all(d["score"] > 0.6 for r in json.load(open("run--thresh0.6.json")) for d in r["detections"])
PY
}

@test "detect -o draws the boxes and labels onto a PNG of the image's size" {
    train_detector
    run "$CDL" detect det.cdl set/images/4.png -o drawn.png --json --threads 1
    [ "$status" -eq 0 ]
    printf '%s\n' "$output" > one.json
    /usr/bin/python3 - <<'PY'
import json
from PIL import Image
r = json.load(open("one.json"))[0]
assert r["detections"], r
src = Image.open("set/images/4.png").convert("RGB")
out = Image.open("drawn.png")
assert out.mode == "RGB" and out.size == src.size, (out.mode, out.size)
changed = {(x, y) for x in range(src.width) for y in range(src.height)
           if out.getpixel((x, y)) != src.getpixel((x, y))}
# the best box (drawn last, on top): its left edge is drawn at mid height
d = r["detections"][0]
x = min(max(int(d["x"]), 0), src.width - 1)
y = min(max(int(d["y"] + d["h"] / 2), 0), src.height - 1)
assert (x, y) in changed, (x, y)
# nothing changes away from the boxes (2 pixels of outline) and the rows of their labels (11
# pixels above the box, or inside its top when there is no room; moved left to fit the image)
def near(x, y, d):
    in_box = d["x"] - 2 <= x <= d["x"] + d["w"] + 2 and d["y"] - 2 <= y <= d["y"] + d["h"] + 2
    return in_box or d["y"] - 12 <= y <= d["y"] + 12
stray = [p for p in changed if not any(near(*p, d) for d in r["detections"])]
assert not stray, stray[:5]
PY
}

@test "detect refuses a model that is not a detector, in one line (exit 2)" {
    detection_set
    printf '[net]\nwidth=8\nheight=8\nchannels=3\n\n[connected]\noutput=2\n\n[softmax]\n' > cls.cfg
    run "$CDL" detect cls.cfg set/images/0.png
    [ "$status" -eq 2 ]
    [ "$output" = "cdl: cls.cfg: not a detector (it has no [yolo] or [region] layer); classify images with cdl predict" ]
}

@test "detect reports a missing image by name (exit 1) and still detects in the others" {
    detection_set
    run "$CDL" detect tiny.cfg missing.png set/images/0.png --thresh 0
    [ "$status" -eq 1 ]
    [[ "$output" == *"cdl: missing.png: cannot open image: No such file or directory"* ]]
    [[ "$output" == *"set/images/0.png: "*" objects"* ]]
}

@test "detect's usage errors: bad --thresh, -o with two images, -o over a non-PNG, center_crop (exit 2)" {
    detection_set
    run "$CDL" detect tiny.cfg set/images/0.png --thresh 2
    [ "$status" -eq 2 ]
    [ "$output" = "cdl: bad value '2' for --thresh: expected a number in [0, 1]" ]
    run "$CDL" detect tiny.cfg set/images/0.png set/images/1.png -o out.png
    [ "$status" -eq 2 ]
    [ "$output" = "cdl: -o draws one image: give one IMAGE with it" ]
    echo notes > notes.txt
    run "$CDL" detect tiny.cfg set/images/0.png -o notes.txt
    [ "$status" -eq 2 ]
    [[ "$output" == *"notes.txt: exists and is a text file, not a PNG image; not overwriting it"* ]]
    [ "$(cat notes.txt)" = notes ]
    run "$CDL" detect tiny.cfg set/images/0.png --set net.letterbox=0 --set net.center_crop=1
    [ "$status" -eq 2 ]
    [ "$output" = "cdl: tiny.cfg: [net] center_crop=1: a detector frames its input with letterbox=1 or a plain resize (the crop would cut boxes off)" ]
}

@test "detect --weights: a cfg with a model's darknet .weights detects as the model; a checkpoint with --weights is refused (exit 2)" {
    detection_set
    "$CDL" train tiny.cfg --data det.data --epochs 20 --out det.cdl --threads 1 >/dev/null 2>&1
    "$CDL" export darknet det.cdl -o det.weights 2>/dev/null
    "$CDL" detect det.cdl set/images/*.png --thresh 0.01 --json --threads 1 > model.json
    run "$CDL" detect tiny.cfg --weights det.weights set/images/*.png --thresh 0.01 --json \
        --threads 1
    [ "$status" -eq 0 ]
    [[ "$output" == *"cdl: --weights det.weights: darknet 0.2.0 weights"* ]]
    printf '%s\n' "$output" | grep -v '^cdl: ' > cfg.json
    /usr/bin/python3 -c "
import json
a, b = json.load(open('model.json')), json.load(open('cfg.json'))
strip = lambda r: [[(d['index'], d['score'], d['x'], d['y'], d['w'], d['h']) for d in i['detections']] for i in r]
assert strip(a) == strip(b) and sum(map(len, strip(a))) > 0, (a[:1], b[:1])"
    run "$CDL" detect det.cdl --weights det.weights set/images/0.png
    [ "$status" -eq 2 ]
    [ "$output" = "cdl: --weights goes with a CFG: det.cdl is a checkpoint, which has its weights" ]
}

@test "eval of a detector: per-class AP, TP, FP and mAP, as text and --json" {
    train_detector
    printf 'classes=1\ntrain=train.txt\nvalid=train.txt\nnames=det.names\n' > val.data
    run "$CDL" eval det.cdl --data val.data --threads 1
    [ "$status" -eq 0 ]
    [[ "${lines[0]}" == "det.cdl on val.data: 16 images, 16 boxes" ]]
    [[ "$output" == *"  square  "*"%"* ]]
    [[ "$output" == *"at score > 0.25 (IoU 0.5): TP "*", precision "*", recall "*", F1 "*", average IoU "*"%"* ]]
    [[ "$output" == *"mAP@0.5 "*"%  mAP@0.5:0.95 "*"%  (COCO 101-point AP)"* ]]
    for p in 101 11 0; do
        "$CDL" eval det.cdl --data val.data --threads 1 --json --points $p > "eval$p.json"
    done
    /usr/bin/python3 - <<'PY'
import json
runs = {p: json.load(open("eval%d.json" % p)) for p in (101, 11, 0)}
for p, r in runs.items():
    assert r["points"] == p and r["images"] == 16 and r["truths"] == 16, r
    c = r["per_class"][0]
    assert c["class"] == "square" and c["truths"] == 16
    assert c["ap50"] == r["map50"] and c["ap50_95"] == r["map50_95"]
    assert 0.5 < r["map50"] <= 1 and 0 < r["map50_95"] < r["map50"], r
    assert r["tp"] + r["fn"] == 16 and (c["tp"], c["fp"]) == (r["tp"], r["fp"])
    assert abs(r["precision"] - r["tp"] / (r["tp"] + r["fp"])) < 1e-12
    assert abs(r["recall"] - r["tp"] / 16) < 1e-12
    assert abs(r["f1"] - 2 * r["precision"] * r["recall"] / (r["precision"] + r["recall"])) < 1e-12
# the points change AP only; the matches and the figures at the threshold stay
assert len({(r["tp"], r["fp"], r["avg_iou"]) for r in runs.values()}) == 1
PY
}

@test "eval of a detector equals pycocotools on cdl detect's boxes (skipped without pycocotools)" {
    python3 -c "import pycocotools" 2>/dev/null || skip "python3 has no pycocotools"
    train_detector
    printf 'classes=1\ntrain=train.txt\nvalid=train.txt\nnames=det.names\n' > val.data
    "$CDL" eval det.cdl --data val.data --threads 1 --json > eval.json
    # darknet's detector map keeps scores above 0.005, as detect --thresh 0.005 does
    "$CDL" detect det.cdl $(cat train.txt) --thresh 0.005 --json --threads 1 > dets.json
    python3 - <<'PY'
import contextlib, io, json
from pycocotools.coco import COCO
from pycocotools.cocoeval import COCOeval
results = json.load(open("dets.json"))
gt = COCO()
anns = []
for i, r in enumerate(results):
    _, x, y, w, h = map(float, open(r["file"].replace("/images/", "/labels/")[:-4] + ".txt").read().split())
    W, H = r["width"], r["height"]
    anns.append({"id": i + 1, "image_id": i, "category_id": 0, "iscrowd": 0, "area": w * W * h * H,
                 "bbox": [(x - w / 2) * W, (y - h / 2) * H, w * W, h * H]})
gt.dataset = {"images": [{"id": i} for i in range(len(results))], "categories": [{"id": 0}],
              "annotations": anns}
with contextlib.redirect_stdout(io.StringIO()):
    gt.createIndex()
    dt = gt.loadRes([{"image_id": i, "category_id": d["index"], "score": d["score"],
                      "bbox": [d["x"], d["y"], d["w"], d["h"]]}
                     for i, r in enumerate(results) for d in r["detections"]])
    ev = COCOeval(gt, dt, "bbox")
    ev.evaluate(); ev.accumulate(); ev.summarize()
got = json.load(open("eval.json"))
assert abs(got["map50_95"] - ev.stats[0]) < 1e-6, (got["map50_95"], ev.stats[0])
assert abs(got["map50"] - ev.stats[1]) < 1e-6, (got["map50"], ev.stats[1])
PY
}

@test "eval of a detector refuses bad --points, --skip-bad and a dataset of other classes (exit 2)" {
    detection_set
    printf 'classes=1\ntrain=train.txt\nvalid=train.txt\nnames=det.names\n' > val.data
    "$CDL" train tiny.cfg --data det.data --epochs 1 --out det.cdl --threads 1 >/dev/null 2>&1
    run "$CDL" eval det.cdl --data val.data --points 5
    [ "$status" -eq 2 ]
    [ "$output" = "cdl: bad value '5' for --points: expected 0, 11 or 101" ]
    run "$CDL" eval det.cdl --data val.data --skip-bad
    [ "$status" -eq 2 ]
    [ "$output" = "cdl: --skip-bad: a detector's evaluation stops at an unreadable image" ]
    printf 'square\ncircle\n' > two.names
    printf 'classes=2\ntrain=train.txt\nvalid=train.txt\nnames=two.names\n' > two.data
    run "$CDL" eval det.cdl --data two.data
    [ "$status" -eq 2 ]
    [ "$output" = "cdl: two.data: classes=2, but the detector's [yolo] or [region] layers have 1" ]
    run "$CDL" eval det.cdl --data det.data
    [ "$status" -eq 2 ]
    [ "$output" = "cdl: det.data: no validation set (set valid= or valid_split=)" ]
}
