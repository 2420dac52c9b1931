"""Reference fixture for a small yolov4-tiny-shaped net (cfg/yolov4_tiny.cfg's structure, AlexeyAB's
darknet): one training forward, darknet's loss and the gradients, from the definitions: the
convolutions, batch norm, leaky, [route] (concatenation, and groups=2 group_id=1: the second half of
the channels), [maxpool] and [upsample] in float64 PyTorch, the two [yolo] heads' delta and cost by
make_yolo.py's Layer (AlexeyAB's src/yolo_layer.c and src/box.c, rule by rule).

Usage: /usr/bin/python3 scripts/ref/make_yolov4_tiny.py
(writes tests/ref/yolov4_tiny.cfg and tests/ref/yolov4_tiny.ref.)

The net, batch 2 of 3x16x16, 2 classes: a stride-2 convolution, a CSP block as yolov4-tiny's (conv,
route of the second half, two convs, route -1,-2, a 1x1 conv, route -6,-1), max pools, a first
[yolo] on the 2x2 map (mask=3,4,5), then route -3, a 1x1 conv, upsample x2, route with an earlier
layer (-1,9: a layer index as yolov4-tiny's -1,23), and a second [yolo] on the 4x4 map
(mask=1,2,3, AlexeyAB's own for the second head); six anchors in pixels of the input, both heads
with yolov4-tiny's [yolo] keys (ciou, scale_x_y=1.05, iou_normalizer=0.07, ignore_thresh=0.7).
Batch norm in training mode as PyTorch's (biased batch variance, eps 1e-5), leaky slope 0.1,
conv pad=1 meaning size/2, darknet's maxpool size=2 stride=2 being F.max_pool2d(2, 2) on even sizes.

Stored: input, truth [2][4][5], every layer's parameters and running statistics (layerI.NAME),
every layer's output outI, loss (darknet's cost per image summed over both heads: cdl's net loss)
and the gradients grad.input and grad.layerI.NAME of the loss whose gradient darknet
back-propagates: each head's input receives -delta / batch; and grad_f32_spread, the largest
relative error (ref_max_rel_error's measure) of the same gradients computed by PyTorch in float32,
the rounding a float32 implementation cannot avoid here (batch norm's backward subtracts channel
means of the gradient that nearly cancel).
"""
import numpy as np
import torch
import torch.nn.functional as F

from make_yolo import Layer
from ref_format import f32, seed_torch, write_fixture

DT = torch.float64
BATCH, SIDE, CLASSES = 2, 16, 2
LEAKY, BN_EPS = 0.1, 1e-5
ANCHORS = [2, 3, 4, 5, 5, 7, 7, 6, 10, 11, 14, 13]
FILTERS = 3 * (CLASSES + 5)
YOLO = dict(iou_loss="ciou", num=6, scale_x_y=1.05, iou_normalizer=0.07, ignore_thresh=0.7,
            truth_thresh=1.0)
HEADS = {13: dict(YOLO, mask=[3, 4, 5]), 20: dict(YOLO, mask=[1, 2, 3])}

# (layer, kind, settings): conv (filters, size, stride, batch_normalize), route (layers, groups),
# maxpool, upsample, yolo
LAYERS = [
    ("conv", (8, 3, 2, True)),     # 0: 8x8x8
    ("conv", (16, 3, 1, True)),    # 1
    ("route", ([-1], True)),       # 2: the second 8 channels of 1
    ("conv", (8, 3, 1, True)),     # 3
    ("conv", (8, 3, 1, True)),     # 4
    ("route", ([-1, -2], False)),  # 5: 4 then 3
    ("conv", (16, 1, 1, True)),    # 6
    ("route", ([-6, -1], False)),  # 7: 1 then 6, 32x8x8
    ("maxpool", None),             # 8: 32x4x4
    ("conv", (32, 3, 1, True)),    # 9
    ("maxpool", None),             # 10: 32x2x2
    ("conv", (16, 1, 1, True)),    # 11
    ("conv", (FILTERS, 1, 1, False)),  # 12
    ("yolo", None),                # 13
    ("route", ([-3], False)),       # 14: 11
    ("conv", (8, 1, 1, True)),     # 15
    ("upsample", None),            # 16: 8x4x4
    ("route", ([-1, 9], False)),   # 17: 16 then 9, 40x4x4
    ("conv", (16, 3, 1, True)),    # 18
    ("conv", (FILTERS, 1, 1, False)),  # 19
    ("yolo", None),                # 20
]


