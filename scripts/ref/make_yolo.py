"""Reference fixture for cdl's [yolo] layer: darknet's delta and cost, written from the definitions
of AlexeyAB's darknet (src/yolo_layer.c: forward_yolo_layer, process_batch, delta_yolo_box,
delta_yolo_class, averages_yolo_deltas; src/box.c: box_iou, box_giou, box_diou, box_ciou,
dx_box_iou), in float64 numpy, rule by rule.

Usage: /usr/bin/python3 scripts/ref/make_yolo.py
(writes tests/ref/yolo.cfg, one [yolo] section per case, and tests/ref/yolo.ref.)

The net: layer 0 an identity ([maxpool] size=1) of the input (batch 2, 14 channels = 2 anchors x
(2 classes + 5), a 4 x 3 grid, so anchors are in pixels of a 4 x 3 input), then per case a [yolo]
reading it ([route] layers=0 before all but the first), all given the same truth boxes:
    mse    darknet's defaults: iou_loss=mse, iou_normalizer=0.75, ignore_thresh=0.5, an anchor of
           num=3 outside mask= (its truth is skipped), a truth of class 5 (skipped)
    giou   yolov4's settings: giou, iou_normalizer=0.07, iou_thresh=0.213, scale_x_y=1.05,
           max_delta=5, obj_normalizer=1.5
    diou   truth_thresh=0.3 (cells overlapping a truth learn it), ignore_thresh=0.2
    ciou   ciou with iou_thresh=0.1 of kind giou
    focal  focal_loss=1 (AlexeyAB's delta_yolo_class: alpha 0.5, gamma 2)
    smooth label_smooth_eps=0.1 (class targets 1 - eps/2 and eps/2), ciou, truth_thresh=0.3,
           ignore_thresh=0.2
    objsmooth  objectness_smooth=1 with truth_thresh=0.3, ignore_thresh=0.2 and
           obj_normalizer=1.5, so that its three rules are reached: an ignored cell's objectness
           target is its best matching IoU (where that raises the delta), a cell past
           truth_thresh learns IoU^2 in objectness and class, and a truth's own cell takes
           objectness 1 only where its delta is still 0

Stored: input [2][14][3][4], truth [2][4][5] (x, y, w, h, class; a sample's list ends at x = 0),
and per case CASE.out (the logistic outputs), CASE.delta (darknet's l.delta) and CASE.cost
(darknet's l.cost, show_details=1). For mse the script also asserts that -delta is the gradient,
by autograd, of the loss it is the gradient of (binary cross-entropies on objectness, classes and
x, y; half squared errors on w, h), the assignment of cells to truths held fixed. For focal,
smooth and objsmooth it checks by central differences that -delta on objectness and classes is
the gradient of the loss each entry's last rule names: the binary cross-entropy of the logistic
output against that rule's target (smoothed, or an IoU), times its weight; for focal's truth class
the focal loss -alpha (1 - p)^2 log p itself; the targets (IoUs) and focal's weight on the other
classes (alpha times the truth class's focal factor) held fixed, as darknet treats them.
"""
import math

import numpy as np
import torch

from ref_format import fixture_dir, seed_torch, write_cfg, write_ref

