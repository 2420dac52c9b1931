#!/usr/bin/env bats
# scripts/fashion_to_png.py: Fashion-MNIST as an image folder whose sorted class folders are the
# label order, each PNG the IDX image of its index.

load helpers

@test "fashion_to_png writes the first --limit images of each split into label folders" {
    run /usr/bin/python3 "$REPO/scripts/fashion_to_png.py" out --limit 25
    [ "$status" -eq 0 ]
    [ "$output" = "out: 25 train and 25 test images" ]
    [ "$(find out/train -name '*.png' | wc -l)" -eq 25 ]
    [ "$(find out/test -name '*.png' | wc -l)" -eq 25 ]
    [ "$(ls out/train | tr '\n' ' ')" = "0-tshirt 1-trouser 2-pullover 3-dress 4-coat 5-sandal 6-shirt 7-sneaker 8-bag 9-ankle-boot " ]
    [ "$(ls out/test | wc -l)" -eq 10 ]
    # Every PNG holds the IDX image of its index, in the folder of its IDX label.
    /usr/bin/python3 - out <<'PY'
import glob, gzip, os, sys
import numpy as np
from PIL import Image
root = "/usr/share/datasets/fashion-mnist"
for split, prefix in (("train", "train"), ("test", "t10k")):
    images = np.frombuffer(gzip.open(f"{root}/{prefix}-images-idx3-ubyte.gz").read()[16:], np.uint8)
    labels = gzip.open(f"{root}/{prefix}-labels-idx1-ubyte.gz").read()[8:]
    for path in glob.glob(f"{sys.argv[1]}/{split}/*/*.png"):
        i = int(os.path.basename(path)[:-4])
        assert os.path.basename(os.path.dirname(path))[0] == str(labels[i]), path
        assert (np.array(Image.open(path)) == images[i * 784:(i + 1) * 784].reshape(28, 28)).all(), path
PY
}

@test "fashion_to_png's data file names the folders and the classes in label order" {
    /usr/bin/python3 "$REPO/scripts/fashion_to_png.py" out --limit 1 >/dev/null
    grep -qx 'train=train' out/fashion-png.data
    grep -qx 'valid=test' out/fashion-png.data
    grep -qx 'names=fashion-png.names' out/fashion-png.data
    [ "$(head -n 2 out/fashion-png.names | tr '\n' ' ')" = "T-shirt_top Trouser " ]
    [ "$(tail -n 1 out/fashion-png.names)" = "Ankle_boot" ]
    [ "$(wc -l < out/fashion-png.names)" -eq 10 ]
}

@test "fashion_to_png refuses a --limit below 1" {
    run /usr/bin/python3 "$REPO/scripts/fashion_to_png.py" out --limit 0
    [ "$status" -eq 2 ]
    [[ "$output" == *"--limit must be at least 1"* ]]
}

@test "fashion_to_png --classes keeps those classes alone, named and numbered in order" {
    /usr/bin/python3 "$REPO/scripts/fashion_to_png.py" out --limit 100 --classes 5-9 >/dev/null
    grep -qx 'classes=5' out/fashion-png.data
    [ "$(tr '\n' ' ' < out/fashion-png.names)" = "Sandal Shirt Sneaker Bag Ankle_boot " ]
    [ "$(ls out/train | tr '\n' ' ')" = "5-sandal 6-shirt 7-sneaker 8-bag 9-ankle-boot " ]
    [ "$(find out -name '*.png' | wc -l)" -gt 0 ]
    run /usr/bin/python3 "$REPO/scripts/fashion_to_png.py" out --classes 7-12
    [ "$status" -eq 2 ]
}
