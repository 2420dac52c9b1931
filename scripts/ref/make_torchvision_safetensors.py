"""torchvision models with random weights as safetensors files, and torchvision's outputs, for
tests/cli/safetensors.bats (the files are tens of MB: written into a temp dir at test time).

Usage (the pyenv python3, which has the `safetensors` package; it runs Debian's /usr/bin/python3,
which has torch and torchvision, for the torch half):
    python3 scripts/ref/make_torchvision_safetensors.py make OUT [--size 64] [--seed 1]
    python3 scripts/ref/make_torchvision_safetensors.py probs CDL_JSON OUT/NAME.probs.json
    python3 scripts/ref/make_torchvision_safetensors.py same A.safetensors B.safetensors
    python3 scripts/ref/make_torchvision_safetensors.py random MODEL FILE.safetensors [--seed 0]
    python3 scripts/ref/make_torchvision_safetensors.py photo OUT PHOTO [NAME ...] [--seed 1]

make: for resnet18, resnet34, resnet50, vgg16 and mobilenet_v2 (cfg/NAME.cfg; vgg16 at 224x224,
whatever --size says, since its classifier takes torchvision's 7x7 features whole):
1. (torch) torch.manual_seed(seed); the model in eval mode with every batch norm's weight and
   bias drawn, and its running mean and variance measured in one train-mode pass over 4 random
   images, the variance + 0.5 (defaults 1, 0, 0, 1 would hide a swap; drawn statistics
   saturate resnet50; a channel dead in that pass would amplify rounding 300x), and
   num_batches_tracked 7 (which cdl ignores); its state dict to OUT/NAME.npz (removed by 2.);
   OUT/NAME.cfg = the zoo cfg with a [net] of width=height=size alone (no preprocessing, as
   scripts/zoo_vs_torchvision.py does); OUT/NAME.png a random RGB image of that size, dimmed
   until the largest logit is about 4; OUT/NAME.probs.json torchvision's softmax of it / 255.
2. (safetensors) OUT/NAME.safetensors written by safetensors.numpy.save_file from the state
   dict; for resnet18 also OUT/resnet18_f16.safetensors, the same in float16, and
   OUT/resnet18_bf16.safetensors in bfloat16 (numpy has no bfloat16: the file is written here,
   rounding to nearest even as torch does).
photo: for the zoo cfgs of PHOTO_RECIPES (or the NAMEs given), weights for torchvision's model
whose batch norms (weights and biases drawn as make's) take their running statistics from four
corner crops of PHOTO (a JPEG or PNG) prepared by the torchvision weights' own eval transforms
(resize_size, crop_size, mean, std, interpolation; resized with antialiasing on float pixels,
where PIL would round the resized image to 8 bits), the variances raised by PHOTO_RECIPES' addition, and whose last linear layer is
scaled to make the largest logit about 2 (drawn first where it starts at zeros, as ViT's; float
rounding grows with the logits): trained weights are not at hand, and random ones measured on
noise pass so little of a photo to the logits that a wrong resize would go unseen.
Writes OUT/NAME.photo.safetensors and OUT/NAME.photo.probs.json, torchvision's softmax of PHOTO
through those transforms, which `cdl predict cfg/NAME.cfg PHOTO` (the cfg's [net] recipe) must
match.
probs: exits 1 unless cdl's `predict --top ALL --json` probabilities match torchvision's to
1e-5 relative; prints the largest difference.
random: torchvision.models.MODEL() (resnet50, vgg16, ...) with torchvision's own random
initialisation after torch.manual_seed(seed), its state dict saved to FILE by the `safetensors`
package: a stand-in for a pretrained weights file when nothing can be downloaded.
same: exits 1 unless the two files hold the same names and float values (each read as float32,
F16/BF16 widened; num_batches_tracked skipped); prints how many tensors matched.
"""

import json
import os
import struct
import subprocess
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# cfg name: (torchvision constructor, input size; None: the --size given)
MODELS = {"resnet18": ("resnet18", None), "resnet34": ("resnet34", None),
          "resnet50": ("resnet50", None), "vgg16": ("vgg16", 224),
          "mobilenetv2": ("mobilenet_v2", None)}
