#!/usr/bin/env bash
# The main job (`make demo`): train cfg/fashion.cfg on Fashion-MNIST for 2 epochs, evaluate
# on the 10,000 test images, and classify a few test images written out as PNG files.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
./cdl train cfg/fashion.cfg --data cfg/fashion.data --epochs 2 --out weights/fashion.cdl \
    --log weights/fashion.jsonl
./cdl eval weights/fashion.cdl --data cfg/fashion.data
mapfile -t samples < <(/usr/bin/python3 scripts/fashion_samples.py build/demo 4)
./cdl predict weights/fashion.cdl "${samples[@]}" --top 3
./cdl eval weights/fashion.cdl --json > weights/fashion-eval.json
echo "demo: $(( $(date +%s) - start )) s; test accuracy $(/usr/bin/python3 -c \
    'import json; print("%.2f%%" % (100 * json.load(open("weights/fashion-eval.json"))["accuracy"]))')"
