"""PyTorch reference fixtures for cdl's optimizers, schedules, clipping and label smoothing.

Usage: /usr/bin/python3 scripts/ref/make_optim_steps.py
(Debian's python3-torch 1.13; writes tests/ref/optim_net.cfg and tests/ref/optim_*.ref
relative to the repository root, which is found from this script's path.)

Every fixture but optim_cosine.ref runs 3 training steps of the small network of
tests/ref/optim_net.cfg (conv+BN+leaky, 1x1 conv with biases, connected, softmax) with one
optimizer setting, in float64 from float32-representable inputs, parameters and
hyper-parameters; stored tensors are rounded to float32. Seeds are fixed and torch runs on one
thread, so running the script twice gives identical bytes. The .ref format is the one of
scripts/ref/make_small_net.py (tests/unit/ref_fixture.h).

Each training fixture holds: input [4][3][6][6], labels [4], the initial tensors
layerI.NAME (parameters and running statistics, cdl's names), the step-1 gradients grad.layerI.NAME
and grad.input, and for K = 1..3 stepK.loss (the loss of step K's forward) and stepK.layerI.NAME
(every tensor after step K's update). The settings of each fixture are the "net." / "LAYER."
overrides of FIXTURES below, applied to optim_net.cfg; tests/unit/test_optim_ref.c applies the
same ones. Weight decay goes to convolution and connected weights only (cdl's flagged tensors),
or to every parameter when decay_bn_bias=1.

optim_cosine.ref holds lr [11]: the rate at steps t = 0..10 of policy=cosine, learning_rate=0.1,
lr_min=0.001, max_batches=10, warmup=3: CosineAnnealingLR(T_max=10, eta_min=0.001)'s rate at
step t times the linear warmup factor min(1, (t+1)/3).
"""

import math
import os

import numpy as np
import torch
import torch.nn.functional as F

from ref_format import fixture_dir, seed_torch, write_cfg, write_ref

CFG = """[net]
batch=4
subdivisions=1
width=6
height=6
channels=3
learning_rate=0.1
momentum=0.9
decay=0.01
policy=constant
bn_momentum=0.1
bn_eps=0.00001

# 0: 4x6x6, batch norm (scales and biases)
[convolutional]
filters=4
size=3
stride=1
pad=1
batch_normalize=1
activation=leaky

# 1: 3x6x6, biases
[convolutional]
filters=3
size=1
stride=1
activation=leaky

# 2
[connected]
output=5
activation=linear

# 3
[softmax]
"""

BATCH, CHANNELS, SIZE, CLASSES = 4, 3, 6, 5
BN_MOMENTUM, BN_EPS = 0.1, 1e-5
LEAKY = 0.1
STEPS = 3
DT = torch.float64


def f32(x):
    """The float32 value nearest x, as cdl reads it from the cfg."""
    return float(np.float32(x))


# name -> (overrides for cdl, torch settings). Keep the overrides in step with
# tests/unit/test_optim_ref.c.
FIXTURES = {
    "optim_adam": (["net.optimizer=adam", "net.learning_rate=0.01", "net.decay=0.01"],
                   dict(kind="adam", lr=0.01, betas=(0.9, 0.999), eps=1e-8, decay=0.01)),
    "optim_adamw": (["net.optimizer=adamw", "net.learning_rate=0.01", "net.decay=0.1",
                     "net.decay_bn_bias=1", "net.beta1=0.8", "net.beta2=0.99", "net.eps=1e-6"],
                    dict(kind="adamw", lr=0.01, betas=(0.8, 0.99), eps=1e-6, decay=0.1,
                         decay_all=True)),
    "optim_nesterov": (["net.nesterov=1"],
                       dict(kind="sgd", lr=0.1, momentum=0.9, decay=0.01, nesterov=True)),
    "optim_clip": (["net.clip_grad_norm=0.5"],
                   dict(kind="sgd", lr=0.1, momentum=0.9, decay=0.01, clip=0.5)),
    "optim_smoothing": (["3.label_smoothing=0.1"],
                        dict(kind="sgd", lr=0.1, momentum=0.9, decay=0.01, smoothing=0.1)),
}


def make_params():
    p = {}
    p["layer0.weights"] = torch.randn(4, 3, 3, 3, dtype=DT) * (2.0 / 27) ** 0.5
    p["layer0.scales"] = torch.rand(4, dtype=DT) + 0.5
    p["layer0.biases"] = torch.randn(4, dtype=DT) * 0.1
    p["layer1.weights"] = torch.randn(3, 4, 1, 1, dtype=DT) * (2.0 / 4) ** 0.5
    p["layer1.biases"] = torch.randn(3, dtype=DT) * 0.1
    p["layer2.weights"] = torch.randn(5, 108, dtype=DT) * (1.0 / 108) ** 0.5
    p["layer2.biases"] = torch.randn(5, dtype=DT) * 0.1
    return {n: t.to(torch.float32).to(DT) for n, t in p.items()}


