"""Checks that a torchvision-layout cfg of the model zoo computes torchvision's network.

Usage (Debian's python3, which has torch and torchvision):
    /usr/bin/python3 scripts/zoo_vs_torchvision.py CDL CFG [--seed S]

CFG is one of cfg/resnet18.cfg, resnet34, resnet50, resnet18_cifar, resnet34_cifar, vgg16,
mobilenetv2, mobilenet_v3_small, mobilenet_v3_large, efficientnet_b0, shufflenet_v2_x1_0,
regnet_y_400mf, densenet121, inception_v3 (picked by file name). The script
1. copies the cfg with a [net] of its input size alone (no recipe, no preprocessing),
   writes the parameters initialised from --seed with `CDL export npy` and loads them, in
   layer order, into the matching torchvision model (convolutions with the batch norm that
   follows each, squeeze-excitation's convolutions with their biases, then the linear layers,
   in the order torchvision defines its modules; DenseNet's batch norms that no convolution
   precedes, cdl's [batchnorm] layers, take torchvision's BatchNorm2d modules in order too);
   the CIFAR variants get a 3x3 stride-1 stem conv and no max pooling;
2. writes a random RGB PNG of the net's size, dimmed until torchvision's largest logit is
   about 4 (random weights grow activations with depth; a saturated softmax hides
   differences), and runs `CDL predict CFG IMAGE --top ALL --json --seed S`;
3. runs the torchvision model (eval mode) on the same pixels / 255 and compares its
   softmax with cdl's probabilities: each must agree to 1e-3 relative (float32 sums in
   two orders through up to 53 layers give ~1e-5; a misplaced stride, activation or
   shortcut changes them by far more).
Prints "NAME: N parameters, probabilities MIN..MAX, max relative difference X"; exits 1 on
a mismatch.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch
import torchvision
from PIL import Image

TOLERANCE = 1e-3


def cifar(model):
    model.conv1 = torch.nn.Conv2d(3, 64, 3, 1, 1, bias=False)
    model.maxpool = torch.nn.Identity()
    return model


MODELS = {
    "resnet18": lambda: torchvision.models.resnet18(),
    "resnet34": lambda: torchvision.models.resnet34(),
    "resnet50": lambda: torchvision.models.resnet50(),
    "resnet18_cifar": lambda: cifar(torchvision.models.resnet18(num_classes=10)),
    "resnet34_cifar": lambda: cifar(torchvision.models.resnet34(num_classes=10)),
    "vgg16": lambda: torchvision.models.vgg16(),
    "mobilenetv2": lambda: torchvision.models.mobilenet_v2(),
    "mobilenet_v3_small": lambda: torchvision.models.mobilenet_v3_small(),
    "mobilenet_v3_large": lambda: torchvision.models.mobilenet_v3_large(),
    "efficientnet_b0": lambda: torchvision.models.efficientnet_b0(),
    "shufflenet_v2_x1_0": lambda: torchvision.models.shufflenet_v2_x1_0(),
    "regnet_y_400mf": lambda: torchvision.models.regnet_y_400mf(),
    "densenet121": lambda: torchvision.models.densenet121(),
    # the default model: aux_logits=True (its AuxLogits modules, between Mixed_6e and Mixed_7a,
    # take the cfg's auxiliary layers in order; eval mode does not run them), transform_input=False
    "inception_v3": lambda: torchvision.models.inception_v3(init_weights=False),
}


def cdl_layers(npy_dir):
    """[{tensor name: array}] of the layers with tensors, in order, from `cdl export npy`'s
    layerN.NAME.npy files."""
    layers = {}
    for name in os.listdir(npy_dir):
        index, tensor = name[len("layer"):-len(".npy")].split(".", 1)
        layers.setdefault(int(index), {})[tensor] = np.load(os.path.join(npy_dir, name))
    return [layers[i] for i in sorted(layers)]


def copy_norm(bn, t):
    """A cdl batch norm's tensors into BatchNorm2d bn."""
    bn.weight.copy_(torch.from_numpy(t["scales"]))
    bn.bias.copy_(torch.from_numpy(t["biases"]))
    bn.running_mean.copy_(torch.from_numpy(t["rolling_mean"]))
    bn.running_var.copy_(torch.from_numpy(t["rolling_variance"]))


def load_in_order(model, layers):
    """Copies cdl's layers with tensors, in order, into model's Conv2d, Linear and BatchNorm2d
    modules in their order: a convolution with batch norm takes a Conv2d and the BatchNorm2d
    after it, a [batchnorm] layer a BatchNorm2d of its own (DenseNet's pre-activations)."""
    kinds = (torch.nn.Conv2d, torch.nn.Linear, torch.nn.BatchNorm2d)
    modules = iter([m for m in model.modules() if isinstance(m, kinds)])
    with torch.no_grad():
        for i, t in enumerate(layers):
            m = next(modules, None)
            if "weights" in t:
                if not isinstance(m, (torch.nn.Conv2d, torch.nn.Linear)) or \
                        tuple(m.weight.shape) != t["weights"].shape:
                    sys.exit(f"layer {i}: cdl weights {t['weights'].shape}, torchvision {m}")
                m.weight.copy_(torch.from_numpy(t["weights"]))
                if "scales" in t:
                    m = next(modules, None)
                elif ("biases" in t) != (m.bias is not None):
                    sys.exit(f"layer {i}: the bias of cdl's convolution is not torchvision's")
                elif "biases" in t:
                    m.bias.copy_(torch.from_numpy(t["biases"]))
                    continue
                else:
                    continue
            if not isinstance(m, torch.nn.BatchNorm2d) or m.weight.shape != t["scales"].shape:
                sys.exit(f"layer {i}: cdl's batch norm of {t['scales'].shape}, torchvision {m}")
            copy_norm(m, t)
    if next(modules, None) is not None:
        sys.exit("torchvision has more modules with tensors than cdl has layers")


