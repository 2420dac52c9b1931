#!/usr/bin/env bash
# Times the data loader alone against PyTorch's DataLoader: ~200 JPEG photos of about 500x400
# (crops and resizes of the darknet and scikit-image sample photos, written to a temp dir),
# RandomResizedCrop to 224, horizontal flip and ImageNet normalisation, batch 32, with 1 and 2
# workers each, in the same run. Prints images/s of both and the ratio.
# Usage: scripts/bench-loader.sh [EPOCHS]   (passes over the 200 photos; default 3)
set -euo pipefail
cd "$(dirname "$0")/.."
args=("$@")
epochs=${1:-3}
CDL=${CDL_BIN:-./cdl}
PY=/usr/bin/python3 # Debian's, with python3-torch and python3-torchvision
[ -x "$CDL" ] || make -s cdl
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$PY" - "$work/photos" <<'PY'
import glob, os, random, sys
from PIL import Image
import skimage
out = sys.argv[1]
skdata = os.path.join(os.path.dirname(skimage.__file__), "data")
names = ["astronaut.png", "chelsea.png", "coffee.png", "rocket.jpg", "motorcycle_left.png",
         "hubble_deep_field.jpg", "immunohistochemistry.png", "color.png"]
sources = sorted(glob.glob("/usr/share/darknet/data/*.jpg"))
sources += [os.path.join(skdata, n) for n in names if os.path.exists(os.path.join(skdata, n))]
photos = [Image.open(p).convert("RGB") for p in sources]
rng = random.Random(1)
for i in range(200):
    src = photos[i % len(photos)]
    w, h = rng.randint(450, 550), rng.randint(350, 450)
    scale = max(w / src.width, h / src.height) * rng.uniform(1.0, 1.5)
    big = src.resize((max(w, round(src.width * scale)), max(h, round(src.height * scale))),
                     Image.BILINEAR)
    x, y = rng.randint(0, big.width - w), rng.randint(0, big.height - h)
    d = os.path.join(out, "class%d" % (i % 4))
    os.makedirs(d, exist_ok=True)
    big.crop((x, y, x + w, y + h)).save(os.path.join(d, "%03d.jpg" % i), quality=90)
PY

cat > "$work/photos.cfg" <<'EOF'
[net]
batch=32
width=224
height=224
channels=3
random_resized_crop=1
flip=1
mean=0.485,0.456,0.406
std=0.229,0.224,0.225
[avgpool]
[connected]
output=4
activation=linear
[softmax]
EOF
printf 'train=%s\n' "$work/photos" > "$work/photos.data"

cat > "$work/torch_loader.py" <<'PY'
import sys, time, torch
from torchvision import datasets, transforms
root, workers, epochs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
torch.set_num_threads(1)
torch.manual_seed(1)
tf = transforms.Compose([transforms.RandomResizedCrop(224), transforms.RandomHorizontalFlip(),
                         transforms.ToTensor(),
                         transforms.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])
data = datasets.ImageFolder(root, tf)
loader = torch.utils.data.DataLoader(data, batch_size=32, shuffle=True, drop_last=True,
                                     num_workers=workers, persistent_workers=workers > 0)
images, start = 0, None
for epoch in range(epochs):
    for k, (x, y) in enumerate(loader):
        if start is None:
            start = time.perf_counter()  # the first batch (start-up) is not timed
        else:
            images += x.shape[0]
print(images / (time.perf_counter() - start))
PY

# shellcheck source=scripts/lib/speed-table.sh
source scripts/lib/speed-table.sh
speed_table_begin bench-loader "${args[@]}"
echo "loader benchmark: 200 JPEGs ~500x400, RandomResizedCrop 224 + flip + normalise, batch 32, $epochs epochs"
printf '%-8s %14s %14s %8s\n' workers "cdl img/s" "torch img/s" ratio
for workers in 1 2; do
    cdl_rate=$("$CDL" bench-loader "$work/photos.cfg" --data "$work/photos.data" --workers "$workers" \
        --epochs "$epochs" --json | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["images_per_s"])')
    torch_rate=$("$PY" "$work/torch_loader.py" "$work/photos" "$workers" "$epochs")
    printf '%-8s %14.1f %14.1f %7.2fx\n' "$workers" "$cdl_rate" "$torch_rate" \
        "$("$PY" -c "print($cdl_rate / $torch_rate)")"
done
speed_table_end
