#!/usr/bin/env bash
# Installs the current PyTorch 2.x, torchvision, numpy, ONNX Runtime and onnx from PyPI into a venv
# (build/torch-venv): the second PyTorch scripts/bench-cpu.sh compares cdl with, and the peers of
# scripts/bench-infer.sh. On request only (~5 GB, network): make test never runs it. Usage: scripts/torch-venv.sh [DIR]   (default build/torch-venv)
set -euo pipefail

cd "$(dirname "$0")/.."
venv=${1:-build/torch-venv}
if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c 'import torch, torchvision, numpy, onnxruntime, onnx' 2>/dev/null; then
    echo "torch-venv: $venv has torch $("$venv/bin/python" -c 'import torch; print(torch.__version__)')"
    exit 0
fi
[ -x "$venv/bin/python" ] || /usr/bin/python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --upgrade pip
"$venv/bin/python" -m pip install --quiet torch torchvision numpy onnxruntime onnx
echo "torch-venv: $venv has torch $("$venv/bin/python" -c 'import torch; print(torch.__version__)')"