W, H, CLASSES, NUM_MASK = 4, 3, 2, 2
ANCHORS = [0.9, 1.1, 1.6, 1.4, 3.0, 2.6]
CASES = {
    "mse": dict(iou_loss="mse", mask=[0, 1], num=3),
    "giou": dict(iou_loss="giou", mask=[1, 2], num=3, iou_normalizer=0.07, iou_thresh=0.213,
                 scale_x_y=1.05, max_delta=5.0, obj_normalizer=1.5),
    "diou": dict(iou_loss="diou", mask=[0, 2], num=3, truth_thresh=0.3, ignore_thresh=0.2),
    "ciou": dict(iou_loss="ciou", mask=[0, 1], num=3, iou_thresh=0.1, iou_thresh_kind="giou"),
    "focal": dict(iou_loss="mse", mask=[0, 1], num=3, focal_loss=1),
    "smooth": dict(iou_loss="ciou", mask=[0, 1], num=3, label_smooth_eps=0.1, truth_thresh=0.3,
                   ignore_thresh=0.2),
    "objsmooth": dict(iou_loss="mse", mask=[0, 1], num=3, objectness_smooth=1, truth_thresh=0.3,
                      ignore_thresh=0.2, obj_normalizer=1.5),
    "newcoords": dict(iou_loss="mse", mask=[0, 1], num=3, new_coords=1, scale_x_y=2.0),
    "newcoords_ciou": dict(iou_loss="ciou", mask=[1, 2], num=3, new_coords=1, scale_x_y=1.1,
                           iou_normalizer=0.07, iou_thresh=0.213, truth_thresh=0.3,
                           ignore_thresh=0.2),
    "counters": dict(iou_loss="mse", mask=[0, 1], num=3, counters_per_class=[10, 40], max_delta=3.0,
                     cls_normalizer=2.0, truth_thresh=0.3, ignore_thresh=0.2),
    "counters_smooth": dict(iou_loss="giou", mask=[0, 1], num=3, counters_per_class=[30, 12],
                            objectness_smooth=1, truth_thresh=0.3, ignore_thresh=0.2,
                            cls_normalizer=0.5),
    "map": dict(iou_loss="mse", mask=[0, 1], num=3, class_map=[1, 0], truth_thresh=0.3,
                ignore_thresh=0.2),
}
MAP_FILE = "tests/ref/yolo_swap.map"  # read from the repository root, as the C tests run
DEFAULTS = dict(ignore_thresh=0.5, truth_thresh=1.0, iou_thresh=1.0, iou_thresh_kind="iou",
                scale_x_y=1.0, iou_normalizer=0.75, obj_normalizer=1.0, max_delta=math.inf,
                focal_loss=0, label_smooth_eps=0.0, objectness_smooth=0, new_coords=0,
                counters_per_class=None, cls_normalizer=1.0, class_map=None)
FOCAL_ALPHA = 0.5


def f32(v):
    return float(np.float32(v))


def logistic(z):
    return 1 / (1 + np.exp(-z))


def area_terms(a, b):
    """Intersection and union of boxes (x, y, w, h)."""
    def ov(x1, w1, x2, w2):
        return min(x1 + w1 / 2, x2 + w2 / 2) - max(x1 - w1 / 2, x2 - w2 / 2)
    w, h = ov(a[0], a[2], b[0], b[2]), ov(a[1], a[3], b[1], b[3])
    inter = 0.0 if w < 0 or h < 0 else w * h
    return inter, a[2] * a[3] + b[2] * b[3] - inter


def iou(a, b):
    i, u = area_terms(a, b)
    return 0.0 if i == 0 or u == 0 else i / u


def enclosing(a, b):
    cw = max(a[0] + a[2] / 2, b[0] + b[2] / 2) - min(a[0] - a[2] / 2, b[0] - b[2] / 2)
    ch = max(a[1] + a[3] / 2, b[1] + b[3] / 2) - min(a[1] - a[3] / 2, b[1] - b[3] / 2)
    return cw, ch


def aspect(a, b):
    return 4 / math.pi ** 2 * (math.atan(b[2] / b[3]) - math.atan(a[2] / a[3])) ** 2


def iou_kind(a, b, kind):
    """box_iou, box_giou, box_diou (distance term to the power 0.6), box_ciou."""
    v = iou(a, b)
    cw, ch = enclosing(a, b)
    if kind == "giou":
        c = cw * ch
        return v if c == 0 else v - (c - area_terms(a, b)[1]) / c
    c2 = cw * cw + ch * ch
    if kind == "iou" or c2 == 0:
        return v
    d = ((a[0] - b[0]) ** 2 + (a[1] - b[1]) ** 2) / c2
    if kind == "diou":
        return v - d ** 0.6
    ar = aspect(a, b)
    return v - (d + ar / (1 - v + ar + 1e-6) * ar)