HALF_MODELS = ("resnet18",)
TOLERANCE = 1e-5


def torch_half(out, given_size, seed):
    import torch
    import torchvision

    sys.path.insert(0, os.path.join(ROOT, "scripts"))
    from zoo_vs_torchvision import layers_only, random_image

    torch.set_num_threads(1)
    for name, (ctor, fixed_size) in MODELS.items():
        size = fixed_size or given_size
        torch.manual_seed(seed)
        model = getattr(torchvision.models, ctor)().eval()
        norms = [m for m in model.modules() if isinstance(m, torch.nn.BatchNorm2d)]
        with torch.no_grad():
            for m in norms:
                m.weight.uniform_(0.5, 1.5)
                m.bias.normal_(0, 0.1)
                m.momentum = None
            # running statistics measured on random images: drawn ones blow a deep residual
            # stack's logits up until softmax saturates and says nothing
            model.train()(torch.rand(4, 3, size, size))
            model.eval()
            for m in norms:
                m.running_var.add_(0.5)  # channels the pass left dead would amplify rounding 300x
                m.num_batches_tracked.fill_(7)
        np.savez(os.path.join(out, name + ".npz"),
                 **{k: v.numpy() for k, v in model.state_dict().items()})
        cfg = os.path.join(out, name + ".cfg")
        layers_only(os.path.join(ROOT, "cfg", name + ".cfg"), cfg)
        with open(cfg) as f:
            lines = [line for line in f if line.split("=")[0].strip() not in ("width", "height")]
        with open(cfg, "w") as f:
            f.writelines(lines[:1] + [f"width={size}\n", f"height={size}\n"] + lines[1:])
        image = os.path.join(out, name + ".png")
        with torch.no_grad():
            largest = model(random_image(image, size, size, seed, 255)).abs().max().item()
            x = random_image(image, size, size, seed, max(1, min(255, int(255 * 4 / largest))))
            probs = torch.softmax(model(x), dim=1)[0].double().numpy()
        with open(os.path.join(out, name + ".probs.json"), "w") as f:
            json.dump(probs.tolist(), f)


# cfg name: (torchvision constructor, the weights whose eval transforms the cfg's [net] follows
# (resize_size, crop, mean/std, interpolation), what each batch norm's measured variance gets
# added). The addition sets how much of
# the photo reaches the logits: with 0.01 a ResNet or a ShuffleNet turns the float rounding of two
# resizes into 1e-4 differences, with 0.5 the mobile nets no longer tell a 256 from a 257 resize.
# VGG (no batch norm) passes so much that the rounding alone comes within 1e-5: its safetensors
# test runs on random pixels instead. ViT has no batch norm.
PHOTO_RECIPES = {
    "resnet18": ("resnet18", "ResNet18_Weights.IMAGENET1K_V1", 0.5),
    "resnet34": ("resnet34", "ResNet34_Weights.IMAGENET1K_V1", 0.5),
    "resnet50": ("resnet50", "ResNet50_Weights.IMAGENET1K_V1", 0.5),
    "mobilenetv2": ("mobilenet_v2", "MobileNet_V2_Weights.IMAGENET1K_V1", 0.01),
    "mobilenet_v3_small": ("mobilenet_v3_small", "MobileNet_V3_Small_Weights.IMAGENET1K_V1", 0.01),
    "mobilenet_v3_large": ("mobilenet_v3_large", "MobileNet_V3_Large_Weights.IMAGENET1K_V2", 0.01),
    "efficientnet_b0": ("efficientnet_b0", "EfficientNet_B0_Weights.IMAGENET1K_V1", 0.01),
    "shufflenet_v2_x1_0": ("shufflenet_v2_x1_0", "ShuffleNet_V2_X1_0_Weights.IMAGENET1K_V1", 0.5),
    "vit_b_16": ("vit_b_16", "ViT_B_16_Weights.IMAGENET1K_V1", 0.0),
    "regnet_y_400mf": ("regnet_y_400mf", "RegNet_Y_400MF_Weights.IMAGENET1K_V2", 0.5),
    "convnext_tiny": ("convnext_tiny", "ConvNeXt_Tiny_Weights.IMAGENET1K_V1", 0.0),
    "densenet121": ("densenet121", "DenseNet121_Weights.IMAGENET1K_V1", 0.5),
    "inception_v3": ("inception_v3", "Inception_V3_Weights.IMAGENET1K_V1", 0.5),
}


