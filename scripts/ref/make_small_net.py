"""PyTorch reference fixture for cdl's C tests: small conv/BN/maxpool/shortcut/route/connected net.

Usage: /usr/bin/python3 scripts/ref/make_small_net.py
(Debian's python3-torch; writes tests/ref/small_net.{cfg,ref} with 4-filter 3x3 convolutions
and tests/ref/small_net_wide.{cfg,ref} with 16, whose second one (16 channels in, 4x4 map)
cdl runs on Winograd F(2x2,3x3); relative to the repository root, which is found from this
script's path.)

The network is computed in float64 from float32-representable inputs and parameters,
then every stored tensor is rounded to float32. Seeds are fixed and torch runs on one
thread, so running the script twice gives identical bytes.

.ref format (read by tests/unit/ref_fixture.c):
    the ASCII line "CDLREF 1\\n", then for each tensor
    a line "NAME NDIM D0 D1 ... D{NDIM-1}\\n" (single spaces, NAME has no whitespace,
    1 <= NDIM <= 8) followed by D0*D1*...*4 bytes: the values as float32 little-endian,
    C (row-major) order; then the next tensor, until end of file.

Semantics reproduced (what cdl implements):
- NCHW; batch 4, input 3x8x8, 5 classes, W filters in the 3x3 convolutions (4 or 16); leaky slope 0.1; conv pad=1 means size/2.
- darknet maxpool size=3 stride=2 (padding size-1, window offset -1, pad value -inf)
  == nn.MaxPool2d(3, 2, padding=1) on 8x8.
- BN in training mode like PyTorch: biased batch variance for normalisation,
  (x-mean)/sqrt(var+eps)*scale+bias; running mean/var move by momentum 0.1, the
  running variance with the unbiased batch variance; initial running mean 0, var 1.
  Convolutions with batch_normalize=1 have no bias of their own.
- connected: y = x W^T + b, x the flattened CHW input; loss = mean cross-entropy.
- SGD(lr=0.1, momentum=0.9, dampening=0, nesterov=False), weight decay 0.01 on conv
  and connected weights only.
"""

import numpy as np
import torch
import torch.nn.functional as F

from ref_format import f32, seed_torch, write_fixture

CFG = """[net]
batch=4
subdivisions=1
width=8
height=8
channels=3
learning_rate=0.1
momentum=0.9
decay=0.01
policy=constant
bn_momentum=0.1
bn_eps=0.00001

# 0: {width}x8x8
[convolutional]
filters={width}
size=3
stride=1
pad=1
batch_normalize=1
activation=leaky

# 1: {width}x4x4 (darknet maxpool: padding defaults to size-1, window offset -padding/2; out=(in+padding-size)/stride+1)
[maxpool]
size=3
stride=2

# 2: {width}x4x4
[convolutional]
filters={width}
size=3
stride=1
pad=1
batch_normalize=1
activation=leaky

# 3: layer 2 + layer 1
[shortcut]
from=-2
activation=linear

# 4: 2x4x4, no batch norm so it has biases
[convolutional]
filters=2
size=1
stride=1
activation=leaky

# 5: concat(layer 4, layer 3) along channels -> {cat}x4x4
[route]
layers=-1,-2

# 6
[connected]
output=5
activation=linear

# 7
[softmax]
"""

BATCH, CHANNELS, SIZE, CLASSES = 4, 3, 8, 5
LR, MOMENTUM, DECAY = 0.1, 0.9, 0.01
BN_MOMENTUM, BN_EPS = 0.1, 1e-5
LEAKY = 0.1
STEPS = 3

DT = torch.float64


def make_params(w):
    """Initial parameters for W filters in the 3x3 convolutions."""
    p = {}
    p["layer0.weights"] = f32(torch.randn(w, 3, 3, 3, dtype=DT) * (2.0 / 27) ** 0.5)
    p["layer0.scales"] = f32(torch.rand(w, dtype=DT) + 0.5)
    p["layer0.biases"] = f32(torch.randn(w, dtype=DT) * 0.1)
    p["layer2.weights"] = f32(torch.randn(w, w, 3, 3, dtype=DT) * (2.0 / (9 * w)) ** 0.5)
    p["layer2.scales"] = f32(torch.rand(w, dtype=DT) + 0.5)
    p["layer2.biases"] = f32(torch.randn(w, dtype=DT) * 0.1)
    p["layer4.weights"] = f32(torch.randn(2, w, 1, 1, dtype=DT) * (2.0 / w) ** 0.5)
    p["layer4.biases"] = f32(torch.randn(2, dtype=DT) * 0.1)
    n = (2 + w) * 16
    p["layer6.weights"] = f32(torch.randn(5, n, dtype=DT) * (1.0 / n) ** 0.5)
    p["layer6.biases"] = f32(torch.randn(5, dtype=DT) * 0.1)
    return p


