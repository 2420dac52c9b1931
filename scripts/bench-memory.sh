#!/usr/bin/env bash
# Peak memory of a training step: the peak RSS of `cdl bench CFG` and of the same steps in
# PyTorch (scripts/bench_torch.py, Debian's torch 1.13, and PyTorch 2.x when build/torch-venv
# or $TORCH_VENV has it), each its own process, and cdl / PyTorch. Issue 11 asks resnet18_cifar
# at batch 64 for at most 0.8x. Memory does not depend on other load; times are not printed.
# Usage: scripts/bench-memory.sh [CFG [BATCH [STEPS]]]   (default cfg/resnet18_cifar.cfg 64 3)
set -euo pipefail
cd "$(dirname "$0")/.."
args=("$@")
cfg=${1:-cfg/resnet18_cifar.cfg}
batch=${2:-64}
steps=${3:-3}
threads=2
venv=${TORCH_VENV:-build/torch-venv}
[ -x ./cdl ] || { echo "bench-memory: build cdl first (make)" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "bench-memory: needs GNU time (apt-get install time)" >&2; exit 1; }

# peak_kib COMMAND...: the command's peak RSS in KiB (GNU time's %M), its output discarded.
peak_kib() {
    local out
    out=$(mktemp)
    /usr/bin/time -f %M -o "$out" "$@" >/dev/null
    tail -n 1 "$out"
    rm -f "$out"
}

cdl_kib=$(peak_kib ./cdl bench "$cfg" --batch "$batch" --steps "$steps" --warmup 0 \
    --threads "$threads")
# shellcheck source=scripts/lib/speed-table.sh
source scripts/lib/speed-table.sh
speed_table_begin bench-memory "${args[@]}"
printf '%s batch %s, %s steps, %s threads: peak RSS MiB\n' "$cfg" "$batch" "$steps" "$threads"
printf '  cdl            %8.1f\n' "$(awk -v k="$cdl_kib" 'BEGIN { print k / 1024 }')"
for peer in /usr/bin/python3 "$venv/bin/python"; do
    [ -x "$peer" ] || continue
    kib=$(OMP_NUM_THREADS=$threads peak_kib "$peer" scripts/bench_torch.py --cfg "$cfg" \
        --threads "$threads" --batch "$batch" --steps "$steps" --warmup 0)
    version=$("$peer" -c 'import torch; print(torch.__version__)')
    awk -v v="$version" -v k="$kib" -v c="$cdl_kib" \
        'BEGIN { printf "  PyTorch %-6.6s %8.1f   cdl / PyTorch %.2f\n", v, k / 1024, c / k }'
done
speed_table_end
