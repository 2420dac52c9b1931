"""Reference fixture for cdl's detection decoding and NMS, written from the definitions of
AlexeyAB's darknet (src/yolo_layer.c: get_yolo_detections, get_yolo_box, correct_yolo_boxes;
src/box.c: box_iou, box_diou, box_diounms, do_nms_sort, diounms_sort) in float64 numpy.

Usage: /usr/bin/python3 scripts/ref/make_detect.py
(writes tests/ref/detect.cfg and tests/ref/detect.ref.)

The net: layer 0 an identity ([maxpool] size=1) of the input (batch 2, 14 channels = 2 anchors x
(2 classes + 5), a 4 x 3 grid, so anchors are in pixels of a 4 x 3 input), layer 1 a [yolo] of
anchors 0, 1, layer 2 [route] layers=0, layer 3 a [yolo] of anchors 1, 2 with scale_x_y=1.1.
Sample 0 came from an 8 x 5 image and sample 1 from a 6 x 7 one, both letterboxed; the test also
decodes sample 1 as a plain resize.

Stored: input [2][14][3][4]; frames [3][3] (image w, h, letterbox for sample 0, 1, and sample 1
resized); and per frame F (0, 1, 2) and case C (none: decoding only; default, greedynms,
diounms: NMS as [yolo] nms_kind= says, beta_nms=0.6 and 0.35 for diounms; newcoords: both
layers with new_coords=1 decoding newcoords_input, the logistic of input, as the output of a
[convolutional] with activation=logistic) the detections in
decoding order: C.F.box [n][4] (x, y, w, h relative to the image), C.F.objectness [n],
C.F.prob [n][2] (0 where below the threshold or suppressed). Decoding threshold 0.25, NMS 0.45
(darknet detector test's defaults).

Ties: darknet sorts with qsort, which leaves equal scores in no set order; cdl ranks equal scores
by decoding order, and so does this script. The script checks that no score or overlap lies
within 1e-4 of a threshold (float32 on the C side cannot then decide differently).
"""
import numpy as np
import torch

from ref_format import fixture_dir, seed_torch, write_cfg, write_ref

W, H, CLASSES = 4, 3, 2
ANCHORS = [0.9, 1.1, 1.6, 1.4, 3.0, 2.6]
LAYERS = [dict(mask=[0, 1], scale_x_y=1.0), dict(mask=[1, 2], scale_x_y=1.1)]
FRAMES = [(8, 5, 1), (6, 7, 1), (6, 7, 0)]
THRESH, NMS = 0.25, 0.45
CASES = {"none": None, "default": ("default", 0.6), "greedynms": ("greedynms", 0.6),
         "diounms": ("diounms", 0.35)}
NEW_COORDS = "newcoords"  # both layers with new_coords=1, decoding only
MARGIN = 1e-4
near_threshold = []


def logistic(z):
    return 1 / (1 + np.exp(-z))


def check_margin(value, thresh, what):
    if abs(value - thresh) < MARGIN:
        near_threshold.append((what, value))


def forward(z, layer, new_coords=False):
    """[yolo]'s output: logistic x, y (scaled by scale_x_y), objectness and classes; with
    new_coords no logistic (the input is one already), x, y scaled."""
    out = z.copy()
    s = layer["scale_x_y"]
    if new_coords:
        out[:, :, 0:2] = z[:, :, 0:2] * s - (s - 1) / 2
        return out
    out[:, :, 0:2] = logistic(z[:, :, 0:2]) * s - (s - 1) / 2
    out[:, :, 4:] = logistic(z[:, :, 4:])
    return out


def decode(out, layer, b, new_coords=False):
    """get_yolo_detections for sample b: (box, objectness, prob) in darknet's order; get_yolo_box
    with new_coords: w, h = (2 out)^2 anchor."""
    size = (lambda v: 4 * v * v) if new_coords else np.exp
    dets = []
    for cell in range(W * H):
        j, i = divmod(cell, W)
        for n, anchor in enumerate(layer["mask"]):
            e = out[b, n, :, j, i]
            obj = e[4]
            check_margin(obj, THRESH, "objectness")
            if obj <= THRESH:
                continue
            box = [(i + e[0]) / W, (j + e[1]) / H, size(e[2]) * ANCHORS[2 * anchor] / W,
                   size(e[3]) * ANCHORS[2 * anchor + 1] / H]
            prob = []
            for k in range(CLASSES):
                p = obj * e[5 + k]
                check_margin(p, THRESH, "probability")
                prob.append(p if p > THRESH else 0.0)
            dets.append((box, obj, prob))
    return dets


def correct(dets, image_w, image_h, letterbox):
    """correct_yolo_boxes, relative=1: new size in whole pixels, offset half the rest."""
    new_w, new_h = W, H
    if letterbox:
        if W / image_w < H / image_h:
            new_h = image_h * W // image_w
        else:
            new_w = image_w * H // image_h
    out = []
    for box, obj, prob in dets:
        x = (box[0] - (W - new_w) / 2 / W) / (new_w / W)
        y = (box[1] - (H - new_h) / 2 / H) / (new_h / H)
        out.append(([x, y, box[2] * W / new_w, box[3] * H / new_h], obj, list(prob)))
    return out


