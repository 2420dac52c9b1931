#!/usr/bin/python3
"""PyTorch peer of `cdl train CFG --data cfg/fashion.data`: trains the network a cdl cfg
describes on Fashion-MNIST with the cfg's recipe, for comparing accuracy and wall time.

Run with Debian's /usr/bin/python3 (python3-torch 1.13, python3-numpy):
    /usr/bin/python3 scripts/fashion_resnet_torch.py [--cfg cfg/resnet_fashion.cfg]
        [--data cfg/fashion.data] [--epochs N] [--threads 2] [--seed 1] [--limit N]
        [--params]

Same as cdl: the layers (convolutional with batch norm, maxpool, avgpool, connected,
dropout, route, shortcut, softmax with cross-entropy; darknet's padding rules), the
initialisation distributions (convolutions N(0, 2/fan_in), connected U(+-1/sqrt(fan_in)),
batch norm 1 and 0), SGD with momentum as torch.optim.SGD with the loss averaged over the
batch and weight decay on convolution and connected weights only, the learning rate per
step from [net] (policy constant, steps or poly; burn_in), batches of `batch` images
drawn without replacement each epoch with the last partial batch dropped, pixels / 255,
the cfg's `pad` (zero padding, then a random crop back to size) and `flip` (mirror with
p = 0.5), and an evaluation of the test set after every epoch. The random draws differ.
Prints one line per epoch, "epoch E/N: train loss L, test accuracy A%, S s", then a JSON
line {"accuracy", "epochs", "wall_s", "images_per_s", "threads", "torch"}. --params
prints the trainable parameter count (cdl info's "parameters") and exits.
"""
import argparse
import gzip
import json
import os
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from bench_torch import DarknetMaxPool, activation, parse_cfg


def read_idx(path):
    """An IDX file (gzip or raw) as a numpy array of its declared shape."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    dims = data[3]
    shape = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(data, np.uint8, offset=4 + 4 * dims).reshape(shape)


def read_data(path):
    """{key: value} of a .data file, with relative paths tried from the file's directory."""
    keys = {}
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if "=" in line:
                key, value = line.split("=", 1)
                value = value.strip()
                if not os.path.isabs(value) and not os.path.exists(value):
                    value = os.path.join(os.path.dirname(path), value)
                keys[key.strip()] = value
    return keys