def dx_box_iou(p, t, kind):
    """darknet's dx_box_iou for boxes of positive size: partial derivatives of IoU (GIoU) in the
    prediction's top, bottom, left, right, mapped to x, y, w, h as darknet does (w, h not halved),
    plus for diou/ciou darknet's distance (and aspect) terms; where the boxes do not overlap only
    the extra term is kept."""
    pt, pb, pl, pr = p[1] - p[3] / 2, p[1] + p[3] / 2, p[0] - p[2] / 2, p[0] + p[2] / 2
    tt, tb, tl, tr = t[1] - t[3] / 2, t[1] + t[3] / 2, t[0] - t[2] / 2, t[0] + t[2] / 2
    X = (pb - pt) * (pr - pl)
    Xhat = (tb - tt) * (tr - tl)
    Ih, Iw = min(pb, tb) - max(pt, tt), min(pr, tr) - max(pl, tl)
    I = Iw * Ih
    U = X + Xhat - I
    Cw, Ch = max(pr, tr) - min(pl, tl), max(pb, tb) - min(pt, tt)
    C = Cw * Ch
    dX = {"t": -(pr - pl), "b": pr - pl, "l": -(pb - pt), "r": pb - pt}
    dI = {"t": -Iw if pt > tt else 0, "b": Iw if pb < tb else 0,
          "l": -Ih if pl > tl else 0, "r": Ih if pr < tr else 0}
    dC = {"t": -Cw if pt < tt else 0, "b": Cw if pb > tb else 0,
          "l": -Ch if pl < tl else 0, "r": Ch if pr > tr else 0}
    apart = Iw <= 0 or Ih <= 0
    side = {}
    for k in "tblr":
        dU = dX[k] - dI[k]
        s = (U * dI[k] - I * dU) / (U * U) if U > 0 else 0.0
        if kind == "giou":
            extra = (C * dU - U * dC[k]) / (C * C)
            s = extra if apart else s + (extra if C > 0 else 0)
        side[k] = s
    g = [side["l"] + side["r"], side["t"] + side["b"], side["r"] - side["l"], side["b"] - side["t"]]
    if kind not in ("diou", "ciou"):
        return g
    S = (p[0] - t[0]) ** 2 + (p[1] - t[1]) ** 2
    C2 = Cw * Cw + Ch * Ch
    dCw_dx = (1 if pr > tr else 0) - (1 if pl < tl else 0)
    dCh_dy = (1 if pb > tb else 0) - (1 if pt < tt else 0)
    dCw_dw = (0.5 if pr > tr else 0) + (0.5 if pl < tl else 0)
    dCh_dh = (0.5 if pb > tb else 0) + (0.5 if pt < tt else 0)
    d = [(2 * (t[0] - p[0]) * C2 - 2 * Cw * dCw_dx * S) / C2 ** 2,
         (2 * (t[1] - p[1]) * C2 - 2 * Ch * dCh_dy * S) / C2 ** 2,
         2 * Cw * dCw_dw * S / C2 ** 2, 2 * Ch * dCh_dh * S / C2 ** 2]
    if kind == "ciou":
        diff = math.atan(t[2] / t[3]) - math.atan(p[2] / p[3])
        ar = aspect(p, t)
        alpha = ar / (1 - I / U + ar + 1e-6)
        d[2] += alpha * 8 / math.pi ** 2 * diff * p[3]
        d[3] -= alpha * 8 / math.pi ** 2 * diff * p[2]
    if apart:
        return d
    return [g[k] + d[k] for k in range(4)] if C2 > 0 else g


