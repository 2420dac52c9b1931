"""Reference fixture for cdl's [region] layer: darknet's outputs, delta and cost, written from the
definitions of pjreddie's darknet (src/region_layer.c: forward_region_layer, get_region_box,
delta_region_box, delta_region_class; src/box.c: box_iou), in float64 numpy, rule by rule.

Usage: /usr/bin/python3 scripts/ref/make_region.py
(writes tests/ref/region.cfg and tests/ref/region.ref.)

The net: layer 0 an identity ([maxpool] size=1) of the input (batch 2, 16 channels = 2 anchors x
(3 classes + 5), a 4 x 3 grid), layer 1 the [region] of case "logistic", then per further case a
[route] of layer 0 and its [region], all given the same truth boxes:
    logistic  logistic classes, rescore=1 (objectness learns the IoU), anchors chosen by the
              predicted shapes (bias_match=0), thresh=0.5; two truths in one cell, so that the
              second sets only its class (darknet checks class 0's delta)
    softmax   softmax classes, bias_match=1, rescore=0, thresh=0.3, object_scale=5,
              coord_scale=2, class_scale=1.5, noobject_scale=0.5; the second truth of a cell
              replaces the first's class targets
    background  softmax's keys with background=1 (entry 4 a background score in the softmax with
              the classes, target 1 off the truths and 0 at them) and rescore=1 (which background
              overrides)
    background_logistic  logistic's keys with background=1 (entry 4 as it comes in)
    map       logistic's keys with map= (tests/ref/region_rotate.map: classes 0, 1, 2 learned as
              2, 0, 1)

Stored: input [2][16][3][4], truth [2][4][5] (x, y, w, h, class; a list ends at x = 0; a class out
of range is skipped), and per case CASE.out (the outputs), CASE.delta and CASE.cost (darknet's
l.delta and l.cost) with fewer than 12800 images seen (the anchor prior on), CASE.delta_late and
CASE.cost_late with 12800 seen (off). For softmax also softmax.grad: the gradient, by autograd,
of the loss darknet's delta is the negative gradient of, over the layer's input (half squared
errors of scale s on the logistic x, y and objectness and on the raw w, h; s times the softmax
cross-entropy on the classes), divided by the batch as cdl's loss is; the script checks it
against -delta through the logistic's derivative, and against central differences. For
background, background.grad: what cdl's backward passes, -delta through the logistic's derivative
on x, y only, over the batch (darknet's delta on a background score is not a loss's gradient).
"""
import math

import numpy as np
import torch

from ref_format import fixture_dir, seed_torch, write_cfg, write_ref

W, H, CLASSES, NUM = 4, 3, 3, 2
ANCHORS = [0.8, 1.1, 2.2, 1.6]  # grid cells
ENTRIES = CLASSES + 5
PRIOR_IMAGES = 12800
CASES = {
    "logistic": dict(softmax=0, bias_match=0, rescore=1, thresh=0.5, object_scale=1.0,
                     noobject_scale=1.0, class_scale=1.0, coord_scale=1.0),
    "softmax": dict(softmax=1, bias_match=1, rescore=0, thresh=0.3, object_scale=5.0,
                    noobject_scale=0.5, class_scale=1.5, coord_scale=2.0),
    "background": dict(softmax=1, background=1, bias_match=1, rescore=1, thresh=0.3,
                       object_scale=5.0, noobject_scale=0.5, class_scale=1.5, coord_scale=2.0),
    "background_logistic": dict(softmax=0, background=1, bias_match=0, rescore=0, thresh=0.5,
                                object_scale=1.0, noobject_scale=1.0, class_scale=1.0,
                                coord_scale=1.0),
    "map": dict(softmax=0, bias_match=0, rescore=1, thresh=0.5, object_scale=1.0,
                noobject_scale=1.0, class_scale=1.0, coord_scale=1.0, map=[2, 0, 1]),
}
MAP_FILE = "tests/ref/region_rotate.map"  # read from the repository root, as the C tests run


def logistic(z):
    return 1 / (1 + np.exp(-z))


def iou(a, b):
    """box_iou of boxes (x, y, w, h)."""
    def ov(x1, w1, x2, w2):
        return min(x1 + w1 / 2, x2 + w2 / 2) - max(x1 - w1 / 2, x2 - w2 / 2)
    w, h = ov(a[0], a[2], b[0], b[2]), ov(a[1], a[3], b[1], b[3])
    inter = 0.0 if w < 0 or h < 0 else w * h
    return inter / (a[2] * a[3] + b[2] * b[3] - inter)


