#!/usr/bin/python3
"""PyTorch peer for `cdl bench`: builds the net a cdl cfg describes (convolutional,
connected, batchnorm, maxpool, avgpool (global or windowed), upsample, dropout, route, shortcut,
softmax: the image cfgs of cfg/ they make up; the zoo cfgs of TORCHVISION_CFGS, whose other
layers it does not build, are torchvision's model of the cfg's name, which they equal:
scripts/zoo_vs_torchvision.py) and times the same training steps (SGD with momentum and weight decay, BN in train
mode) or, with --inference, forwards without gradients, on random data; --bf16 runs the
forwards (and so the backwards) under torch.autocast("cpu", torch.bfloat16), cdl's
--precision bf16; --compile runs the model through torch.compile (PyTorch 2; the warm-up
steps include the compilation).

Run with Debian's /usr/bin/python3 (python3-torch) or any python with torch (scripts/
torch-venv.sh). Prints one JSON line:
{"images_per_s": ..., "ms_per_step": ..., "batch": ..., "threads": ..., "inference": ...,
"bf16": ..., "torch": ...}; --params prints the parameter count (equal to `cdl info`'s) instead.
"""
import argparse
import json
import os
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
    if name == "relu6":
        return nn.ReLU6()
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


class Resample(nn.Module):
    """[upsample]: nearest upsampling by stride times scale, or with a negative stride the sum
    of each stride x stride window times scale (an average pool times scale * stride^2)."""

    def __init__(self, stride, scale):
        super().__init__()
        self.stride, self.scale = stride, scale

    def forward(self, x):
        if self.stride < 0:
            s = -self.stride
            return F.avg_pool2d(x, s) * (self.scale * s * s)
        return F.interpolate(x, scale_factor=self.stride, mode="nearest") * self.scale


ALIASES = {"conv": "convolutional", "max": "maxpool", "avg": "avgpool", "conn": "connected"}


def per_axis(value):
    """A convolution key's (height, width): "3" gives (3, 3), "1,7" gives (1, 7)."""
    v = [int(x) for x in str(value).split(",")]
    return (v[0], v[-1])


# Zoo cfgs timed as torchvision's model of their name (same layers and parameter count).
TORCHVISION_CFGS = ("efficientnet_b0", "mobilenet_v3_small", "mobilenet_v3_large", "convnext_tiny",
                    "vit_b_16", "shufflenet_v2_x1_0", "regnet_y_400mf")


class TorchvisionNet(nn.Module):
    """torchvision.models.NAME() with CfgNet's attributes: input_shape from the cfg's [net],
    1000 classes, weight decay on the weights of two or more dimensions."""

    def __init__(self, name, net):
        super().__init__()
        import torchvision

        self.model = getattr(torchvision.models, name)()
        self.input_shape = (int(net["channels"]), int(net["height"]), int(net["width"]))
        self.classes = 1000
        self.decayed = [t for t in self.model.parameters() if t.dim() > 1]

    def forward(self, x):
        return self.model(x)


def build_model(cfg):
    """The PyTorch net of a cdl cfg: TorchvisionNet for TORCHVISION_CFGS, else CfgNet."""
    sections = parse_cfg(cfg)
    name = os.path.splitext(os.path.basename(cfg))[0]
    if name in TORCHVISION_CFGS:
        return TorchvisionNet(name, sections[0][1])
    return CfgNet(sections)