def load(model, layers):
    """Copies cdl's weighted layers, in order, into model's Conv2d(+BatchNorm2d) and Linear."""
    layers = [t for t in layers if "weights" in t]
    modules = [m for m in model.modules() if isinstance(m, (torch.nn.Conv2d, torch.nn.Linear))]
    norms = {}
    previous = None
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            norms[previous] = m
        elif isinstance(m, (torch.nn.Conv2d, torch.nn.Linear)):
            previous = m
    if len(modules) != len(layers):
        sys.exit(f"cdl has {len(layers)} weighted layers, torchvision {len(modules)}")
    for i, (m, t) in enumerate(zip(modules, layers)):
        if tuple(m.weight.shape) != t["weights"].shape:
            sys.exit(f"layer {i}: cdl weights {t['weights'].shape}, torchvision {tuple(m.weight.shape)}")
        with torch.no_grad():
            m.weight.copy_(torch.from_numpy(t["weights"]))
            bn = norms.get(m)
            if bn is not None:
                copy_norm(bn, t)
            elif m.bias is not None:
                m.bias.copy_(torch.from_numpy(t["biases"]))
            elif "biases" in t:
                sys.exit(f"layer {i}: cdl has biases, torchvision has neither bias nor batch norm")


def layers_only(cfg, path):
    """Writes cfg to path with a [net] of its width, height, channels and bn_eps alone: the
    same layers, none of the recipe, and no input preprocessing (mean/std, center_crop) in
    `cdl predict`. Without the mean shift the net (beta 0, unit running statistics) is
    positively homogeneous, so darker images give proportionally smaller logits."""
    with open(cfg) as f:
        lines = f.readlines()
    first_layer = [i for i, line in enumerate(lines) if line.startswith("[")][1]
    kept = ("width", "height", "channels", "bn_eps")
    net = [line for line in lines[:first_layer] if line.split("=")[0].strip() in kept]
    with open(path, "w") as f:
        f.writelines(["[net]\n"] + net + lines[first_layer:])


def random_image(path, h, w, seed, brightest):
    """A random RGB PNG with values 0..brightest; returns its pixels / 255 as [1, 3, h, w]."""
    pixels = np.random.default_rng(seed).integers(0, brightest + 1, (h, w, 3), dtype=np.uint8)
    Image.fromarray(pixels, "RGB").save(path)
    return torch.from_numpy(pixels.astype(np.float32) / 255.0).permute(2, 0, 1)[None]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("cdl")
    parser.add_argument("cfg")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    name = os.path.splitext(os.path.basename(args.cfg))[0]
    if name not in MODELS:
        sys.exit(f"{name}: no torchvision counterpart (one of {', '.join(MODELS)})")
    torch.manual_seed(0)
    model = MODELS[name]().eval()
    seed = str(args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        cfg = os.path.join(tmp, name + ".cfg")
        layers_only(args.cfg, cfg)
        npy = os.path.join(tmp, "npy")
        subprocess.run([args.cdl, "export", "npy", cfg, npy, "--seed", seed], check=True,
                       stdout=subprocess.DEVNULL)
        layers = cdl_layers(npy)
        if any("weights" not in t for t in layers):
            load_in_order(model, layers)
        else:
            load(model, layers)
        info = json.loads(subprocess.run([args.cdl, "info", cfg, "--json"], check=True,
                                         capture_output=True, text=True).stdout)
        _, h, w = info["input"]
        image = os.path.join(tmp, "image.png")
        # Random weights grow activations with depth and saturate the softmax: dim the
        # image until the largest logit is about 4, so that every probability counts.
        with torch.no_grad():
            largest = model(random_image(image, h, w, args.seed, 255)).abs().max().item()
        x = random_image(image, h, w, args.seed, max(1, min(255, int(255 * 4 / largest))))
        out = subprocess.run([args.cdl, "predict", cfg, image, "--top", "100000", "--json",
                              "--seed", seed], check=True, capture_output=True, text=True).stdout
    top = json.loads(out)[0]["top"]
    cdl_probs = np.zeros(len(top))
    for entry in top:
        cdl_probs[entry["index"]] = entry["probability"]
    with torch.no_grad():
        torch_probs = torch.softmax(model(x), dim=1)[0].double().numpy()
    if torch_probs.shape != cdl_probs.shape:
        sys.exit(f"cdl outputs {cdl_probs.shape[0]} classes, torchvision {torch_probs.shape[0]}")
    rel = np.abs(torch_probs - cdl_probs) / torch_probs
    params = sum(p.numel() for p in model.parameters())
    print(f"{name}: {params} parameters, probabilities {torch_probs.min():.2e}..{torch_probs.max():.2e}, "
          f"max relative difference {rel.max():.2e}")
    if not rel.max() <= TOLERANCE:
        sys.exit(f"{name}: cdl's probabilities differ from torchvision's by more than {TOLERANCE}")


if __name__ == "__main__":
    main()