class Layer:
    def __init__(self, case, anchors=ANCHORS, grid=(W, H), net=(W, H), classes=CLASSES):
        """A [yolo] of case's keys over a grid of grid = (w, h) cells of a net input of net =
        (w, h) pixels, anchors in those pixels (make_yolov4_tiny.py's heads; here both are
        the input's)."""
        self.__dict__.update(DEFAULTS)
        self.__dict__.update(case)
        self.anchors = np.array(anchors).reshape(-1, 2)
        (self.gw, self.gh), (self.nw, self.nh), self.classes = grid, net, classes
        self.multipliers = None
        if self.counters_per_class:  # get_classes_multipliers
            most = max(self.counters_per_class)
            self.multipliers = [min(f32(most / c), self.max_delta) for c in self.counters_per_class]

    def weight(self, cls):
        return self.multipliers[cls] if self.multipliers else 1.0

    def forward(self, z):
        out = z.copy()
        for n in range(len(self.mask)):
            if self.new_coords:  # no logistic: the [convolutional] before has it
                out[:, n, 0:2] = z[:, n, 0:2] * self.scale_x_y - 0.5 * (self.scale_x_y - 1)
                continue
            out[:, n, :] = logistic(z[:, n, :])  # entries 2, 3 (w, h) are put back below
            out[:, n, 2:4] = z[:, n, 2:4]
            out[:, n, 0:2] = out[:, n, 0:2] * self.scale_x_y - 0.5 * (self.scale_x_y - 1)
        return out

    def pred_box(self, out, b, n, j, i, anchor):
        e = out[b, n, :, j, i]
        size = (lambda v: 4 * v * v) if self.new_coords else math.exp
        return (i + e[0]) / self.gw, (j + e[1]) / self.gh, size(e[2]) * anchor[0] / self.nw, \
            size(e[3]) * anchor[1] / self.nh

    def delta_box(self, out, delta, b, n, j, i, anchor, t, weight=1.0):
        """delta_yolo_box, iou_normalizer times the class's weight (counters_per_class); with
        new_coords the mse targets of w, h are sqrt(size / (4 anchor)), the IoU deltas of w, h
        have no exp factor, and each mse entry's rule is kept for the gradient check."""
        pred = self.pred_box(out, b, n, j, i, anchor)
        ious = (iou(pred, t), iou_kind(pred, t, "giou"))
        e, d = out[b, n, :, j, i], delta[b, n, :, j, i]
        if self.iou_loss == "mse":
            s = (2 - t[2] * t[3]) * self.iou_normalizer * weight
            rw, rh = t[2] * self.nw / anchor[0], t[3] * self.nh / anchor[1]
            size = (lambda r: math.sqrt(r / 4)) if self.new_coords else math.log
            target = [t[0] * self.gw - i, t[1] * self.gh - j, size(rw), size(rh)]
            for k in range(4):
                d[k] += s * (target[k] - e[k])
                idx = (b, n, k, j, i)
                self.rules[idx] = ("box", target[k], s) if idx not in self.rules else ("twice",)
            return ious
        g = dx_box_iou(pred, t, self.iou_loss)
        if not self.new_coords:
            g[2] *= math.exp(e[2])
            g[3] *= math.exp(e[3])
        for k in range(4):
            v = g[k] * self.iou_normalizer * weight
            v = 0.0 if not math.isfinite(v) else v
            d[k] += min(max(v, -self.max_delta), self.max_delta)
        return ious

    def target(self, out, delta, idx, target, weight=1.0):
        """delta[idx] = weight (target - out[idx]): -d/dz of weight BCE(logistic(z), target);
        the rule is kept in self.rules for the gradient check."""
        delta[idx] = weight * (target - out[idx])
        self.rules[idx] = ("bce", target, weight)

    def smoothed(self, y):
        return y * (1 - self.label_smooth_eps) + 0.5 * self.label_smooth_eps

    def delta_class(self, out, delta, b, n, j, i, cls):
        """AlexeyAB's delta_yolo_class: with counters_per_class the truth class's delta times its
        multiplier (and cls_normalizer where every class is set; focal_loss: neither)."""
        at = lambda k: (b, n, 5 + k, j, i)
        if delta[at(cls)] != 0:
            self.target(out, delta, at(cls), self.smoothed(1.0), self.weight(cls))
            return
        if self.focal_loss:
            pt = out[at(cls)] + 1e-15
            factor = -(1 - pt) * (2 * pt * math.log(pt) + pt - 1)
            for k in range(self.classes):
                self.target(out, delta, at(k), 1.0 if k == cls else 0.0, FOCAL_ALPHA * factor)
            self.rules[at(cls)] = ("focal",)
            return
        for k in range(self.classes):
            weight = self.weight(cls) * self.cls_normalizer if self.multipliers and k == cls else 1.0
            self.target(out, delta, at(k), self.smoothed(1.0 if k == cls else 0.0), weight)

    def truths(self, truth, b):
        """A sample's truths as darknet reads them: x = 0 ends the list, a class out of range is
        skipped; the class through map=."""
        for t in truth[b]:
            if t[0] == 0:
                return
            if 0 <= int(t[4]) < self.classes:
                cls = int(t[4])
                yield tuple(t[:4]), self.class_map[cls] if self.class_map else cls

    def best_anchor(self, t):
        """Of all num anchors, the first of best IoU with t's width and height."""
        shape = (0, 0, t[2], t[3])
        ious = [iou((0, 0, a[0] / self.nw, a[1] / self.nh), shape) for a in self.anchors]
        return max(range(len(ious)), key=lambda k: (ious[k], -k))

    def loss(self, z, truth):
        out = self.forward(z)
        delta = np.zeros_like(out)
        self.rules = {}
        tally = dict(iou=0.0, giou=0.0, count=0)
        mask = self.mask
        for b in range(z.shape[0]):
            for j in range(self.gh):
                for i in range(self.gw):
                    for n in range(len(mask)):
                        anchor = self.anchors[mask[n]]
                        pred = self.pred_box(out, b, n, j, i, anchor)
                        scored = np.any(out[b, n, 5:, j, i] > 0.25)
                        best_match, best, best_t = 0.0, 0.0, None
                        for t, cls in self.truths(truth, b):
                            v = iou(pred, t)
                            if v > best_match and scored:
                                best_match = v
                            if v > best:
                                best, best_t = v, (t, cls)
                        obj = (b, n, 4, j, i)
                        self.target(out, delta, obj, 0.0, self.obj_normalizer)
                        if best_match > self.ignore_thresh:
                            if not self.objectness_smooth:
                                delta[obj] = 0
                                self.rules[obj] = ("none",)
                            elif self.obj_normalizer * (best_match - out[obj]) > delta[obj]:
                                self.target(out, delta, obj, best_match, self.obj_normalizer)
                        if best > self.truth_thresh:
                            t, cls = best_t
                            self.target(out, delta, obj, best * best if self.objectness_smooth
                                        else 1.0, self.obj_normalizer)
                            self.delta_class(out, delta, b, n, j, i, cls)
                            if self.objectness_smooth:
                                self.target(out, delta, (b, n, 5 + cls, j, i), best * best,
                                            self.weight(cls))
                            self.delta_box(out, delta, b, n, j, i, anchor, t, self.weight(cls))
            for t, cls in self.truths(truth, b):
                shape = (0, 0, t[2], t[3])
                best_n = self.best_anchor(t)
                i, j = int(t[0] * self.gw), int(t[1] * self.gh)
                for a in range(self.num):
                    if a not in mask:
                        continue
                    anchor_box = (0, 0, self.anchors[a][0] / self.nw, self.anchors[a][1] / self.nh)
                    extra = self.iou_thresh < 1 and \
                        iou_kind(anchor_box, shape, self.iou_thresh_kind) > self.iou_thresh
                    if a != best_n and not extra:
                        continue
                    n = mask.index(a)
                    v, gv = self.delta_box(out, delta, b, n, j, i, self.anchors[a], t,
                                           self.weight(cls))
                    tally["iou"] += 1 - v
                    tally["giou"] += 1 - gv
                    tally["count"] += 1
                    if not self.objectness_smooth or delta[b, n, 4, j, i] == 0:
                        self.target(out, delta, (b, n, 4, j, i), 1.0,
                                    self.weight(cls) * self.obj_normalizer)
                    self.delta_class(out, delta, b, n, j, i, cls)
            if self.iou_thresh < 1:
                for n in range(len(mask)):
                    d = delta[b, n]
                    for j in range(self.gh):
                        for i in range(self.gw):
                            positive = int(np.sum(d[5:, j, i] > 0))
                            if d[4, j, i] != 0 and positive:
                                d[0:4, j, i] /= positive
        return out, delta, self.cost(delta, tally)

    def cost(self, delta, tally):
        total = float(np.sum(delta ** 2))
        if self.iou_loss == "mse":
            return total
        box = float(np.sum(delta[:, :, 0:4] ** 2))
        s = tally["giou"] if self.iou_loss == "giou" else tally["iou"]
        avg = self.iou_normalizer * s / tally["count"] if tally["count"] else 0.0
        return avg + self.obj_normalizer * (total - box)


