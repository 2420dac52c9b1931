"""Writes the small ONNX models of tests/cli/import.bats's import cases (tests/ref/onnx/).

Usage (Debian's /usr/bin/python3, which has torch and onnx):
    /usr/bin/python3 scripts/ref/make_onnx_import_cases.py [OUTDIR]   # default tests/ref/onnx

Each is a torch module with weights from torch.manual_seed(0), exported by torch.onnx.export
(opset 13 unless said, fixed shapes, constants folded), on a small input:
  norm_c11, norm_1c11   (x - mean) / std with constants shaped [3,1,1] and [1,3,1,1], then a
                        convolution and a linear layer: per-channel, imported as [net] mean/std;
  norm_3, norm_13, norm_1113, norm_31
                        the same with constants shaped [3], [1,3], [1,1,1,3] (on a 5x3 input:
                        by ONNX's numpy broadcasting they vary along W) and [3,1] (a 3x5 input:
                        along H): refused;
  reduce18              a convolution, x.mean((2, 3)) and a linear layer, moved to opset 18,
                        where ReduceMean takes its axes as an int64 input, not an attribute
                        (torch 1.13 exports up to opset 17; the move changes only that node);
  reshape_b2            a fixed batch of 2: a convolution, x.reshape(2, -1) and a linear layer;
  reshape_b2_1          the same batch reshaped to [1, -1] (the two samples in one row): refused;
  pools                 a convolution, a 3x3/1 average padded by 1 (counting the padding), a
                        2x2/2 average and a linear layer: AveragePool of windows;
  padded                a convolution, F.pad (left 1, right 2, bottom 3, value 0.5) and a
                        linear layer: the pads as folded int64 arithmetic, a Pad;
  vit                   torchvision's VisionTransformer on 8x8 images, 4x4 patches, one block of 2
                        heads over 8 features, every parameter random (its class token, head,
                        layer norms and attention biases start at zero or the identity);
  vit11                 the same at opset 11 (Softmax over an axis that flattens the rest);
  vit_masked            patches as vit's and one nn.MultiheadAttention over them with a causal
                        attn_mask: refused (the mask's Add).
None ends in a softmax: `cdl predict` reports their outputs as logits.
"""

import os
import sys

import onnx
import torch
from onnx import helper, numpy_helper


class Net(torch.nn.Module):
    """Optional normalisation, conv 3->2 (3x3, stride 2), relu, a reduction, linear -> 5."""

    def __init__(self, features, norm_shape=None, reduce=None):
        super().__init__()
        self.norm_shape, self.reduce = norm_shape, reduce
        self.conv = torch.nn.Conv2d(3, 2, 3, stride=2, padding=1)
        self.fc = torch.nn.Linear(features, 5)
        self.mean = torch.tensor([0.485, 0.456, 0.406])
        self.std = torch.tensor([0.229, 0.224, 0.225])

    def forward(self, x):
        if self.norm_shape is not None:
            x = (x - self.mean.reshape(self.norm_shape)) / self.std.reshape(self.norm_shape)
        x = torch.relu(self.conv(x))
        if self.reduce == "mean":
            x = x.mean((2, 3))
        elif self.reduce is not None:
            x = x.reshape(*self.reduce)
        else:
            x = torch.flatten(x, 1)
        return self.fc(x)


class Pools(torch.nn.Module):
    """Conv 3->2 (3x3, stride 1, no padding) to 6x6, a 3x3/1 average padded by 1
    (count_include_pad, torch's default), a 2x2/2 average, linear -> 5."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 2, 3)
        self.fc = torch.nn.Linear(18, 5)

    def forward(self, x):
        x = torch.nn.functional.avg_pool2d(self.conv(x), 3, stride=1, padding=1)
        x = torch.nn.functional.avg_pool2d(x, 2)
        return self.fc(torch.flatten(x, 1))


class Padded(torch.nn.Module):
    """Conv 3->2 (3x3, stride 2) to 3x3, F.pad (left 1, right 2, bottom 3, value 0.5) to 6x6,
    linear -> 5: torch writes the pads as int64 arithmetic (ConstantOfShape, Concat, Reshape,
    a backwards Slice, Transpose, Cast) feeding the Pad."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 2, 3, stride=2, padding=1)
        self.fc = torch.nn.Linear(72, 5)

    def forward(self, x):
        x = torch.nn.functional.pad(self.conv(x), (1, 2, 0, 3), value=0.5)
        return self.fc(torch.flatten(x, 1))