def torch_photo(out, photo, names, seed):
    import torch
    import torchvision
    import torchvision.transforms.functional as F
    from PIL import Image

    torch.set_num_threads(1)
    image = F.pil_to_tensor(Image.open(photo).convert("RGB")).float() / 255
    for name in names:
        ctor, weights, variance_added = PHOTO_RECIPES[name]
        enum, member = weights.split(".")
        recipe = getattr(torchvision.models, enum)[member].transforms()

        def prepare(x):
            """The weights' eval transforms on float pixels (PIL would round the resize to
            8 bits), with PIL's antialiasing, as cdl resizes."""
            x = F.resize(x, recipe.resize_size, recipe.interpolation, antialias=True)
            return F.normalize(F.center_crop(x, recipe.crop_size), recipe.mean, recipe.std)

        torch.manual_seed(seed)
        model = getattr(torchvision.models, ctor)()
        norms = [m for m in model.modules() if isinstance(m, torch.nn.BatchNorm2d)]
        # four corner crops of the photo set the running statistics
        h, w = image.shape[1:]
        side = min(w, h) * 3 // 4
        crops = torch.stack([prepare(image[:, y:y + side, x:x + side])
                             for x, y in ((0, 0), (w - side, 0), (0, h - side), (w - side, h - side))])
        with torch.no_grad():
            for m in norms:
                m.weight.uniform_(0.5, 1.5)
                m.bias.normal_(0, 0.1)
                m.momentum = None
            model.train()(crops)
            model.eval()
            for m in norms:
                m.running_var.add_(variance_added)
                m.num_batches_tracked.fill_(7)
            x = prepare(image)[None]
            head = [m for m in model.modules() if isinstance(m, torch.nn.Linear)][-1]
            if not head.weight.any():  # ViT's head starts at zeros
                head.weight.normal_(0, 0.01)
            scale = 2 / model(x).abs().max().item()  # the largest logit about 2
            head.weight.mul_(scale)
            head.bias.mul_(scale)
            probs = torch.softmax(model(x), dim=1)[0].double().numpy()
        with open(os.path.join(out, name + ".photo.probs.json"), "w") as f:
            json.dump(probs.tolist(), f)
        np.savez(os.path.join(out, name + ".photo.npz"),
                 **{k: v.numpy() for k, v in model.state_dict().items()})


def photo(out, path, names, seed):
    from safetensors.numpy import save_file

    subprocess.run(["/usr/bin/python3", os.path.abspath(__file__), "torch-photo", out, path,
                    str(seed)] + names, check=True)
    for name in names:
        npz = os.path.join(out, name + ".photo.npz")
        with np.load(npz) as z:
            tensors = {k: np.ascontiguousarray(z[k]) for k in z.files}
        os.remove(npz)
        save_file(tensors, os.path.join(out, name + ".photo.safetensors"), metadata={"format": "pt"})


def torch_random(model, path, seed):
    import torch
    import torchvision

    torch.manual_seed(seed)
    sd = getattr(torchvision.models, model)().state_dict()
    np.savez(path, **{k: v.numpy() for k, v in sd.items()})


def random(model, path, seed):
    from safetensors.numpy import save_file

    npz = path + ".npz"
    subprocess.run(["/usr/bin/python3", os.path.abspath(__file__), "torch-random", model, npz,
                    str(seed)], check=True)
    with np.load(npz) as z:
        tensors = {k: np.ascontiguousarray(z[k]) for k in z.files}
    os.remove(npz)
    save_file(tensors, path, metadata={"format": "pt"})


def bf16_bits(a):
    """float32 array -> uint16 bfloat16 bits, rounded to nearest even."""
    bits = a.astype(np.float32).view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    return rounded.astype(np.uint16)