def cfg_text():
    parts = ["# A small yolov4-tiny-shaped net: scripts/ref/make_yolov4_tiny.py (memory_plan=0 keeps\n"
             "# every layer's output to compare)\n"
             "[net]\nbatch=%d\nwidth=%d\nheight=%d\nchannels=3\nmemory_plan=0\n" % (BATCH, SIDE, SIDE)]
    for i, (kind, s) in enumerate(LAYERS):
        if kind == "conv":
            f, size, stride, bn = s
            parts.append("[convolutional]\n%sfilters=%d\nsize=%d\nstride=%d\npad=1\nactivation=%s\n"
                         % ("batch_normalize=1\n" if bn else "", f, size, stride,
                            "leaky" if bn else "linear"))
        elif kind == "route":
            layers, groups = s
            parts.append("[route]\nlayers=%s\n%s" % (",".join(map(str, layers)),
                                                    "groups=2\ngroup_id=1\n" if groups else ""))
        elif kind == "maxpool":
            parts.append("[maxpool]\nsize=2\nstride=2\n")
        elif kind == "upsample":
            parts.append("[upsample]\nstride=2\n")
        else:
            h = HEADS[i]
            parts.append("[yolo]\nmask=%s\nanchors=%s\nclasses=%d\nnum=6\njitter=.3\n"
                         "scale_x_y=1.05\ncls_normalizer=1.0\niou_normalizer=0.07\niou_loss=ciou\n"
                         "ignore_thresh=.7\ntruth_thresh=1\nrandom=0\nnms_kind=greedynms\n"
                         "beta_nms=0.6\n" % (",".join(map(str, h["mask"])),
                                             ",".join(map(str, ANCHORS)), CLASSES))
    return "\n".join(parts)


def make_params():
    p, s, channels = {}, {}, []
    c = 3
    for i, (kind, st) in enumerate(LAYERS):
        if kind == "conv":
            f, size, _, bn = st
            fan_in = c * size * size
            scale = (2.0 / fan_in) ** 0.5 if bn else 0.3 * (1.0 / fan_in) ** 0.5
            p[f"layer{i}.weights"] = f32(torch.randn(f, c, size, size, dtype=DT) * scale)
            if bn:
                p[f"layer{i}.scales"] = f32(torch.rand(f, dtype=DT) + 0.5)
                s[f"layer{i}.rolling_mean"] = torch.zeros(f, dtype=DT)
                s[f"layer{i}.rolling_variance"] = torch.ones(f, dtype=DT)
            p[f"layer{i}.biases"] = f32(torch.randn(f, dtype=DT) * 0.1)
            c = f
        elif kind == "route":
            layers, groups = st
            picked = [channels[l if l >= 0 else i + l] for l in layers]
            c = picked[0] // 2 if groups else sum(picked)
        channels.append(c)
    return p, s