def mse_potential_grad(layer, z, truth, delta):
    """Autograd of the loss whose negative gradient the mse delta is (scale_x_y 1, iou_thresh 1,
    truth_thresh 1, no cell given two truths), the targets read off the assignment: BCE on
    objectness (target 1 where a truth was given, ignored where delta is 0 and no truth, else 0),
    on classes and x, y; half squared error on w, h."""
    zt = torch.tensor(z, requires_grad=True)
    loss = torch.zeros((), dtype=torch.float64)
    bce = torch.nn.functional.binary_cross_entropy_with_logits
    for b in range(z.shape[0]):
        for t, cls in layer.truths(truth, b):
            best_n = layer.best_anchor(t)
            if best_n not in layer.mask:
                continue
            n, i, j = layer.mask.index(best_n), int(t[0] * W), int(t[1] * H)
            a = layer.anchors[best_n]
            s = (2 - t[2] * t[3]) * layer.iou_normalizer
            e = zt[b, n, :, j, i]
            xy = torch.tensor([t[0] * W - i, t[1] * H - j], dtype=torch.float64)
            wh = torch.tensor([math.log(t[2] * W / a[0]), math.log(t[3] * H / a[1])],
                              dtype=torch.float64)
            loss = loss + s * bce(e[0:2], xy, reduction="sum") + s * 0.5 * torch.sum((wh - e[2:4]) ** 2)
            onehot = torch.tensor([1.0 if k == cls else 0.0 for k in range(CLASSES)],
                                  dtype=torch.float64)
            loss = loss + bce(e[5:], onehot, reduction="sum")
            loss = loss + layer.obj_normalizer * bce(e[4], torch.tensor(1.0, dtype=torch.float64))
            delta[b, n, 4, j, i] = np.nan  # this objectness is done
    for idx in zip(*np.nonzero(delta[:, :, 4] != 0)):
        if not np.isnan(delta[idx[0], idx[1], 4, idx[2], idx[3]]):
            b, n, j, i = idx
            loss = loss + layer.obj_normalizer * bce(zt[b, n, 4, j, i],
                                                     torch.tensor(0.0, dtype=torch.float64))
    loss.backward()
    return zt.grad.numpy()