def make_stats(w):
    return {
        "layer0.rolling_mean": torch.zeros(w, dtype=DT),
        "layer0.rolling_variance": torch.ones(w, dtype=DT),
        "layer2.rolling_mean": torch.zeros(w, dtype=DT),
        "layer2.rolling_variance": torch.ones(w, dtype=DT),
    }


def conv_bn_leaky(x, p, s, i, training):
    y = F.conv2d(x, p[f"layer{i}.weights"], None, stride=1, padding=1)
    # F.batch_norm updates the running stats in place (unbiased variance) when training.
    y = F.batch_norm(y, s[f"layer{i}.rolling_mean"], s[f"layer{i}.rolling_variance"],
                     p[f"layer{i}.scales"], p[f"layer{i}.biases"], training=training,
                     momentum=BN_MOMENTUM, eps=BN_EPS)
    return F.leaky_relu(y, LEAKY)


def forward(x, p, s, training):
    out = [None] * 8
    out[0] = conv_bn_leaky(x, p, s, 0, training)
    out[1] = F.max_pool2d(out[0], 3, 2, padding=1)
    out[2] = conv_bn_leaky(out[1], p, s, 2, training)
    out[3] = out[2] + out[1]
    out[4] = F.leaky_relu(F.conv2d(out[3], p["layer4.weights"], p["layer4.biases"]), LEAKY)
    out[5] = torch.cat([out[4], out[3]], dim=1)
    out[6] = F.linear(out[5].reshape(out[5].shape[0], -1), p["layer6.weights"],
                      p["layer6.biases"])
    out[7] = F.softmax(out[6], dim=1)
    return out


def compute(x, labels, params, stats):
    """Runs the whole experiment from the given initial tensors (dtype taken from x).

    Returns the list of (name, tensor) pairs to store, in file order."""
    x = x.detach().clone().requires_grad_(True)
    p = {n: torch.nn.Parameter(t.detach().clone()) for n, t in params.items()}
    s = {n: t.detach().clone() for n, t in stats.items()}
    order = list(p.keys())
    stat_order = list(s.keys())

    tensors = [("input", x), ("labels", labels.to(x.dtype))]
    tensors += [(n, p[n]) for n in order] + [(n, s[n]) for n in stat_order]
    tensors = [(n, t.detach().clone()) for n, t in tensors]

    weights = [p[n] for n in order if n.endswith(".weights")]
    others = [p[n] for n in order if not n.endswith(".weights")]
    opt = torch.optim.SGD([{"params": weights, "weight_decay": DECAY},
                           {"params": others, "weight_decay": 0.0}],
                          lr=LR, momentum=MOMENTUM, dampening=0, nesterov=False)

    for step in range(1, STEPS + 1):
        out = forward(x, p, s, training=True)
        loss = F.cross_entropy(out[6], labels)
        loss.backward()
        if step == 1:
            for i, o in enumerate(out):
                tensors.append((f"out{i}", o.detach().clone()))
            tensors.append(("loss", loss.detach().reshape(1).clone()))
            for n in order:
                tensors.append((f"grad.{n}", p[n].grad.detach().clone()))
            tensors.append(("grad.input", x.grad.detach().clone()))
            for n in stat_order:
                tensors.append((f"step1.{n}", s[n].clone()))
        opt.step()
        opt.zero_grad()
        x.grad = None
        if step == STEPS:
            tensors.append((f"step{STEPS}.loss", loss.detach().reshape(1).clone()))

    for n in order:
        tensors.append((f"step{STEPS}.{n}", p[n].detach().clone()))
    for n in stat_order:
        tensors.append((f"step{STEPS}.{n}", s[n].clone()))
    with torch.no_grad():
        out = forward(x, p, s, training=False)
    tensors.append(("eval.out7", out[7].detach().clone()))
    return tensors


def main():
    for name, width in (("small_net", 4), ("small_net_wide", 16)):
        seed_torch(0)
        x = f32(torch.randn(BATCH, CHANNELS, SIZE, SIZE, dtype=DT))
        labels = torch.randint(0, CLASSES, (BATCH,))
        tensors = compute(x, labels, make_params(width), make_stats(width))
        write_fixture(name, CFG.format(width=width, cat=2 + width), tensors)


if __name__ == "__main__":
    main()
