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

from bench_torch import CfgNet, parse_cfg


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