class Region:
    def __init__(self, case):
        self.background, self.map = 0, None
        self.__dict__.update(case)
        self.margins = []  # distances of the compared values from their thresholds

    def forward(self, z):
        """z [batch][NUM][ENTRIES][H][W] -> the layer's output."""
        out = z.copy()
        out[:, :, 0:2] = logistic(z[:, :, 0:2])
        if not self.background:  # background: entry 4 as it is, or in the softmax
            out[:, :, 4] = logistic(z[:, :, 4])
        if self.softmax:
            first = 5 - self.background
            e = np.exp(z[:, :, first:] - z[:, :, first:].max(axis=2, keepdims=True))
            out[:, :, first:] = e / e.sum(axis=2, keepdims=True)
        else:
            out[:, :, 5:] = logistic(z[:, :, 5:])
        return out

    def box(self, out, b, n, i, j):
        e = out[b, n, :, j, i]
        return (i + e[0]) / W, (j + e[1]) / H, math.exp(e[2]) * ANCHORS[2 * n] / W, \
            math.exp(e[3]) * ANCHORS[2 * n + 1] / H

    def truths(self, truth, b):
        """x = 0 ends the list, a class out of range is skipped; the class through map=."""
        for t in truth[b]:
            if t[0] == 0:
                break
            if 0 <= t[4] < CLASSES:
                yield t[:4], self.map[int(t[4])] if self.map else int(t[4])

    def set(self, table, key, kind, scale, target):
        """Records darknet's write delta = scale (target - value) of one entry (later writes
        replace earlier ones): kind 'sig' (value the logistic output), 'raw' (the input), 'out'
        (the output, its delta passed to the input as it is: background's entry 4)."""
        table[key] = (kind, scale, target)

    def delta_box(self, out, table, t, b, n, i, j, scale):
        pred = self.box(out, b, n, i, j)
        tx, ty = t[0] * W - i, t[1] * H - j
        tw, th = math.log(t[2] * W / ANCHORS[2 * n]), math.log(t[3] * H / ANCHORS[2 * n + 1])
        for entry, kind, target in ((0, "sig", tx), (1, "sig", ty), (2, "raw", tw), (3, "raw", th)):
            self.set(table, (b, n, entry, j, i), kind, scale, target)
        return iou(pred, t)

    def delta_class(self, out, table, b, n, i, j, cls):
        if not self.softmax and (b, n, 5, j, i) in table:  # darknet: delta[class 0] != 0
            self.set(table, (b, n, 5 + cls, j, i), "class", self.class_scale, 1.0)
            return
        for k in range(CLASSES):
            self.set(table, (b, n, 5 + k, j, i), "class", self.class_scale, float(k == cls))

    def targets(self, out, truth, seen):
        """The writes of forward_region_layer: {(b, n, entry, j, i): (kind, scale, target)}."""
        table = {}
        for b in range(out.shape[0]):
            for j in range(H):
                for i in range(W):
                    for n in range(NUM):
                        pred = self.box(out, b, n, i, j)
                        best = max([iou(pred, t) for t, _ in self.truths(truth, b)], default=0)
                        self.margins.append(abs(best - self.thresh))
                        if not best > self.thresh:
                            self.set(table, (b, n, 4, j, i), self.objectness_kind(),
                                     self.noobject_scale, float(self.background))
                        else:
                            table.pop((b, n, 4, j, i), None)
                        if seen < PRIOR_IMAGES:
                            prior = ((i + .5) / W, (j + .5) / H, ANCHORS[2 * n] / W,
                                     ANCHORS[2 * n + 1] / H)
                            self.delta_box(out, table, prior, b, n, i, j, .01)
            for t, cls in self.truths(truth, b):
                i, j = int(t[0] * W), int(t[1] * H)
                ious = []
                for n in range(NUM):
                    pw, ph = self.box(out, b, n, i, j)[2:]
                    if self.bias_match:
                        pw, ph = ANCHORS[2 * n] / W, ANCHORS[2 * n + 1] / H
                    ious.append(iou((0, 0, pw, ph), (0, 0, t[2], t[3])))
                n = int(np.argmax(ious))
                self.margins.append(abs(sorted(ious)[-1] - sorted(ious)[-2]))
                v = self.delta_box(out, table, t, b, n, i, j,
                                   self.coord_scale * (2 - t[2] * t[3]))
                self.set(table, (b, n, 4, j, i), self.objectness_kind(), self.object_scale,
                         0.0 if self.background else v if self.rescore else 1.0)
                self.delta_class(out, table, b, n, i, j, cls)
        return table

    def objectness_kind(self):
        return "out" if self.background else "sig"

    def loss(self, z, truth, seen):
        out = self.forward(z)
        table = self.targets(out, truth, seen)
        delta = np.zeros_like(out)
        for key, (kind, scale, target) in table.items():
            value = z[key] if kind == "raw" else out[key]
            delta[key] = scale * (target - value)
        return out, delta, float(np.sum(delta * delta)), table


