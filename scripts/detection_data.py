"""Writes fashion-det, a detection dataset that ships offline: Fashion-MNIST items (Debian's
dataset-fashion-mnist) pasted onto crops of real photographs (scikit-image's sample photos,
Debian's python3-skimage), with their exact tight boxes as darknet label files.

    OUT/images/{train,valid}/N.png   96x96 RGB: a photo crop with 1 to 3 items
    OUT/labels/{train,valid}/N.txt   one "class cx cy w h" line per item (darknet's format)
    OUT/train.txt  OUT/valid.txt     the image paths, relative to OUT

Each item is a Fashion-MNIST image (training items for train, test items for valid) scaled 1 to
2 times (28 to 56 pixels), tinted with a random colour and blended in with its own intensity as
opacity; its box is the smallest holding every pixel of opacity above 1/8. Items overlap at most
slightly (IoU below 0.2). Deterministic from --seed.

usage: /usr/bin/python3 scripts/detection_data.py OUT [--train N] [--valid N] [--seed S]
"""
import argparse
import gzip
import os
import random

import numpy as np
from PIL import Image

FASHION = "/usr/share/datasets/fashion-mnist"
SIZE = 96
PHOTOS = ["astronaut.png", "chelsea.png", "coffee.png", "rocket.jpg", "motorcycle_left.png",
          "motorcycle_right.png", "grass.png", "gravel.png", "brick.png", "hubble_deep_field.jpg",
          "camera.png", "coins.png", "moon.png", "page.png", "retina.jpg"]


def read_idx(name):
    with gzip.open(os.path.join(FASHION, name)) as f:
        data = f.read()
    dims = data[3]
    shape = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(data, np.uint8, offset=4 + 4 * dims).reshape(shape)


def photos():
    import skimage
    root = os.path.join(os.path.dirname(skimage.__file__), "data")
    out = []
    for name in PHOTOS:
        img = Image.open(os.path.join(root, name)).convert("RGB")
        out.append(np.asarray(img, np.float32))
    return out


def iou(a, b):
    ax0, ay0, ax1, ay1 = a
    bx0, by0, bx1, by1 = b
    iw, ih = min(ax1, bx1) - max(ax0, bx0), min(ay1, by1) - max(ay0, by0)
    if iw <= 0 or ih <= 0:
        return 0.0
    inter = iw * ih
    return inter / ((ax1 - ax0) * (ay1 - ay0) + (bx1 - bx0) * (by1 - by0) - inter)


def background(rng, photo_list):
    p = photo_list[rng.randrange(len(photo_list))]
    h, w = p.shape[:2]
    side = rng.randint(min(h, w) // 4, min(h, w))
    y, x = rng.randint(0, h - side), rng.randint(0, w - side)
    crop = Image.fromarray(p[y:y + side, x:x + side].astype(np.uint8)).resize((SIZE, SIZE),
                                                                               Image.BILINEAR)
    return np.asarray(crop, np.float32)


def compose(rng, photo_list, items, labels):
    """One image and its label lines."""
    img = background(rng, photo_list)
    boxes, lines = [], []
    for _ in range(rng.randint(1, 3)):
        for _attempt in range(20):
            k = rng.randrange(len(items))
            side = rng.randint(28, 56)
            alpha = np.asarray(Image.fromarray(items[k]).resize((side, side), Image.BILINEAR),
                               np.float32) / 255.0
            ys, xs = np.nonzero(alpha > 0.125)
            if len(xs) == 0:
                continue
            x, y = rng.randint(0, SIZE - side), rng.randint(0, SIZE - side)
            box = (x + xs.min(), y + ys.min(), x + xs.max() + 1, y + ys.max() + 1)
            if any(iou(box, b) >= 0.2 for b in boxes):
                continue
            colour = np.array([rng.randint(0, 255) for _ in range(3)], np.float32)
            region = img[y:y + side, x:x + side]
            img[y:y + side, x:x + side] = region * (1 - alpha[..., None]) + colour * alpha[..., None]
            boxes.append(box)
            x0, y0, x1, y1 = box
            lines.append(f"{labels[k]} {(x0 + x1) / 2 / SIZE:.6f} {(y0 + y1) / 2 / SIZE:.6f} "
                         f"{(x1 - x0) / SIZE:.6f} {(y1 - y0) / SIZE:.6f}\n")
            break
    return Image.fromarray(np.clip(img + 0.5, 0, 255).astype(np.uint8)), lines


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--train", type=int, default=3000)
    ap.add_argument("--valid", type=int, default=500)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    photo_list = photos()
    splits = {"train": (read_idx("train-images-idx3-ubyte.gz"),
                        read_idx("train-labels-idx1-ubyte.gz"), args.train),
              "valid": (read_idx("t10k-images-idx3-ubyte.gz"),
                        read_idx("t10k-labels-idx1-ubyte.gz"), args.valid)}
    for split, (items, labels, count) in splits.items():
        rng = random.Random(f"{args.seed}-{split}")
        for sub in ("images", "labels"):
            os.makedirs(os.path.join(args.out, sub, split), exist_ok=True)
        paths = []
        for i in range(count):
            img, lines = compose(rng, photo_list, items, labels)
            img.save(os.path.join(args.out, "images", split, f"{i}.png"))
            with open(os.path.join(args.out, "labels", split, f"{i}.txt"), "w") as f:
                f.writelines(lines)
            paths.append(f"images/{split}/{i}.png\n")
        with open(os.path.join(args.out, f"{split}.txt"), "w") as f:
            f.writelines(paths)
    print(f"detection-data: wrote {args.train} training and {args.valid} validation images "
          f"under {args.out}")


if __name__ == "__main__":
    main()
