"""Writes torchvision models with seeded random weights as ONNX files, for `cdl import` tests.

Usage (Debian's /usr/bin/python3, which has torch and torchvision):
    /usr/bin/python3 scripts/ref/make_torchvision_onnx.py OUTDIR MODEL[:SIZE][@OPSET] ...

For each MODEL (a torchvision.models constructor name: resnet18, mobilenet_v2, vgg11, ...):
OUTDIR/MODEL.onnx (OUTDIR/MODEL-opsetOPSET.onnx when OPSET is given) from torch.onnx.export
(opset OPSET, default 13, batch 1, eval mode, so torch folds batch
norm into the convolutions) of the model built with weights=None after torch.manual_seed(0),
its batch-norm running statistics drawn at random too (so that they are not the identity; and a
ViT's class token, head, layer norms and attention biases, which torchvision starts at zero or
the identity),
on a SIZE x SIZE RGB input (default 64); and OUTDIR/MODEL.png, random pixels of that size.
The models are too large to commit, so the tests write them into a temporary directory.
A model that torch cannot export is reported on stderr and skipped (exit 1 at the end).
"""

import sys

import numpy as np
import torch
import torchvision
from PIL import Image


def export(name, size, opset, out_dir):
    torch.manual_seed(0)
    model = getattr(torchvision.models, name)(weights=None)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 1.5)
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.5, 0.5)
        if isinstance(model, torchvision.models.VisionTransformer):
            # torchvision starts the class token and the head at zero (the output would be 0),
            # the layer norms at the identity and the attention's biases at zero
            model.class_token.normal_(0, 1)
            model.heads.head.weight.normal_(0, 0.05)
            model.heads.head.bias.uniform_(-0.5, 0.5)
            for m in model.modules():
                if isinstance(m, torch.nn.LayerNorm):
                    m.weight.uniform_(0.5, 1.5)
                    m.bias.uniform_(-0.5, 0.5)
                if isinstance(m, torch.nn.MultiheadAttention):
                    m.in_proj_bias.uniform_(-0.5, 0.5)
                    m.out_proj.bias.uniform_(-0.5, 0.5)
    model.eval()
    x = torch.zeros(1, 3, size, size)
    path = f"{out_dir}/{name}-opset{opset}.onnx" if opset else f"{out_dir}/{name}.onnx"
    torch.onnx.export(model, x, path, opset_version=opset or 13,
                      input_names=["input"], output_names=["output"])
    pixels = np.random.default_rng(size).integers(0, 256, (size, size, 3), dtype=np.uint8)
    Image.fromarray(pixels, "RGB").save(f"{out_dir}/{name}.png")


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    failed = 0
    for spec in sys.argv[2:]:
        spec, _, opset = spec.partition("@")
        name, _, size = spec.partition(":")
        try:
            export(name, int(size or 64), int(opset or 0), sys.argv[1])
        except Exception as err:  # torch's exporter raises many kinds
            print(f"{name}: torch.onnx.export failed: {err}", file=sys.stderr)
            failed = 1
    sys.exit(failed)


if __name__ == "__main__":
    main()