def make_stats():
    return {"layer0.rolling_mean": torch.zeros(4, dtype=DT),
            "layer0.rolling_variance": torch.ones(4, dtype=DT)}


def logits_of(x, p, s):
    y = F.conv2d(x, p["layer0.weights"], None, stride=1, padding=1)
    y = F.batch_norm(y, s["layer0.rolling_mean"], s["layer0.rolling_variance"],
                     p["layer0.scales"], p["layer0.biases"], training=True,
                     momentum=BN_MOMENTUM, eps=BN_EPS)
    y = F.leaky_relu(y, LEAKY)
    y = F.leaky_relu(F.conv2d(y, p["layer1.weights"], p["layer1.biases"]), LEAKY)
    return F.linear(y.reshape(y.shape[0], -1), p["layer2.weights"], p["layer2.biases"])


def make_optimizer(p, cfg):
    decayed = [t for n, t in p.items() if n.endswith(".weights") or cfg.get("decay_all")]
    others = [t for n, t in p.items() if not (n.endswith(".weights") or cfg.get("decay_all"))]
    groups = [{"params": decayed, "weight_decay": f32(cfg["decay"])},
              {"params": others, "weight_decay": 0.0}]
    lr = f32(cfg["lr"])
    if cfg["kind"] == "sgd":
        return torch.optim.SGD(groups, lr=lr, momentum=f32(cfg["momentum"]), dampening=0,
                               nesterov=cfg.get("nesterov", False))
    betas = tuple(f32(b) for b in cfg["betas"])
    make = torch.optim.Adam if cfg["kind"] == "adam" else torch.optim.AdamW
    return make(groups, lr=lr, betas=betas, eps=f32(cfg["eps"]))


def compute(x, labels, params, stats, cfg):
    """Runs STEPS training steps; returns the (name, tensor) pairs to store, in file order."""
    x = x.detach().clone().requires_grad_(True)
    p = {n: torch.nn.Parameter(t.detach().clone()) for n, t in params.items()}
    s = {n: t.detach().clone() for n, t in stats.items()}
    tensors = [("input", x), ("labels", labels.to(DT))]
    tensors += [(n, t) for n, t in p.items()] + [(n, t) for n, t in s.items()]
    tensors = [(n, t.detach().clone()) for n, t in tensors]
    opt = make_optimizer(p, cfg)
    smoothing = f32(cfg.get("smoothing", 0.0))
    for step in range(1, STEPS + 1):
        loss = F.cross_entropy(logits_of(x, p, s), labels, label_smoothing=smoothing)
        loss.backward()
        tensors.append((f"step{step}.loss", loss.detach().reshape(1).clone()))
        if step == 1:
            tensors += [(f"grad.{n}", t.grad.detach().clone()) for n, t in p.items()]
            tensors.append(("grad.input", x.grad.detach().clone()))
        if "clip" in cfg:
            norm = torch.nn.utils.clip_grad_norm_(list(p.values()), f32(cfg["clip"]))
            assert norm > f32(cfg["clip"]), f"step {step}: the clip does not trigger ({norm})"
        opt.step()
        opt.zero_grad()
        x.grad = None
        tensors += [(f"step{step}.{n}", t.detach().clone()) for n, t in p.items()]
        tensors += [(f"step{step}.{n}", t.clone()) for n, t in s.items()]
    return tensors


def cosine_lrs():
    """policy=cosine with warmup: the rates of steps 0..10 (see the module docstring)."""
    lr, lr_min, span, warmup = f32(0.1), f32(0.001), 10, 3
    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1, dtype=DT))], lr=lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=span, eta_min=lr_min)
    rates = []
    for t in range(span + 1):
        rates.append(opt.param_groups[0]["lr"] * min(1.0, (t + 1) / warmup))
        opt.step()
        sched.step()
    closed = [(lr_min + (lr - lr_min) * (1 + math.cos(math.pi * t / span)) / 2) *
              min(1.0, (t + 1) / warmup) for t in range(span + 1)]
    assert np.allclose(rates, closed, rtol=1e-12), "CosineAnnealingLR left its closed form"
    return [("lr", torch.tensor(rates, dtype=DT))]


def main():
    seed_torch(0)

    x = torch.randn(BATCH, CHANNELS, SIZE, SIZE, dtype=DT).to(torch.float32).to(DT)
    labels = torch.randint(0, CLASSES, (BATCH,))
    params, stats = make_params(), make_stats()
    write_cfg("optim_net", CFG)
    outdir = fixture_dir()
    for name, (_, cfg) in FIXTURES.items():
        write_ref(os.path.join(outdir, name + ".ref"), compute(x, labels, params, stats, cfg))
    write_ref(os.path.join(outdir, "optim_cosine.ref"), cosine_lrs())


if __name__ == "__main__":
    main()
