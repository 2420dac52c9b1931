#!/usr/bin/python3
"""PyTorch peer for `cdl bench`: builds the net a cdl cfg describes and times the same
training steps (SGD with momentum and weight decay, BN in train mode) on random data.

Run with Debian's /usr/bin/python3 (python3-torch). Prints one JSON line:
{"images_per_s": ..., "ms_per_step": ..., "batch": ..., "threads": ..., "torch": ...}
"""
import argparse
import json
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

LEAKY_SLOPE = 0.1


def parse_cfg(path):
    """The INI subset our cfgs use: a list of (section name, {key: value})."""
    sections = []
    with open(path) as f:
        for lineno, raw in enumerate(f, 1):
            line = raw.split("#", 1)[0].split(";", 1)[0].strip()
            if not line:
                continue
            if line.startswith("["):
                if not line.endswith("]"):
                    sys.exit(f"bench_torch: {path}:{lineno}: bad section header '{line}'")
                sections.append((line[1:-1].strip(), {}))
            elif "=" in line and sections:
                key, value = line.split("=", 1)
                sections[-1][1][key.strip()] = value.strip()
            else:
                sys.exit(f"bench_torch: {path}:{lineno}: expected [section] or key=value")
    if not sections or sections[0][0] not in ("net", "network"):
        sys.exit(f"bench_torch: {path}: the first section must be [net]")
    return sections


def activation(name):
    if name == "leaky":
        return nn.LeakyReLU(LEAKY_SLOPE)
    if name == "relu":
        return nn.ReLU()
    if name == "logistic":
        return nn.Sigmoid()
    if name == "tanh":
        return nn.Tanh()
    if name == "linear":
        return nn.Identity()
    sys.exit(f"bench_torch: unsupported activation '{name}'")


class DarknetMaxPool(nn.Module):
    """darknet's maxpool: out = (h + padding - size) / stride + 1, windows start at
    i * stride - padding // 2, positions outside the input count as -inf."""

    def __init__(self, size, stride, padding):
        super().__init__()
        before, after = padding // 2, padding - padding // 2
        if before == after and before <= size // 2:
            self.pad = None
            self.pool = nn.MaxPool2d(size, stride, padding=before)
        else:
            self.pad = (before, after, before, after)
            self.pool = nn.MaxPool2d(size, stride)

    def forward(self, x):
        if self.pad is not None:
            x = F.pad(x, self.pad, value=float("-inf"))
        return self.pool(x)


def build(sections, bn_momentum=0.1, bn_eps=1e-5):
    """Returns (model, input shape (c, h, w), output size, hyper dict, decayed weights)."""
    net = sections[0][1]
    c, h, w = int(net.get("channels", 0)), int(net.get("height", 0)), int(net.get("width", 0))
    hyper = {
        "batch": int(net.get("batch", 1)),
        "learning_rate": float(net.get("learning_rate", 0.001)),
        "momentum": float(net.get("momentum", 0.9)),
        "decay": float(net.get("decay", 0.0001)),
    }
    bn_momentum = float(net.get("bn_momentum", bn_momentum))
    bn_eps = float(net.get("bn_eps", bn_eps))
    in_shape = (c, h, w)
    layers, decayed = [], []
    for name, s in sections[1:]:
        if name in ("convolutional", "conv"):
            filters, size = int(s["filters"]), int(s.get("size", 1))
            stride, groups = int(s.get("stride", 1)), int(s.get("groups", 1))
            pad = int(s.get("pad", 0))
            padding = int(s.get("padding", size // 2 if pad else 0))
            bn = int(s.get("batch_normalize", 0))
            conv = nn.Conv2d(c, filters, size, stride, padding, groups=groups, bias=not bn)
            decayed.append(conv.weight)
            layers.append(conv)
            if bn:
                layers.append(nn.BatchNorm2d(filters, eps=bn_eps, momentum=bn_momentum))
            layers.append(activation(s.get("activation", "logistic")))
            c = filters
            h = (h + 2 * padding - size) // stride + 1
            w = (w + 2 * padding - size) // stride + 1
        elif name in ("maxpool", "max"):
            stride = int(s.get("stride", 1))
            size = int(s.get("size", stride))
            padding = int(s.get("padding", size - 1))
            layers.append(DarknetMaxPool(size, stride, padding))
            h = (h + padding - size) // stride + 1
            w = (w + padding - size) // stride + 1
        elif name in ("avgpool", "avg"):
            layers.append(nn.AdaptiveAvgPool2d(1))
            h = w = 1
        elif name in ("connected", "conn"):
            outputs = int(s["output"])
            bn = int(s.get("batch_normalize", 0))
            layers.append(nn.Flatten())
            fc = nn.Linear(c * h * w, outputs, bias=not bn)
            decayed.append(fc.weight)
            layers.append(fc)
            if bn:
                layers.append(nn.BatchNorm1d(outputs, eps=bn_eps, momentum=bn_momentum))
            layers.append(activation(s.get("activation", "logistic")))
            c, h, w = outputs, 1, 1
        elif name == "dropout":
            layers.append(nn.Dropout(float(s.get("probability", 0.5))))
        elif name == "softmax":
            pass  # CrossEntropyLoss applies log-softmax to the logits
        else:
            sys.exit(f"bench_torch: unsupported section [{name}]")
    layers.append(nn.Flatten())
    return nn.Sequential(*layers), in_shape, c * h * w, hyper, decayed


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--cfg", required=True)
    p.add_argument("--batch", type=int, default=0, help="default: the cfg's batch")
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--threads", type=int, default=0, help="default: torch's choice")
    args = p.parse_args()
    # Interop threads can only be set before any parallel work starts.
    torch.set_num_interop_threads(1)
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    torch.manual_seed(1)

    model, (c, h, w), classes, hyper, decayed = build(parse_cfg(args.cfg))
    batch = args.batch or hyper["batch"]
    decayed_ids = {id(t) for t in decayed}
    groups = [
        {"params": decayed, "weight_decay": hyper["decay"]},
        {"params": [t for t in model.parameters() if id(t) not in decayed_ids],
         "weight_decay": 0.0},
    ]
    opt = torch.optim.SGD(groups, lr=hyper["learning_rate"], momentum=hyper["momentum"])
    loss_fn = nn.CrossEntropyLoss()
    model.train()
    x = torch.randn(batch, c, h, w)
    labels = torch.randint(0, classes, (batch,))

    def step():
        opt.zero_grad(set_to_none=False)
        loss = loss_fn(model(x), labels)
        loss.backward()
        opt.step()

    for _ in range(args.warmup):
        step()
    start = time.perf_counter()
    for _ in range(args.steps):
        step()
    elapsed_s = time.perf_counter() - start
    print(json.dumps({
        "images_per_s": batch * args.steps / elapsed_s,
        "ms_per_step": 1e3 * elapsed_s / args.steps,
        "batch": batch,
        "threads": torch.get_num_threads(),
        "torch": torch.__version__,
    }))


if __name__ == "__main__":
    main()
