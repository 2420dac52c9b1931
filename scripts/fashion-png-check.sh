#!/usr/bin/env bash
# Checks that cfg/fashion.cfg trained from Fashion-MNIST as PNG files in class folders
# (scripts/fashion_to_png.py, read by the data loader's worker threads) reaches the accuracy it
# reaches from the IDX files (in memory), with the same seed and epochs; prints both
# accuracies and wall times and fails when they differ by more than one point (with --limit,
# when they differ at all).
#   scripts/fashion-png-check.sh              full sets, 2 epochs (a few minutes)
#   scripts/fashion-png-check.sh --limit N    the first N images of each split; the IDX side
#                                             is written in the folder's order (class, index),
#                                             so both runs see the same samples in the same order
#                                             and must reach the same accuracy exactly
# Options: --epochs E (default 2), --workers W (PNG run; default 2), --seed S (default 1).
set -euo pipefail
cd "$(dirname "$0")/.."
CDL=${CDL_BIN:-$PWD/cdl}
PY=/usr/bin/python3
limit="" epochs=2 workers=2 seed=1
while [ $# -gt 0 ]; do
    case "$1" in
        --limit) limit=$2; shift 2 ;;
        --epochs) epochs=$2; shift 2 ;;
        --workers) workers=$2; shift 2 ;;
        --seed) seed=$2; shift 2 ;;
        *) echo "usage: $0 [--limit N] [--epochs E] [--workers W] [--seed S]" >&2; exit 2 ;;
    esac
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$PY" scripts/fashion_to_png.py "$work/png" ${limit:+--limit "$limit"} > /dev/null
idx_data=cfg/fashion.data
if [ -n "$limit" ]; then
    idx_data=$work/idx/fashion-idx.data
    "$PY" - "$work/idx" "$limit" "$PWD/cfg/fashion.names" <<'PY'
import gzip, os, struct, sys
import numpy as np
out, limit, names = sys.argv[1], int(sys.argv[2]), sys.argv[3]
root = "/usr/share/datasets/fashion-mnist"
os.makedirs(out)
for split, prefix in (("train", "train"), ("test", "t10k")):
    images = np.frombuffer(gzip.open(f"{root}/{prefix}-images-idx3-ubyte.gz").read()[16:], np.uint8)
    labels = np.frombuffer(gzip.open(f"{root}/{prefix}-labels-idx1-ubyte.gz").read()[8:], np.uint8)
    n = min(limit, len(labels))
    order = sorted(range(n), key=lambda i: (labels[i], i))  # the image folder's order
    images = images.reshape(-1, 28, 28)[order]
    with open(f"{out}/{split}-images", "wb") as f:
        f.write(struct.pack(">IIII", 0x803, n, 28, 28) + images.tobytes())
    with open(f"{out}/{split}-labels", "wb") as f:
        f.write(struct.pack(">II", 0x801, n) + labels[order].tobytes())
with open(f"{out}/fashion-idx.data", "w") as f:
    f.write(f"classes=10\ntrain=train-images\ntrain_labels=train-labels\n"
            f"valid=test-images\nvalid_labels=test-labels\nnames={names}\n")
PY
fi

# train_and_eval NAME DATA [train options...]: prints "ACCURACY SECONDS"
train_and_eval() {
    local name=$1 data=$2
    shift 2
    local start end
    start=$(date +%s.%N)
    "$CDL" train cfg/fashion.cfg --data "$data" --epochs "$epochs" --out "$work/$name.cdl" \
        --seed "$seed" --log-every 1000000000 "$@" 2> "$work/$name.log" || { cat "$work/$name.log" >&2; exit 1; }
    end=$(date +%s.%N)
    "$CDL" eval "$work/$name.cdl" --json |
        "$PY" -c "import json,sys; print(json.load(sys.stdin)['accuracy'], $end - $start)"
}

read -r idx_acc idx_s < <(train_and_eval idx "$idx_data")
read -r png_acc png_s < <(train_and_eval png "$work/png/fashion-png.data" --workers "$workers")
printf 'fashion.cfg, %s epochs%s:\n' "$epochs" "${limit:+, first $limit images of each split}"
printf '  IDX (in memory):            accuracy %.4f, %6.1f s\n' "$idx_acc" "$idx_s"
printf '  PNG folder (%s workers):     accuracy %.4f, %6.1f s\n' "$workers" "$png_acc" "$png_s"
# With --limit both runs see the same samples in the same order and every pixel as the same
# float, so they must agree exactly; the full sets come in another order (by class in the
# folders), and one point is allowed.
allowed=0.01
[ -z "$limit" ] || allowed=0
"$PY" -c "import sys; d = abs($png_acc - $idx_acc); print('  difference %.4f (allowed $allowed)' % d); sys.exit(d > $allowed)"