def entry_loss(rule, z):
    """The loss whose gradient in the logit z the rule's delta is, negated."""
    p = logistic(z)
    if rule[0] == "focal":
        return -FOCAL_ALPHA * (1 - p) ** 2 * math.log(p)
    _, target, weight = rule
    return -weight * (target * math.log(p) + (1 - target) * math.log(1 - p))


def check_new_coords_gradients(layer, z, delta):
    """With new_coords the output is the input (x, y scaled): central differences of each entry's
    loss against -delta, the targets held fixed. Objectness and classes: weight (t - z)^2 / 2;
    mse w, h: s (t - z)^2 / 2; mse x, y: s (t - out)^2 / (2 scale_x_y), out = scale_x_y z -
    (scale_x_y - 1) / 2, whose gradient drops scale_x_y as darknet's delta does."""
    h = 1e-6
    sxy = layer.scale_x_y

    def entry_loss(idx, rule, v):
        if rule[0] == "bce":
            return rule[2] * (rule[1] - v) ** 2 / 2
        if idx[2] >= 2:
            return rule[2] * (rule[1] - v) ** 2 / 2
        return rule[2] * (rule[1] - (v * sxy - 0.5 * (sxy - 1))) ** 2 / (2 * sxy)
    checked = 0
    for idx in np.ndindex(delta.shape):
        rule = layer.rules.get(idx, ("none",))
        assert rule[0] != "twice", idx
        if rule[0] == "none":
            assert delta[idx] == 0, idx
            continue
        numeric = (entry_loss(idx, rule, z[idx] + h) - entry_loss(idx, rule, z[idx] - h)) / (2 * h)
        assert abs(numeric + delta[idx]) <= 1e-6 * max(1.0, abs(numeric)), (idx, numeric, delta[idx])
        checked += 1
    return checked


def check_smooth_gradients(layer, z, delta):
    """Central differences of each objectness and class entry's loss (layer.rules, the targets and
    weights of the unperturbed outputs) against -delta; entries without a rule have delta 0.
    Returns the rules seen."""
    h = 1e-6
    seen = set()
    for idx in np.ndindex(delta.shape):
        if idx[2] < 4:
            continue
        rule = layer.rules.get(idx, ("none",))
        seen.add(rule[0] if rule[0] != "bce" else "bce target %g" % rule[1] if rule[1] in (0, 1)
                 else "bce target other")
        if rule[0] == "none":
            assert delta[idx] == 0, idx
            continue
        numeric = (entry_loss(rule, z[idx] + h) - entry_loss(rule, z[idx] - h)) / (2 * h)
        assert abs(numeric + delta[idx]) <= 1e-6 * max(1.0, abs(numeric)), (idx, numeric, delta[idx])
    return seen