def forward(x, p, s):
    out = []
    for i, (kind, st) in enumerate(LAYERS):
        prev = out[-1] if out else x
        if kind == "conv":
            f, size, stride, bn = st
            y = F.conv2d(prev, p[f"layer{i}.weights"], None if bn else p[f"layer{i}.biases"],
                         stride=stride, padding=size // 2)
            if bn:
                y = F.batch_norm(y, s[f"layer{i}.rolling_mean"].clone(),
                                 s[f"layer{i}.rolling_variance"].clone(), p[f"layer{i}.scales"],
                                 p[f"layer{i}.biases"], training=True, eps=BN_EPS)
                y = F.leaky_relu(y, LEAKY)
        elif kind == "route":
            layers, groups = st
            picked = [out[l if l >= 0 else i + l] for l in layers]
            y = picked[0][:, picked[0].shape[1] // 2:] if groups else torch.cat(picked, dim=1)
        elif kind == "maxpool":
            y = F.max_pool2d(prev, 2, 2)
        elif kind == "upsample":
            y = F.interpolate(prev, scale_factor=2, mode="nearest")
        else:
            y = prev  # the head: its output and delta come from make_yolo's Layer
        out.append(y)
    return out


def run(params, stats, x0, truth, dt):
    """One training forward and backward in dtype dt: the layers' outputs (the heads' from
    make_yolo's Layer), the loss, and the gradients of the input and the parameters."""
    x = x0.detach().to(dt).clone().requires_grad_(True)
    p = {n: torch.nn.Parameter(t.to(dt)) for n, t in params.items()}
    out = forward(x, p, {n: t.to(dt) for n, t in stats.items()})
    loss, surrogate, head_out = 0.0, 0.0, {}
    for i, case in HEADS.items():
        z = out[i].detach().to(DT).numpy()
        g = z.shape[2]
        layer = Layer(case, anchors=ANCHORS, grid=(g, g), net=(SIDE, SIDE), classes=CLASSES)
        o, delta, cost = layer.loss(z.reshape(BATCH, 3, CLASSES + 5, g, g), truth)
        head_out[i] = torch.tensor(o.reshape(z.shape))
        loss += cost / BATCH
        surrogate = surrogate + torch.sum(
            out[i] * torch.tensor(-delta.reshape(z.shape) / BATCH, dtype=dt))
    surrogate.backward()
    outs = [head_out.get(i, o).detach().to(DT) for i, o in enumerate(out)]
    grads = {"grad.input": x.grad.detach().to(DT)}
    grads.update({f"grad.{n}": t.grad.detach().to(DT) for n, t in p.items()})
    return outs, loss, grads


def rel_error(a, b):
    """ref_fixture.c's ref_max_rel_error."""
    scale = max(float(a.abs().max()), float(b.abs().max()))
    den = torch.maximum(torch.maximum(a.abs(), b.abs()), torch.tensor(1e-2 * scale, dtype=DT))
    return float(((a - b).abs() / den).max()) if scale > 0 else 0.0


def main():
    seed_torch(0)
    params, stats = make_params()
    x = f32(torch.randn(BATCH, 3, SIDE, SIDE, dtype=DT))
    truth = np.zeros((BATCH, 4, 5))
    truth[0, 0] = [0.30, 0.45, 0.25, 0.40, 1]
    truth[0, 1] = [0.71, 0.20, 0.55, 0.30, 0]
    truth[0, 2] = [0.12, 0.83, 0.10, 0.12, 0]
    truth[1, 0] = [0.62, 0.58, 0.45, 0.62, 1]
    truth[1, 1] = [0.20, 0.30, 0.18, 0.22, 0]
    truth = truth.astype(np.float32).astype(np.float64)
    tensors = [("input", x), ("truth", torch.tensor(truth))]
    tensors += list(params.items()) + list(stats.items())
    outs, loss, grads = run(params, stats, x, truth, DT)
    # The same in float32 (the heads still in float64): how far float32 arithmetic alone takes
    # the gradients from the float64 values, the floor a float32 implementation is held to.
    _, _, grads32 = run(params, stats, x, truth, torch.float32)
    spread = max(rel_error(grads[n], grads32[n]) for n in grads)
    tensors += [(f"out{i}", o) for i, o in enumerate(outs)]
    tensors += [("loss", torch.tensor([loss])), ("grad_f32_spread", torch.tensor([spread]))]
    tensors += list(grads.items())
    write_fixture("yolov4_tiny", cfg_text(), tensors)


if __name__ == "__main__":
    main()
