#!/usr/bin/env bash
# Prints the model zoo table of docs/zoo.md: every cfg in cfg/ with its input, trainable
# parameters and forward MFLOPs per image as `cdl info --json` reports them, and what it is
# for. --write replaces the table under "# Model zoo" in docs/zoo.md instead.
# Usage: scripts/zoo-table.sh [--write]     (CDL=path overrides ./cdl)
set -euo pipefail
cd "$(dirname "$0")/.."
CDL=${CDL:-./cdl}

purpose() {
    case "$1" in
    char_lstm) echo "character LSTM language model (counts at 256 tokens; KJV has 63)" ;;
    cifar_darknet) echo "darknet's CIFAR-10 classifier (random 28x28 crops)" ;;
    cifar_small) echo "CIFAR-shaped speed benchmark (scripts/bench-cpu.sh)" ;;
    darknet19) echo "darknet's ImageNet classifier, the YOLOv2 backbone" ;;
    digits) echo "tiny default: 8x8 digits, trains in seconds" ;;
    fashion) echo "Fashion-MNIST demo (make demo): ~90% in 2 epochs" ;;
    gpt_tiny) echo "GPT-style character transformer: 4 blocks, width 128, 4 heads, context 128 (counts at 256 tokens)" ;;
    lenet) echo "LeNet-5 for MNIST / Fashion-MNIST" ;;
    mobilenetv2) echo "torchvision mobilenet_v2: depthwise, inverted residuals" ;;
    mobilenet_v3_small | mobilenet_v3_large)
        echo "torchvision $1: inverted residuals, squeeze-excitation, hardswish" ;;
    efficientnet_b0) echo "torchvision efficientnet_b0: MBConv, squeeze-excitation, swish, stochastic depth" ;;
    shufflenet_v2_x1_0) echo "torchvision shufflenet_v2_x1_0: channel split, depthwise, channel shuffle" ;;
    vit_b_16) echo "torchvision vit_b_16: 16x16 patches, class token, 12 encoder blocks" ;;
    regnet_y_400mf) echo "torchvision regnet_y_400mf: grouped bottlenecks, squeeze-excitation" ;;
    densenet121) echo "torchvision densenet121: dense blocks of [route] concatenations, pre-activation batch norms, bias-free convolutions" ;;
    inception_v3) echo "torchvision inception_v3: factorised 1x7/7x1 and 1x3/3x1 convolutions, [route] branches, the auxiliary classifier's tensors" ;;
    convnext_tiny) echo "torchvision convnext_tiny: 7x7 depthwise, LayerNorm2d, layer scale, stochastic depth" ;;
    resnet18 | resnet34 | resnet50) echo "torchvision $1 (ImageNet)" ;;
    resnet18_cifar | resnet34_cifar) echo "torchvision ${1%_cifar} with the CIFAR 3x3 stem" ;;
    reverse) echo "sequence-to-sequence toy: 2+2 post-norm Transformer layers, width 32, reverse or copy words (counts at 256 tokens)" ;;
    resnet_fashion) echo "Fashion-MNIST ResNet: 93.3% in 16 min on 2 cores (acceptance run)" ;;
    vgg16) echo "torchvision vgg16 (ImageNet, no batch norm)" ;;
    *) sed -n '1s/^#[[:space:]]*//p' "cfg/$1.cfg" ;;
    esac
}

table() {
    echo "| cfg | input CxHxW | parameters | MFLOPs | for |"
    echo "| --- | --- | ---: | ---: | --- |"
    for cfg in cfg/*.cfg; do
        name=$(basename "$cfg" .cfg)
        info=$("$CDL" info "$cfg" --json)
        python3 - "$name" "$(purpose "$name")" "$info" <<'PY'
import json, sys
name, purpose, info = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
shape = "x".join(map(str, info["input"]))
print(f"| `{name}` | {shape} | {info['params']:,} | {info['flops'] / 1e6:,.1f} | {purpose} |")
PY
    done
}

if [ "${1:-}" = "--write" ]; then
    table | python3 -c '
import sys
table = sys.stdin.read().splitlines()
lines = open("docs/zoo.md").read().splitlines()
section = lines.index("# Model zoo")
start = next(i for i in range(section, len(lines)) if lines[i].startswith("| cfg |"))
end = start
while end < len(lines) and lines[end].startswith("|"):
    end += 1
open("docs/zoo.md", "w").write("\n".join(lines[:start] + table + lines[end:]) + "\n")'
else
    table
fi
