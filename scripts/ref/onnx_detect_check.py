"""Checks a detector's two ONNX exports against `cdl detect` and `cdl predict`.

Usage:
    python3 scripts/ref/onnx_detect_check.py HEADS.onnx DECODED.onnx IMAGE.png DETECT.json \
        [PREDICT.json]

HEADS.onnx is `cdl export onnx CFG`, DECODED.onnx `cdl export onnx CFG --decode` (same
parameters); IMAGE.png has the net's width, height and channels; DETECT.json is
`cdl detect CFG IMAGE --thresh 0 --nms 0 --json` (every box and class with a score above 0)
and PREDICT.json, when given, `cdl predict CFG IMAGE --top N --json --no-crop` with N the size of
the last layer's output (predict lists at most 100000: yolov3-tiny's 26x26 head is larger).

1. onnx.checker.check_model(full_check=True) passes both files.
2. The decoded boxes and scores equal cdl detect's: each of cdl's boxes (the same x, y, w, h
   repeated once per class) is matched to the ONNX box nearest to it; the matching must be one to
   one, and boxes (as fractions of the input size; relative to the box where it is larger than
   the input, as random weights make boxes: exp in two float32 libraries differs by ulps) to
   3e-5 (BOX_TOLERANCE) and scores to 1e-5.
3. The heads agree with the decoded outputs: scores = objectness x classes, centres =
   (x, y + cell) x input size / grid size, and size / exp(w, h) the same anchor over every cell
   of a head's anchor (to 1e-5, relative for the anchor).
4. With PREDICT.json, the last head equals cdl predict's values to 3e-5 of its largest magnitude
   (at least 1).
Prints the largest differences; exits 1 on any failure.
"""

import json
import sys

import numpy as np
import onnx
import onnxruntime
from PIL import Image

TOLERANCE = 1e-5
# A box's size is exp(t) x anchor, so its relative error is t's absolute error: float32 sums in
# another order (onnxruntime's kernels against oneDNN's AVX2 or AVX-512 ones) differ by about
# u sqrt(K), K the terms summed along the net (yolov3-tiny: about 13,000, so 2^-24 x 114 = 7e-6
# at one standard deviation), and the largest of thousands of boxes lies about 4 of them out.
BOX_TOLERANCE = 3e-5


def fail(message):
    sys.exit(f"FAIL: {message}")


def run(path, x):
    model = onnx.load(path)
    onnx.checker.check_model(model, full_check=True)
    session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(None, {session.get_inputs()[0].name: x})))


def check_decoded(boxes, scores, detect, net_w, net_h):
    """boxes [B][4] centre and size in pixels, scores [B][C] against cdl detect's list."""
    scale = np.array([net_w, net_h, net_w, net_h], dtype=np.float64)
    onnx_boxes = boxes.astype(np.float64)
    onnx_boxes[:, :2] -= onnx_boxes[:, 2:] / 2  # cdl reports the top left corner
    onnx_boxes /= scale
    found = {}
    for d in detect["detections"]:
        key = (d["x"], d["y"], d["w"], d["h"])
        found.setdefault(key, {})[d["index"]] = d["score"]
    if len(found) != len(boxes):
        fail(f"cdl detect has {len(found)} distinct boxes, the ONNX model {len(boxes)}")
    cdl_boxes = np.array(list(found.keys()), dtype=np.float64) / scale
    match = np.empty(len(cdl_boxes), dtype=np.int64)
    box_diff = 0.0
    for i, b in enumerate(cdl_boxes):
        distance = np.max(np.abs(onnx_boxes - b) / np.maximum(1, np.abs(b)), axis=1)
        match[i] = int(np.argmin(distance))
        box_diff = max(box_diff, float(distance[match[i]]))
    if len(set(match.tolist())) != len(match):
        fail("two of cdl's boxes match the same ONNX box")
    score_diff = 0.0
    for i, per_class in enumerate(found.values()):
        expected = np.zeros(scores.shape[1])
        for k, s in per_class.items():
            expected[k] = s
        score_diff = max(score_diff, float(np.max(np.abs(scores[match[i]] - expected))))
    print(f"decoded: {len(boxes)} boxes, max box diff {box_diff:.3g} (of the input size or box), "
          f"max score diff {score_diff:.3g}")
    if not (box_diff <= BOX_TOLERANCE and score_diff <= TOLERANCE):
        fail(f"the decoded outputs differ from cdl detect by more than {BOX_TOLERANCE} (boxes) "
             f"or {TOLERANCE} (scores)")


