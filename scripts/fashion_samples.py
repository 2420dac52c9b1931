"""Writes the first N Fashion-MNIST test images as PNG files (OUT/NN-LABEL.png) for `cdl predict`.

usage: /usr/bin/python3 scripts/fashion_samples.py OUT_DIR [N]
"""
import gzip
import os
import struct
import sys
import zlib

ROOT = "/usr/share/datasets/fashion-mnist"
NAMES = ["tshirt", "trouser", "pullover", "dress", "coat", "sandal", "shirt", "sneaker", "bag",
         "ankle-boot"]


def png_bytes(pixels, side):
    def chunk(tag, data):
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data))
    raw = b"".join(b"\0" + pixels[r * side:(r + 1) * side] for r in range(side))
    header = struct.pack(">IIBBBBB", side, side, 8, 0, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw))
            + chunk(b"IEND", b""))


def main():
    out, count = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 4
    os.makedirs(out, exist_ok=True)
    images = gzip.open(f"{ROOT}/t10k-images-idx3-ubyte.gz").read()[16:]
    labels = gzip.open(f"{ROOT}/t10k-labels-idx1-ubyte.gz").read()[8:]
    for i in range(count):
        path = os.path.join(out, f"{i:02d}-{NAMES[labels[i]]}.png")
        with open(path, "wb") as f:
            f.write(png_bytes(images[i * 784:(i + 1) * 784], 28))
        print(path)


if __name__ == "__main__":
    main()
