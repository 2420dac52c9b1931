#!/usr/bin/env bash
# Installs the Debian packages cdl builds, tests and demos with; does nothing when all
# are present. Usage: scripts/deps.sh [--quiet]
set -euo pipefail

packages=(
    build-essential libopenblas-dev libopenblas0-openmp libcjson-dev libpng-dev
    libdnnl-dev # convolutions through oneDNN (make DNNL=0 builds without it)
    libjpeg62-turbo-dev libzstd-dev zlib1g-dev bats
    pkg-config # examples/ build with cdl.pc, as a program using the library does
    jq # the Bats tests read --json output with it
    dataset-fashion-mnist python3-torch python3-numpy python3-sklearn python3-pil python3-skimage
    darknet python3-onnx graphviz python3-torchvision
    bible-kjv bible-kjv-text fortunes # text corpora of scripts/text-data.sh
    sword-text-sparv diatheke # the Spanish side of text-data.sh's verse pairs (Reina-Valera 1909)
    openmpi-bin libopenmpi-dev # make MPI=1 (data-parallel training)
    python3-pip # pip for the PyPI packages below on Debian's own python3
)

missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
    [ "${1:-}" = --quiet ] || echo "deps: all ${#packages[@]} packages present"
else
    echo "deps: installing ${missing[*]}"
    if [ "$(id -u)" -ne 0 ]; then
        if command -v sudo >/dev/null; then
            SUDO=sudo
        else
            echo "deps: run as root, or install: ${missing[*]}" >&2
            exit 1
        fi
    fi
    ${SUDO:-} apt-get update -qq
    DEBIAN_FRONTEND=noninteractive ${SUDO:-} apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# PyPI packages for the python3 on PATH, as MODULE or MODULE=PACKAGE (tests read TensorBoard
# files, and run exported ONNX models in onnxruntime). Checked after the Debian packages: on a
# fresh machine python3 itself comes with them.
pip_packages=(tensorboard onnx onnxruntime numpy PIL=pillow safetensors tokenizers)
pip_missing=$(python3 -c 'import importlib.util as u, sys
print(*(p.split("=")[-1] for p in sys.argv[1:] if not u.find_spec(p.split("=")[0])))' \
    "${pip_packages[@]}")
if [ -n "$pip_missing" ]; then
    echo "deps: pip installing $pip_missing"
    # Debian's own python3 (a fresh machine, where python3-pip provides pip) is marked
    # externally managed (PEP 668): pip installs beside its packages only when told to.
    managed=$(python3 -c 'import os, sysconfig
print(os.path.exists(os.path.join(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED")))')
    # shellcheck disable=SC2086 # one word per package
    python3 -m pip install -q $([ "$managed" = True ] && echo --break-system-packages) $pip_missing
fi