def write_bf16(path, tensors):
    header, blobs, offset = {"__metadata__": {"format": "pt"}}, [], 0
    for name, a in tensors.items():
        if a.dtype == np.float32:
            data, dtype = bf16_bits(a).tobytes(), "BF16"
        else:
            data, dtype = a.astype("<i8").tobytes(), "I64"
        header[name] = {"dtype": dtype, "shape": list(a.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def make(out, size, seed):
    from safetensors.numpy import save_file

    subprocess.run(["/usr/bin/python3", os.path.abspath(__file__), "torch", out, str(size),
                    str(seed)], check=True)
    for name in MODELS:
        with np.load(os.path.join(out, name + ".npz")) as z:
            tensors = {k: np.ascontiguousarray(z[k]) for k in z.files}
        os.remove(os.path.join(out, name + ".npz"))
        save_file(tensors, os.path.join(out, name + ".safetensors"), metadata={"format": "pt"})
        if name not in HALF_MODELS:
            continue
        half = {k: v.astype(np.float16) if v.dtype == np.float32 else v for k, v in tensors.items()}
        save_file(half, os.path.join(out, name + "_f16.safetensors"), metadata={"format": "pt"})
        write_bf16(os.path.join(out, name + "_bf16.safetensors"), tensors)


def read(path):
    """{name: float32 array} of a safetensors file's float tensors (F32, F16, BF16)."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    header.pop("__metadata__", None)
    tensors = {}
    for name, t in header.items():
        begin, end = t["data_offsets"]
        raw = data[begin:end]
        if t["dtype"] == "F32":
            a = np.frombuffer(raw, "<f4")
        elif t["dtype"] == "F16":
            a = np.frombuffer(raw, "<f2").astype(np.float32)
        elif t["dtype"] == "BF16":
            a = (np.frombuffer(raw, "<u2").astype(np.uint32) << 16).view(np.float32)
        else:
            continue
        tensors[name] = a.reshape(t["shape"])
    return tensors


def same(a, b):
    ta, tb = read(a), read(b)
    if sorted(ta) != sorted(tb):
        sys.exit(f"{a} and {b} hold different tensors: {sorted(set(ta) ^ set(tb))[:5]}")
    for name in ta:
        if ta[name].shape != tb[name].shape or not np.array_equal(ta[name], tb[name]):
            sys.exit(f"{name}: {a} and {b} differ")
    print(f"{len(ta)} tensors equal")


def probs(cdl_json, torch_json):
    with open(cdl_json) as f:
        top = json.load(f)[0]["top"]
    with open(torch_json) as f:
        ref = np.array(json.load(f))
    mine = np.zeros(len(top))
    for entry in top:
        mine[entry["index"]] = entry["probability"]
    if mine.shape != ref.shape:
        sys.exit(f"cdl gives {mine.shape[0]} classes, torchvision {ref.shape[0]}")
    rel = np.abs(mine - ref) / ref
    print(f"max relative difference {rel.max():.2e} (probabilities {ref.min():.2e}..{ref.max():.2e})")
    if not rel.max() <= TOLERANCE:
        sys.exit(f"cdl's probabilities differ from torchvision's by more than {TOLERANCE}")


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "torch":
        torch_half(args[0], int(args[1]), int(args[2]))
    elif cmd == "make":
        opts = dict(zip(args[1::2], args[2::2]))
        make(args[0], int(opts.get("--size", 64)), int(opts.get("--seed", 1)))
    elif cmd == "torch-photo":
        torch_photo(args[0], args[1], args[3:], int(args[2]))
    elif cmd == "photo":
        names, seed = args[2:], 1
        if "--seed" in names:
            at = names.index("--seed")
            seed = int(names[at + 1])
            names = names[:at] + names[at + 2:]
        photo(args[0], args[1], names or list(PHOTO_RECIPES), seed)
    elif cmd == "torch-random":
        torch_random(args[0], args[1], int(args[2]))
    elif cmd == "random":
        opts = dict(zip(args[2::2], args[3::2]))
        random(args[0], args[1], int(opts.get("--seed", 0)))
    elif cmd == "probs":
        probs(*args)
    elif cmd == "same":
        same(*args)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