class CfgNet(nn.Module):
    """The layers of a cdl cfg as a graph: layer i reads layer i-1, or, for [route] and
    [shortcut], the layers its keys name (negative indices are relative). Initialised as
    cdl: convolutions N(0, 2/fan_in), connected U(+-1/sqrt(fan_in)), batch norm 1 and 0;
    weight decay applies to self.decayed (convolution and connected weights) only."""

    def __init__(self, sections):
        super().__init__()
        net = sections[0][1]
        shapes = []  # output (c, h, w) per layer
        c, h, w = int(net["channels"]), int(net["height"]), int(net["width"])
        self.input_shape = (c, h, w)
        self.body = nn.ModuleList()
        self.reads = []  # per layer: list of layer indices (-1: the net input)
        self.kinds = []
        self.scales = {}  # [shortcut] index: (alpha, beta)
        self.decayed = []
        bn_momentum = float(net.get("bn_momentum", 0.1))
        bn_eps = float(net.get("bn_eps", 1e-5))
        for i, (name, s) in enumerate(sections[1:]):

            def absolute(v):
                v = int(v)
                return i + v if v < 0 else v

            name = ALIASES.get(name, name)
            reads, kind = [i - 1], name
            if name == "convolutional":
                filters, size = int(s["filters"]), per_axis(s.get("size", 1))
                stride, groups = per_axis(s.get("stride", 1)), int(s.get("groups", 1))
                if int(s.get("pad", 0)):
                    padding = (size[0] // 2, size[1] // 2)
                else:
                    padding = per_axis(s.get("padding", 0))
                bn = int(s.get("batch_normalize", 0))
                bias = not bn and int(s.get("bias", 1))
                conv = nn.Conv2d(c, filters, size, stride, padding, groups=groups, bias=bias)
                fan_in = c // groups * size[0] * size[1]
                nn.init.normal_(conv.weight, 0.0, (2.0 / fan_in) ** 0.5)
                if bias:
                    nn.init.zeros_(conv.bias)
                self.decayed.append(conv.weight)
                parts = [conv]
                if bn:
                    parts.append(nn.BatchNorm2d(filters, eps=bn_eps, momentum=bn_momentum))
                parts.append(activation(s.get("activation", "logistic")))
                module = nn.Sequential(*parts)
                c = filters
                h = (h + 2 * padding[0] - size[0]) // stride[0] + 1
                w = (w + 2 * padding[1] - size[1]) // stride[1] + 1
            elif name == "maxpool":
                stride = int(s.get("stride", 1))
                size = int(s.get("size", stride))
                padding = int(s.get("padding", size - 1))
                module = DarknetMaxPool(size, stride, padding)
                h = (h + padding - size) // stride + 1
                w = (w + padding - size) // stride + 1
            elif name == "avgpool" and int(s.get("size", 0)):
                size = int(s["size"])
                stride, padding = int(s.get("stride", size)), int(s.get("padding", 0))
                module = nn.AvgPool2d(size, stride, padding, count_include_pad=True)
                h = (h + 2 * padding - size) // stride + 1
                w = (w + 2 * padding - size) // stride + 1
            elif name == "avgpool":
                module = nn.AdaptiveAvgPool2d(1)
                h = w = 1
            elif name == "batchnorm":
                module = nn.Sequential(nn.BatchNorm2d(c, eps=bn_eps, momentum=bn_momentum),
                                       activation(s.get("activation", "linear")))
            elif name == "upsample":
                stride = int(s.get("stride", 2))
                module = Resample(stride, float(s.get("scale", 1)))
                h, w = (h // -stride, w // -stride) if stride < 0 else (h * stride, w * stride)
            elif name == "connected":
                outputs = int(s["output"])
                bn = int(s.get("batch_normalize", 0))
                fc = nn.Linear(c * h * w, outputs, bias=not bn)  # U(+-1/sqrt(fan_in)), as cdl
                self.decayed.append(fc.weight)
                parts = [nn.Flatten(), fc]
                if bn:
                    parts.append(nn.BatchNorm1d(outputs, eps=bn_eps, momentum=bn_momentum))
                parts.append(activation(s.get("activation", "logistic")))
                module = nn.Sequential(*parts)
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
                    sys.exit(f"bench_torch: layer {i}: [shortcut] of different shapes")
                self.scales[i] = (float(s.get("alpha", 1)), float(s.get("beta", 1)))
                module = activation(s.get("activation", "linear"))
            elif name == "softmax":
                module = nn.Identity()  # cross_entropy applies log-softmax to the logits
            else:
                sys.exit(f"bench_torch: unsupported section [{name}]")
            self.body.append(module)
            self.reads.append(reads)
            self.kinds.append(kind)
            shapes.append((c, h, w))
        self.classes = c * h * w

    def forward(self, x):
        outs = []
        for i, (module, reads, kind) in enumerate(zip(self.body, self.reads, self.kinds)):
            inputs = [outs[j] if j >= 0 else x for j in reads]
            if kind == "route":
                y = torch.cat(inputs, dim=1)
            elif kind == "shortcut":
                alpha, beta = self.scales[i]
                if alpha == 1 and beta == 1:
                    y = module(inputs[0] + inputs[1])
                else:
                    y = module(alpha * inputs[0] + beta * inputs[1])
            else:
                y = module(inputs[0])
            outs.append(y)
        return outs[-1].flatten(1)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--cfg", required=True)
    p.add_argument("--batch", type=int, default=0, help="default: the cfg's batch")
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--threads", type=int, default=0, help="default: torch's choice")
    p.add_argument("--inference", action="store_true",
                   help="time forwards in eval mode without gradients instead")
    p.add_argument("--bf16", action="store_true",
                   help='forwards under torch.autocast("cpu", torch.bfloat16)')
    p.add_argument("--compile", action="store_true",
                   help="run the model through torch.compile (PyTorch 2)")
    p.add_argument("--params", action="store_true",
                   help="print the trainable parameter count (cdl info's) and exit")
    args = p.parse_args()
    # Interop threads can only be set before any parallel work starts.
    torch.set_num_interop_threads(1)
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    torch.manual_seed(1)

    net = parse_cfg(args.cfg)[0][1]
    model = build_model(args.cfg)
    if args.params:
        print(sum(t.numel() for t in model.parameters()))
        return
    batch = args.batch or int(net.get("batch", 1))
    decayed_ids = {id(t) for t in model.decayed}
    groups = [
        {"params": model.decayed, "weight_decay": float(net.get("decay", 0.0001))},
        {"params": [t for t in model.parameters() if id(t) not in decayed_ids],
         "weight_decay": 0.0},
    ]
    opt = torch.optim.SGD(groups, lr=float(net.get("learning_rate", 0.001)),
                          momentum=float(net.get("momentum", 0.9)))
    loss_fn = nn.CrossEntropyLoss()
    x = torch.randn(batch, *model.input_shape)
    if args.inference:  # the inputs of cdl bench --inference and scripts/bench_ort.py
        x = torch.rand(batch, *model.input_shape)
    run = torch.compile(model) if args.compile else model
    labels = torch.randint(0, model.classes, (batch,))

    def autocast():
        return torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.bf16)

    def train_step():
        opt.zero_grad(set_to_none=False)
        with autocast():
            loss = loss_fn(run(x), labels)
        loss.backward()
        opt.step()

    def inference_step():
        with torch.no_grad(), autocast():
            run(x)

    step = inference_step if args.inference else train_step
    model.train(not args.inference)
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
        "inference": args.inference,
        "bf16": args.bf16,
        "compile": args.compile,
        "torch": torch.__version__,
    }))


if __name__ == "__main__":
    main()
