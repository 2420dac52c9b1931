#!/usr/bin/env bash
# Installs the Debian packages cdl builds, tests and demos with; does nothing when all
# are present. Usage: scripts/deps.sh [--quiet]
set -euo pipefail

packages=(
    build-essential libopenblas-dev libopenblas0-openmp libcjson-dev libpng-dev
    libjpeg62-turbo-dev libzstd-dev zlib1g-dev bats
    dataset-fashion-mnist python3-torch python3-numpy python3-sklearn python3-pil python3-skimage
)

missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
    [ "${1:-}" = --quiet ] || echo "deps: all ${#packages[@]} packages present"
    exit 0
fi

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