def potential(zt, table):
    """The loss whose negative gradient darknet's delta is (through the logistic's derivative on
    x, y and objectness), its targets held fixed."""
    loss = torch.zeros((), dtype=torch.float64)
    cells = {}
    for key, (kind, scale, target) in table.items():
        if kind == "class":
            cells.setdefault(key[:2] + key[3:], (scale, []))[1].append((key[2] - 5, target))
            continue
        value = zt[key] if kind == "raw" else torch.sigmoid(zt[key])
        loss = loss + 0.5 * scale * (target - value) ** 2
    for (b, n, j, i), (scale, targets) in cells.items():
        assert len(targets) == CLASSES  # softmax: every class written
        onehot = torch.tensor([t for _, t in sorted(targets)], dtype=torch.float64)
        logp = torch.log_softmax(zt[b, n, 5:, j, i], dim=0)
        loss = loss - scale * torch.sum(onehot * logp)
    return loss


def check_gradient(z, table, out, delta):
    zt = torch.tensor(z, requires_grad=True)
    potential(zt, table).backward()
    grad = zt.grad.numpy()
    through = -delta.copy()
    for e in (0, 1, 4):
        through[:, :, e] *= out[:, :, e] * (1 - out[:, :, e])
    assert np.allclose(grad, through, rtol=1e-10, atol=1e-12), np.abs(grad - through).max()
    rng = np.random.default_rng(1)
    for _ in range(40):
        k = tuple(rng.integers(0, s) for s in z.shape)
        h = 1e-6
        zp, zm = z.copy(), z.copy()
        zp[k] += h
        zm[k] -= h
        numeric = (potential(torch.tensor(zp), table) - potential(torch.tensor(zm), table)) / (2 * h)
        assert abs(float(numeric) - grad[k]) <= 1e-6 * max(1.0, abs(grad[k])), (k, numeric, grad[k])
    return grad


def backward(out, delta):
    """What cdl's backward passes into the input, over the batch: -delta, through the logistic's
    derivative on x, y and (without background) objectness; background's entry 4 as it is
    (darknet's surrogate, not the gradient of a loss of the softmax)."""
    through = -delta.copy()
    for e in (0, 1):
        through[:, :, e] *= out[:, :, e] * (1 - out[:, :, e])
    return through / out.shape[0]


def cfg_text():
    sections = []
    for k, (name, case) in enumerate(CASES.items()):
        lines = ["# case %s" % name] + (["[route]", "layers=0", ""] if k else []) + [
            "[region]", "anchors=%s" % ",".join("%g" % a for a in ANCHORS),
            "classes=%d" % CLASSES, "coords=4", "num=%d" % NUM]
        lines += ["%s=%g" % (key, value) for key, value in case.items() if key != "map"]
        if "map" in case:
            lines.append("map=%s" % MAP_FILE)
        sections.append("\n".join(lines) + "\n")
    return "[net]\nbatch=2\nwidth=%d\nheight=%d\nchannels=%d\n\n[maxpool]\nsize=1\n\n" % (
        W, H, NUM * ENTRIES) + "\n".join(sections)


def main():
    seed_torch(0)
    rng = np.random.default_rng(12)
    z = rng.normal(0, 1, (2, NUM, ENTRIES, H, W)).astype(np.float32).astype(np.float64)
    truth = np.zeros((2, 4, 5))
    truth[0, 0] = [0.30, 0.45, 0.25, 0.40, 1]
    truth[0, 1] = [0.36, 0.52, 0.22, 0.36, 2]  # the same cell as the first
    truth[0, 2] = [0.80, 0.15, 0.35, 0.22, 0]
    truth[1, 0] = [0.62, 0.58, 0.45, 0.62, 1]
    truth[1, 1] = [0.15, 0.80, 0.20, 0.30, 7]  # class out of range: skipped
    truth[1, 2] = [0.10, 0.20, 0.50, 0.55, 0]
    truth = truth.astype(np.float32).astype(np.float64)
    tensors = [("input", torch.tensor(z.reshape(2, -1, H, W))), ("truth", torch.tensor(truth))]
    for name, case in CASES.items():
        layer = Region(case)
        out, delta, cost, table = layer.loss(z, truth, seen=2)
        _, late, late_cost, _ = layer.loss(z, truth, seen=PRIOR_IMAGES)
        assert min(layer.margins) > 1e-4, min(layer.margins)
        tensors += [(name + ".out", torch.tensor(out.reshape(2, -1, H, W))),
                    (name + ".delta", torch.tensor(delta.reshape(2, -1, H, W))),
                    (name + ".cost", torch.tensor([cost])),
                    (name + ".delta_late", torch.tensor(late.reshape(2, -1, H, W))),
                    (name + ".cost_late", torch.tensor([late_cost]))]
        if name == "softmax":
            grad = check_gradient(z, table, out, delta)
            tensors.append((name + ".grad", torch.tensor(grad.reshape(2, -1, H, W) / 2)))
        if name == "background":
            grad = backward(out, delta)
            tensors.append((name + ".grad", torch.tensor(grad.reshape(2, -1, H, W))))
    with open(fixture_dir() + "/" + MAP_FILE.split("/")[-1], "w") as f:
        f.write("".join("%d\n" % k for k in CASES["map"]["map"]))
    write_cfg("region", cfg_text())
    write_ref(fixture_dir() + "/region.ref", tensors)


if __name__ == "__main__":
    main()
