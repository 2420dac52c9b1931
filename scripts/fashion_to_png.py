"""Converts Fashion-MNIST (Debian's dataset-fashion-mnist) into an image-folder dataset:

    OUT/train/<class>/NNNNN.png   OUT/test/<class>/NNNNN.png   (NNNNN: index in the IDX file)
    OUT/fashion-png.names         OUT/fashion-png.data          (train=train, valid=test)

Class folders are named with their label digit first (0-tshirt, 1-trouser, ..., 9-ankle-boot),
so their sorted order, which is how an image folder numbers its classes, is the label order.
Every class folder is created even when --limit leaves it empty. --classes 5-9 keeps those
classes alone (named and numbered in their order: a 5-class dataset).

usage: /usr/bin/python3 scripts/fashion_to_png.py OUT_DIR [--limit N] [--classes FIRST-LAST]
"""
import argparse
import gzip
import os

import numpy as np
from PIL import Image

ROOT = "/usr/share/datasets/fashion-mnist"
FOLDERS = ["0-tshirt", "1-trouser", "2-pullover", "3-dress", "4-coat", "5-sandal", "6-shirt",
           "7-sneaker", "8-bag", "9-ankle-boot"]
NAMES = ["T-shirt_top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker",
         "Bag", "Ankle_boot"]
SPLITS = {"train": "train", "test": "t10k"}


def read_idx(path, header_bytes):
    return np.frombuffer(gzip.open(path).read()[header_bytes:], np.uint8)


def convert(out, split, prefix, limit, classes):
    images = read_idx(f"{ROOT}/{prefix}-images-idx3-ubyte.gz", 16).reshape(-1, 28, 28)
    labels = read_idx(f"{ROOT}/{prefix}-labels-idx1-ubyte.gz", 8)
    count = len(labels) if limit is None else min(limit, len(labels))
    for c in classes:
        os.makedirs(os.path.join(out, split, FOLDERS[c]), exist_ok=True)
    written = 0
    for i in range(count):
        if labels[i] in classes:
            path = os.path.join(out, split, FOLDERS[labels[i]], f"{i:05d}.png")
            Image.fromarray(images[i], "L").save(path)
            written += 1
    return written


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", help="output directory")
    parser.add_argument("--limit", type=int, help="convert only the first N images of each split")
    parser.add_argument("--classes", default="0-9", help="keep classes FIRST-LAST alone")
    args = parser.parse_args()
    if args.limit is not None and args.limit < 1:
        parser.error("--limit must be at least 1")
    first, _, last = args.classes.partition("-")
    classes = list(range(int(first), int(last or first) + 1))
    if not classes or classes[0] < 0 or classes[-1] > 9:
        parser.error("--classes must be FIRST-LAST within 0-9")
    counts = {split: convert(args.out, split, prefix, args.limit, classes)
              for split, prefix in SPLITS.items()}
    with open(os.path.join(args.out, "fashion-png.names"), "w") as f:
        f.write("\n".join(NAMES[c] for c in classes) + "\n")
    with open(os.path.join(args.out, "fashion-png.data"), "w") as f:
        f.write("# Fashion-MNIST as PNG files in class folders (scripts/fashion_to_png.py)\n"
                f"classes={len(classes)}\ntrain=train\nvalid=test\nnames=fashion-png.names\n")
    print(f"{args.out}: {counts['train']} train and {counts['test']} test images")


if __name__ == "__main__":
    main()