def random_vit():
    """torchvision's ViT, small, with every parameter random."""
    import torchvision
    net = torchvision.models.VisionTransformer(image_size=8, patch_size=4, num_layers=1,
                                              num_heads=2, hidden_dim=8, mlp_dim=16,
                                              num_classes=5)
    with torch.no_grad():
        for p in net.parameters():
            p.uniform_(-0.5, 0.5)
    return net


class MaskedAttention(torch.nn.Module):
    """Conv 3->8 (4x4 patches of an 8x8 image) to 4 token rows plus a position embedding, causal
    self-attention over them (2 heads; torch writes the mask as an Add after a Mul by 1), the mean of the rows, linear -> 5."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 4, stride=4)
        self.position = torch.nn.Parameter(torch.randn(1, 4, 8))
        self.attention = torch.nn.MultiheadAttention(8, 2, batch_first=True)
        self.fc = torch.nn.Linear(8, 5)

    def forward(self, x):
        x = self.conv(x).reshape(x.shape[0], 8, 4).permute(0, 2, 1) + self.position
        mask = torch.triu(torch.full((4, 4), float("-inf")), diagonal=1)
        x = self.attention(x, x, x, attn_mask=mask, need_weights=False)[0]
        return self.fc(x.mean(1))


def export(path, net, shape, opset=13):
    net.eval()
    torch.onnx.export(net, torch.zeros(*shape), path, opset_version=opset, input_names=["input"],
                      output_names=["output"], do_constant_folding=True)


def to_opset18(path):
    """ReduceMean's axes attribute becomes an int64 initializer input; the opset becomes 18."""
    model = onnx.load(path)
    for node in model.graph.node:
        if node.op_type == "ReduceMean":
            axes = next(a for a in node.attribute if a.name == "axes")
            name = node.name + "_axes"
            model.graph.initializer.append(numpy_helper.from_array(
                torch.tensor(list(axes.ints), dtype=torch.int64).numpy(), name))
            node.input.append(name)
            node.attribute.remove(axes)
    model.opset_import[0].version = 18
    onnx.save(model, path)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "ref", "onnx")
    os.makedirs(out, exist_ok=True)
    cases = {  # name: (input shape, features after the conv, normalisation shape, reduction)
        "norm_c11": ((1, 3, 6, 6), 18, (3, 1, 1), None),
        "norm_1c11": ((1, 3, 6, 6), 18, (1, 3, 1, 1), None),
        "norm_3": ((1, 3, 5, 3), 12, (3,), None),
        "norm_13": ((1, 3, 5, 3), 12, (1, 3), None),
        "norm_1113": ((1, 3, 5, 3), 12, (1, 1, 1, 3), None),
        "norm_31": ((1, 3, 3, 5), 12, (3, 1), None),
        "reduce18": ((1, 3, 6, 6), 2, None, "mean"),
        "reshape_b2": ((2, 3, 6, 6), 18, None, (2, -1)),
        "reshape_b2_1": ((2, 3, 6, 6), 36, None, (1, -1)),
    }
    for name, (shape, features, norm_shape, reduce) in cases.items():
        torch.manual_seed(0)
        path = os.path.join(out, name + ".onnx")
        export(path, Net(features, norm_shape, reduce), shape)
        if name == "reduce18":
            to_opset18(path)
        print(f"{path}: {os.path.getsize(path)} bytes")
    torch.manual_seed(0)
    path = os.path.join(out, "pools.onnx")
    export(path, Pools(), (1, 3, 8, 8))
    print(f"{path}: {os.path.getsize(path)} bytes")
    torch.manual_seed(0)
    path = os.path.join(out, "padded.onnx")
    export(path, Padded(), (1, 3, 6, 6))
    print(f"{path}: {os.path.getsize(path)} bytes")
    for name, make, opset in (("vit", random_vit, 13), ("vit11", random_vit, 11),
                              ("vit_masked", MaskedAttention, 13)):
        torch.manual_seed(0)
        path = os.path.join(out, name + ".onnx")
        export(path, make(), (1, 3, 8, 8), opset)
        print(f"{path}: {os.path.getsize(path)} bytes")


if __name__ == "__main__":
    main()