def overlap(x1, w1, x2, w2):
    return min(x1 + w1 / 2, x2 + w2 / 2) - max(x1 - w1 / 2, x2 - w2 / 2)


def iou(a, b):
    w, h = overlap(a[0], a[2], b[0], b[2]), overlap(a[1], a[3], b[1], b[3])
    inter = 0.0 if w < 0 or h < 0 else w * h
    union = a[2] * a[3] + b[2] * b[3] - inter
    return 0.0 if inter == 0 or union == 0 else inter / union


def diou(a, b, power):
    """box_diou (power 0.6) and box_diounms (power beta_nms)."""
    cw = max(a[0] + a[2] / 2, b[0] + b[2] / 2) - min(a[0] - a[2] / 2, b[0] - b[2] / 2)
    ch = max(a[1] + a[3] / 2, b[1] + b[3] / 2) - min(a[1] - a[3] / 2, b[1] - b[3] / 2)
    c = cw * cw + ch * ch
    if c == 0:
        return iou(a, b)
    d = (a[0] - b[0]) ** 2 + (a[1] - b[1]) ** 2
    return iou(a, b) - (d / c) ** power


def nms(dets, kind, beta):
    """do_nms_sort (default) and diounms_sort (greedynms, diounms) on the list, in place."""
    live = [i for i, d in enumerate(dets) if d[1] != 0]
    for k in range(CLASSES):
        order = sorted(live, key=lambda i: (-dets[i][2][k], i))
        for a_pos, a in enumerate(order):
            if dets[a][2][k] == 0:
                continue
            for b in order[a_pos + 1:]:
                if kind == "default":
                    v = iou(dets[a][0], dets[b][0])
                elif kind == "greedynms":
                    v = diou(dets[a][0], dets[b][0], 0.6)
                else:
                    v = diou(dets[a][0], dets[b][0], beta)
                check_margin(v, NMS, "overlap")
                if v > NMS:
                    dets[b][2][k] = 0.0


def cfg_text(last_kind="default", beta=0.6):
    anchors = ",".join("%g" % a for a in ANCHORS)
    layers = []
    for k, layer in enumerate(LAYERS):
        lines = (["[route]", "layers=0", ""] if k else []) + [
            "[yolo]", "mask=%s" % ",".join(map(str, layer["mask"])), "anchors=" + anchors,
            "classes=%d" % CLASSES, "num=3"]
        if layer["scale_x_y"] != 1:
            lines.append("scale_x_y=%g" % layer["scale_x_y"])
        layers.append("\n".join(lines) + "\n")
    return "[net]\nbatch=2\nwidth=%d\nheight=%d\nchannels=%d\n\n[maxpool]\nsize=1\n\n" % (
        W, H, 2 * (CLASSES + 5)) + "\n".join(layers)


def main():
    seed_torch(0)
    rng = np.random.default_rng(7)
    z = rng.normal(0, 1.5, (2, 2, CLASSES + 5, H, W))
    z[:, :, 2:4] = rng.normal(0.3, 0.4, (2, 2, 2, H, W))  # boxes that overlap their neighbours
    z = z.astype(np.float32).astype(np.float64)
    outs = [forward(z, layer) for layer in LAYERS]
    tensors = [("input", torch.tensor(z.reshape(2, -1, H, W))),
               ("frames", torch.tensor(np.array(FRAMES, dtype=np.float64)))]
    for f, (image_w, image_h, letterbox) in enumerate(FRAMES):
        b = min(f, 1)
        decoded = []
        for out, layer in zip(outs, LAYERS):
            decoded += decode(out, layer, b)
        for case, how in CASES.items():
            dets = correct(decoded, image_w, image_h, letterbox)
            if how:
                nms(dets, *how)
            assert dets, "no detections: pick another seed"
            tensors += [
                ("%s.%d.box" % (case, f), torch.tensor([d[0] for d in dets])),
                ("%s.%d.objectness" % (case, f), torch.tensor([d[1] for d in dets])),
                ("%s.%d.prob" % (case, f), torch.tensor([d[2] for d in dets]))]
            kept = sum(p > 0 for d in dets for p in d[2])
            print("frame %d %-9s %d detections, %d class scores kept" % (f, case, len(dets), kept))
        # new_coords: the input taken as the logistic outputs of the layer before
        p = logistic(z)
        decoded = []
        for layer in LAYERS:
            decoded += decode(forward(p, layer, True), layer, b, True)
        dets = correct(decoded, image_w, image_h, letterbox)
        assert dets, "no detections: pick another seed"
        tensors += [("%s.%d.box" % (NEW_COORDS, f), torch.tensor([d[0] for d in dets])),
                    ("%s.%d.objectness" % (NEW_COORDS, f), torch.tensor([d[1] for d in dets])),
                    ("%s.%d.prob" % (NEW_COORDS, f), torch.tensor([d[2] for d in dets]))]
    tensors.append(("newcoords_input", torch.tensor(logistic(z).reshape(2, -1, H, W))))
    assert not near_threshold, near_threshold
    write_cfg("detect", cfg_text())
    write_ref(fixture_dir() + "/detect.ref", tensors)


if __name__ == "__main__":
    main()