def check_heads(heads, boxes, scores, net_w, net_h):
    """Each head [A (C+5)][h][w] against its rows of the decoded boxes and scores."""
    classes = scores.shape[1]
    row, worst = 0, 0.0
    for name, head in heads.items():
        _, h, w = head.shape
        anchors = head.shape[0] // (classes + 5)
        cells = head.reshape(anchors, classes + 5, h * w).transpose(0, 2, 1).astype(np.float64)
        n = anchors * h * w
        b, s = boxes[row:row + n].reshape(anchors, h * w, 4), scores[row:row + n]
        row += n
        grid_x = np.tile(np.arange(w), h)
        grid_y = np.repeat(np.arange(h), w)
        centre = np.stack([(cells[..., 0] + grid_x) * net_w / w,
                           (cells[..., 1] + grid_y) * net_h / h], axis=-1)
        worst = max(worst, float(np.max(np.abs(centre - b[..., :2]) / [net_w, net_h]
                                        / np.maximum(1, np.abs(b[..., :2]) / [net_w, net_h]))))
        product = (cells[..., 4:5] * cells[..., 5:]).reshape(n, classes)
        worst = max(worst, float(np.max(np.abs(product - s))))
        anchor = b[..., 2:] / np.exp(cells[..., 2:4])
        spread = np.max(np.abs(anchor / anchor[:, :1] - 1))
        worst = max(worst, float(spread))
        print(f"head {name}: {anchors} anchors, {h}x{w} cells")
    if row != len(boxes):
        fail(f"the heads hold {row} boxes, the decoded outputs {len(boxes)}")
    print(f"heads against the decoded outputs: max diff {worst:.3g}")
    if not worst <= TOLERANCE:
        fail(f"the heads and the decoded outputs disagree by more than {TOLERANCE}")


def check_last_head(head, predict):
    top = predict[0]["top"]
    expected = np.full(head.size, np.nan)
    for entry in top:
        expected[entry["index"]] = entry["logit" if "logit" in entry else "probability"]
    if len(top) != head.size or np.isnan(expected).any():
        fail(f"predict lists {len(top)} values, the last head has {head.size}")
    diff = float(np.max(np.abs(head.reshape(-1).astype(np.float64) - expected)))
    print(f"last head against cdl predict: max diff {diff:.3g}")
    # the head's raw sums err as a box's exp argument does (BOX_TOLERANCE), of its largest value
    if not diff <= BOX_TOLERANCE * max(1.0, float(np.max(np.abs(expected)))):
        fail(f"the last head differs from cdl predict by {diff:.3g}")


def main():
    if len(sys.argv) not in (5, 6):
        sys.exit(__doc__)
    heads_path, decoded_path, image_path, detect_path = sys.argv[1:5]
    pixels = np.asarray(Image.open(image_path), dtype=np.float32) / 255.0
    x = (pixels[None, None] if pixels.ndim == 2 else pixels.transpose(2, 0, 1)[None]).copy()
    net_h, net_w = x.shape[2:]
    heads = {k: v[0] for k, v in run(heads_path, x).items()}
    decoded = run(decoded_path, x)
    if sorted(decoded) != ["boxes", "scores"]:
        fail(f"{decoded_path}: outputs {sorted(decoded)}, expected boxes and scores")
    boxes, scores = decoded["boxes"][0], decoded["scores"][0]
    with open(detect_path) as f:
        detect = json.load(f)[0]
    check_decoded(boxes, scores, detect, net_w, net_h)
    check_heads(heads, boxes, scores, net_w, net_h)
    if len(sys.argv) == 6:
        with open(sys.argv[5]) as f:
            check_last_head(list(heads.values())[-1], json.load(f))
    print("ok")


if __name__ == "__main__":
    main()