class CfgNet(nn.Module):
    """The layers of a cdl cfg as a graph: layer i reads layer i-1, or, for [route] and
    [shortcut], the layers its keys name (negative indices are relative)."""

    def __init__(self, sections):
        super().__init__()
        net = sections[0][1]
        shapes = []  # output (c, h, w) per layer
        c, h, w = int(net["channels"]), int(net["height"]), int(net["width"])
        self.input_shape = (c, h, w)
        self.body = nn.ModuleList()
        self.reads = []  # per layer: list of layer indices (-1: the net input)
        self.kinds = []
        self.decayed = []
        bn_momentum = float(net.get("bn_momentum", 0.1))
        bn_eps = float(net.get("bn_eps", 1e-5))
        for i, (name, s) in enumerate(sections[1:]):

            def absolute(v):
                v = int(v)
                return i + v if v < 0 else v

            reads, kind = [i - 1], name
            if name == "convolutional":
                filters, size = int(s["filters"]), int(s.get("size", 1))
                stride, groups = int(s.get("stride", 1)), int(s.get("groups", 1))
                padding = size // 2 if int(s.get("pad", 0)) else int(s.get("padding", 0))
                bn = int(s.get("batch_normalize", 0))
                conv = nn.Conv2d(c, filters, size, stride, padding, groups=groups, bias=not bn)
                nn.init.normal_(conv.weight, 0.0, (2.0 / (c // groups * size * size)) ** 0.5)
                if not bn:
                    nn.init.zeros_(conv.bias)
                self.decayed.append(conv.weight)
                parts = [conv]
                if bn:
                    parts.append(nn.BatchNorm2d(filters, eps=bn_eps, momentum=bn_momentum))
                parts.append(activation(s.get("activation", "logistic")))
                module = nn.Sequential(*parts)
                c = filters
                h = (h + 2 * padding - size) // stride + 1
                w = (w + 2 * padding - size) // stride + 1
            elif name == "maxpool":
                stride = int(s.get("stride", 1))
                size = int(s.get("size", stride))
                padding = int(s.get("padding", size - 1))
                module = DarknetMaxPool(size, stride, padding)
                h = (h + padding - size) // stride + 1
                w = (w + padding - size) // stride + 1
            elif name == "avgpool":
                module = nn.AdaptiveAvgPool2d(1)
                h = w = 1
            elif name == "connected":
                outputs = int(s["output"])
                if int(s.get("batch_normalize", 0)):
                    sys.exit("fashion_resnet_torch: [connected] batch_normalize is not supported")
                fc = nn.Linear(c * h * w, outputs)  # torch's init: U(+-1/sqrt(fan_in)), as cdl
                self.decayed.append(fc.weight)
                module = nn.Sequential(nn.Flatten(), fc, activation(s.get("activation", "logistic")))
                c, h, w = outputs, 1, 1
            elif name == "dropout":
                module = nn.Dropout(float(s.get("probability", 0.5)))
            elif name == "route":
                reads = [absolute(v) for v in s["layers"].split(",")]
                c = sum(shapes[j][0] for j in reads)
                h, w = shapes[reads[0]][1:]
                module = nn.Identity()
            elif name == "shortcut":
                reads = [i - 1, absolute(s["from"])]
                if shapes[reads[0]] != shapes[reads[1]]:
                    sys.exit(f"fashion_resnet_torch: layer {i}: [shortcut] of different shapes")
                module = activation(s.get("activation", "linear"))
            elif name == "softmax":
                module = nn.Identity()  # cross_entropy applies log-softmax to the logits
            else:
                sys.exit(f"fashion_resnet_torch: unsupported section [{name}]")
            self.body.append(module)
            self.reads.append(reads)
            self.kinds.append(kind)
            shapes.append((c, h, w))
        self.classes = c * h * w

    def forward(self, x):
        outs = []
        for module, reads, kind in zip(self.body, self.reads, self.kinds):
            inputs = [outs[j] if j >= 0 else x for j in reads]
            if kind == "route":
                y = torch.cat(inputs, dim=1)
            elif kind == "shortcut":
                y = module(inputs[0] + inputs[1])
            else:
                y = module(inputs[0])
            outs.append(y)
        return outs[-1].flatten(1)


def learning_rate(net, t):
    """cdl's rate at step t (0-based): burn_in, then policy constant, steps or poly."""
    rate = float(net.get("learning_rate", 0.001))
    power = float(net.get("power", 4))
    burn_in = int(net.get("burn_in", 0))
    if t < burn_in:
        return rate * (t / burn_in) ** power
    policy = net.get("policy", "constant")
    if policy == "constant":
        return rate
    if policy == "steps":
        steps = [int(v) for v in net["steps"].split(",")]
        scales = [float(v) for v in net["scales"].split(",")]
        for step, scale in zip(steps, scales):
            if step > t:
                break
            rate *= scale
        return rate
    if policy == "poly":
        left = 1.0 - t / int(net["max_batches"])
        return rate * left**power if left > 0 else 0.0
    sys.exit(f"fashion_resnet_torch: unsupported policy '{policy}'")


def augment(x, pad, flip, gen):
    """x [B, C, H, W]: zero padding by pad then a random H x W crop per image; mirrored
    with p = 0.5 per image when flip."""
    b, c, h, w = x.shape
    if pad:
        padded = F.pad(x, (pad, pad, pad, pad))
        oy = torch.randint(0, 2 * pad + 1, (b,), generator=gen)
        ox = torch.randint(0, 2 * pad + 1, (b,), generator=gen)
        rows = (oy[:, None] + torch.arange(h))[:, :, None]  # [B, H, 1]
        cols = (ox[:, None] + torch.arange(w))[:, None, :]  # [B, 1, W]
        x = padded[torch.arange(b)[:, None, None], :, rows, cols].permute(0, 3, 1, 2)
    if flip:
        mirrored = torch.rand(b, generator=gen) < 0.5
        x = torch.where(mirrored[:, None, None, None], x.flip(3), x)
    return x.contiguous()


def accuracy(model, images, labels, batch=1000):
    model.eval()
    correct = 0
    with torch.no_grad():
        for i in range(0, len(images), batch):
            correct += (model(images[i:i + batch]).argmax(1) == labels[i:i + batch]).sum().item()
    model.train()
    return correct / len(images)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--cfg", default=os.path.join(here, "..", "cfg", "resnet_fashion.cfg"))
    p.add_argument("--data", default=os.path.join(here, "..", "cfg", "fashion.data"))
    p.add_argument("--epochs", type=int, default=0, help="default: the cfg's epochs")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--limit", type=int, default=0, help="train on the first N images only")
    p.add_argument("--params", action="store_true", help="print the parameter count and exit")
    args = p.parse_args()
    torch.set_num_interop_threads(1)
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    gen = torch.Generator().manual_seed(args.seed)

    sections = parse_cfg(args.cfg)
    net = sections[0][1]
    model = CfgNet(sections)
    if args.params:
        print(sum(t.numel() for t in model.parameters()))
        return
    if int(net.get("subdivisions", 1)) != 1:
        sys.exit("fashion_resnet_torch: subdivisions must be 1")
    batch, epochs = int(net["batch"]), args.epochs or int(net.get("epochs", 1))
    pad, flip = int(net.get("pad", 0)), int(net.get("flip", 0))
    decayed_ids = {id(t) for t in model.decayed}
    opt = torch.optim.SGD(
        [{"params": model.decayed, "weight_decay": float(net.get("decay", 0.0001))},
         {"params": [t for t in model.parameters() if id(t) not in decayed_ids], "weight_decay": 0.0}],
        lr=0.0, momentum=float(net.get("momentum", 0.9)))

    data = read_data(args.data)
    c, h, w = model.input_shape

    def load(images, labels):
        x = torch.from_numpy(read_idx(data[images]).astype(np.float32) / 255.0)
        return x.reshape(-1, c, h, w), torch.from_numpy(read_idx(data[labels]).astype(np.int64))

    train_x, train_y = load("train", "train_labels")
    if args.limit:
        train_x, train_y = train_x[:args.limit], train_y[:args.limit]
    test_x, test_y = load("valid", "valid_labels")
    steps_per_epoch = len(train_x) // batch
    step, test_accuracy = 0, 0.0
    start = time.perf_counter()
    for epoch in range(epochs):
        order = torch.randperm(len(train_x), generator=gen)
        total_loss = 0.0
        for k in range(steps_per_epoch):
            idx = order[k * batch:(k + 1) * batch]
            x = augment(train_x[idx], pad, flip, gen)
            for group in opt.param_groups:
                group["lr"] = learning_rate(net, step)
            opt.zero_grad(set_to_none=False)
            loss = F.cross_entropy(model(x), train_y[idx])
            loss.backward()
            opt.step()
            total_loss += loss.item()
            step += 1
        test_accuracy = accuracy(model, test_x, test_y)
        print(f"epoch {epoch + 1}/{epochs}: train loss {total_loss / steps_per_epoch:.4f}, "
              f"test accuracy {100 * test_accuracy:.2f}%, {time.perf_counter() - start:.0f} s",
              flush=True)
    wall_s = time.perf_counter() - start
    print(json.dumps({"accuracy": test_accuracy, "epochs": epochs, "wall_s": wall_s,
                      "images_per_s": step * batch / wall_s, "threads": torch.get_num_threads(),
                      "torch": torch.__version__}))


if __name__ == "__main__":
    main()