def cfg_text():
    sections = []
    for k, (name, case) in enumerate(CASES.items()):
        c = dict(DEFAULTS, **case)
        lines = ["# case %s" % name] + (["[route]", "layers=0", ""] if k else []) + ["[yolo]", "mask=%s" % ",".join(map(str, c["mask"])),
                 "anchors=%s" % ",".join("%g" % a for a in ANCHORS), "classes=%d" % CLASSES,
                 "num=%d" % c["num"], "iou_loss=%s" % c["iou_loss"]]
        for key in ("ignore_thresh", "truth_thresh", "iou_thresh", "scale_x_y", "iou_normalizer",
                    "obj_normalizer", "cls_normalizer"):
            if c[key] != DEFAULTS[key]:
                lines.append("%s=%g" % (key, c[key]))
        for key in ("focal_loss", "objectness_smooth", "new_coords"):
            if c[key]:
                lines.append("%s=%d" % (key, c[key]))
        if c["label_smooth_eps"]:
            lines.append("label_smooth_eps=%g" % c["label_smooth_eps"])
        if c["iou_thresh_kind"] != "iou":
            lines.append("iou_thresh_kind=%s" % c["iou_thresh_kind"])
        if math.isfinite(c["max_delta"]):
            lines.append("max_delta=%g" % c["max_delta"])
        if c["counters_per_class"]:
            lines.append("counters_per_class=%s" % ",".join(map(str, c["counters_per_class"])))
        if c["class_map"]:
            lines.append("map=%s" % MAP_FILE)
        sections.append("\n".join(lines) + "\n")
    return "[net]\nbatch=2\nwidth=%d\nheight=%d\nchannels=%d\n\n[maxpool]\nsize=1\n\n" % (
        W, H, NUM_MASK * (CLASSES + 5)) + "\n".join(sections)


def main():
    seed_torch(0)
    rng = np.random.default_rng(39)
    z = rng.normal(0, 1, (2, NUM_MASK, CLASSES + 5, H, W)).astype(np.float32).astype(np.float64)
    truth = np.zeros((2, 4, 5))
    truth[0, 0] = [0.30, 0.45, 0.25, 0.40, 1]
    truth[0, 1] = [0.71, 0.20, 0.55, 0.30, 0]
    truth[0, 2] = [0.55, 0.80, 0.30, 0.35, 5]  # class out of range: skipped
    truth[0, 3] = [0.12, 0.88, 0.70, 0.75, 0]
    truth[1, 0] = [0.62, 0.58, 0.45, 0.62, 1]
    truth = truth.astype(np.float32).astype(np.float64)
    tensors = [("input", torch.tensor(z.reshape(2, -1, H, W))),
               ("truth", torch.tensor(truth))]
    for name, case in CASES.items():
        layer = Layer(case)
        out, delta, cost = layer.loss(z, truth)
        tensors += [(name + ".out", torch.tensor(out.reshape(2, -1, H, W))),
                    (name + ".delta", torch.tensor(delta.reshape(2, -1, H, W))),
                    (name + ".cost", torch.tensor([cost]))]
        if name == "mse":
            grad = mse_potential_grad(layer, z, truth, delta.copy())
            assert np.allclose(grad, -delta, rtol=1e-12, atol=1e-12), np.abs(grad + delta).max()
        if name in ("focal", "smooth", "objsmooth", "counters", "counters_smooth", "map"):
            print(name, sorted(check_smooth_gradients(layer, z, delta)))
        if name == "newcoords":
            print(name, check_new_coords_gradients(layer, z, delta), "entries checked")
    with open(fixture_dir() + "/" + MAP_FILE.split("/")[-1], "w") as f:
        f.write("".join("%d\n" % k for k in CASES["map"]["class_map"]))
    write_cfg("yolo", cfg_text())
    write_ref(fixture_dir() + "/yolo.ref", tensors)


if __name__ == "__main__":
    main()
