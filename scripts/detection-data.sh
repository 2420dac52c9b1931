#!/usr/bin/env bash
# Writes data/detection/fashion-det, the detection dataset of cfg/fashion-det.data: Fashion-MNIST
# items pasted onto crops of real photographs with their exact boxes, 3000 training and 500
# validation images of 96x96 (scripts/detection_data.py; Debian's dataset-fashion-mnist and
# python3-skimage, which scripts/deps.sh installs). A complete dataset is kept.
# Usage: scripts/detection-data.sh [--force]
set -euo pipefail
cd "$(dirname "$0")/.."

out=data/detection/fashion-det
train=3000 valid=500
if [ "${1:-}" != --force ] && [ -f "$out/train.txt" ] && [ -f "$out/valid.txt" ] &&
    [ "$(wc -l <"$out/train.txt")" -eq $train ] && [ "$(wc -l <"$out/valid.txt")" -eq $valid ]; then
    echo "detection-data: $out is complete"
    exit 0
fi
rm -rf "$out.tmp"
/usr/bin/python3 scripts/detection_data.py "$out.tmp" --train $train --valid $valid
rm -rf "$out"
mv "$out.tmp" "$out"
