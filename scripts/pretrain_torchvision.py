"""Pretrains a torchvision model in PyTorch on some Fashion-MNIST classes and saves its state dict
as safetensors: a real pretrained weights file, made here because none can be downloaded, for
the fine-tuning recipe in docs/interop.md (freeze the backbone, train a new head on other classes).

usage: python3 scripts/pretrain_torchvision.py MODEL OUT.safetensors
           [--classes 0-4] [--size 32] [--epochs 1] [--limit N] [--seed 0] [--threads 2]

Images: Debian's dataset-fashion-mnist train split, those of the given classes (labels renumbered
from 0), prepared as torchvision's pretrained models expect and as the zoo cfgs' [net] prepares
them (center_crop=1, mean and std): resized with PIL's bilinear filter to SIZE*256/224 and
centre-cropped to SIZE, grey copied to 3 channels, / 255, less ImageNet's mean, over its std. SGD with momentum 0.9, learning rate 0.05
cosine-annealed, weight decay 5e-4, batch 64, batch norm in train mode. Prints the training
accuracy of each epoch. The state dict is written through Debian's torch as .npz, then by the
pyenv python3's `safetensors` package (the same two-interpreter split as
scripts/ref/make_torchvision_safetensors.py).
"""
import argparse
import gzip
import os
import subprocess
import sys

import numpy as np

ROOT = "/usr/share/datasets/fashion-mnist"
MEAN, STD = np.array([0.485, 0.456, 0.406]), np.array([0.229, 0.224, 0.225])


def read_idx(path, header_bytes):
    return np.frombuffer(gzip.open(path).read()[header_bytes:], np.uint8)


def class_range(text):
    first, _, last = text.partition("-")
    return list(range(int(first), int(last or first) + 1))


def images(classes, size, limit):
    """[n, 3, size, size] float32, normalised, and [n] labels renumbered 0.. of the classes."""
    from PIL import Image

    pixels = read_idx(f"{ROOT}/train-images-idx3-ubyte.gz", 16).reshape(-1, 28, 28)
    labels = read_idx(f"{ROOT}/train-labels-idx1-ubyte.gz", 8)
    keep = np.flatnonzero(np.isin(labels, classes))[:limit]
    big = round(size * 256 / 224)
    at = (big - size) // 2
    x = np.stack([np.asarray(Image.fromarray(pixels[i], "L").resize((big, big), Image.BILINEAR))
                  [at:at + size, at:at + size] for i in keep]).astype(np.float32) / 255.0
    remap = {c: k for k, c in enumerate(classes)}
    y = np.array([remap[int(labels[i])] for i in keep], np.int64)
    x = (x[:, None] - MEAN[None, :, None, None]) / STD[None, :, None, None]
    return x.astype(np.float32), y


def train(args):
    import torch
    import torchvision

    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    classes = class_range(args.classes)
    x, y = images(classes, args.size, args.limit)
    model = getattr(torchvision.models, args.model)(num_classes=len(classes))
    steps = args.epochs * (len(y) // 64)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=5e-4)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, steps)
    x, y = torch.from_numpy(x), torch.from_numpy(y)
    model.train()
    for epoch in range(args.epochs):
        order, right = torch.randperm(len(y)), 0
        for s in range(len(y) // 64):
            batch = order[s * 64:(s + 1) * 64]
            out = model(x[batch])
            loss = torch.nn.functional.cross_entropy(out, y[batch])
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            right += (out.argmax(1) == y[batch]).sum().item()
        print(f"epoch {epoch + 1}: training accuracy {100.0 * right / (s + 1) / 64:.1f}% "
              f"on {len(y)} images of classes {args.classes}", flush=True)
    np.savez(args.out + ".npz", **{k: v.numpy() for k, v in model.state_dict().items()})


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model")
    parser.add_argument("out")
    parser.add_argument("--classes", default="0-4")
    parser.add_argument("--size", type=int, default=32)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--limit", type=int)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--torch-half", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.torch_half:
        return train(args)
    subprocess.run(["/usr/bin/python3", os.path.abspath(__file__), "--torch-half"] + sys.argv[1:],
                   check=True)
    from safetensors.numpy import save_file

    with np.load(args.out + ".npz") as z:
        tensors = {k: np.ascontiguousarray(z[k]) for k in z.files}
    os.remove(args.out + ".npz")
    save_file(tensors, args.out, metadata={"format": "pt"})
    print(f"{args.out}: {len(tensors)} tensors")


if __name__ == "__main__":
    main()
