#!/usr/bin/env bash
# CPU training throughput of cdl against PyTorch on the same nets, batch and steps (random data).
# Usage: scripts/bench-cpu.sh [STEPS]   (default 20 timed steps after 3 warm-up steps)
set -euo pipefail

cd "$(dirname "$0")/.."
steps=${1:-20}
warmup=3
cfgs=(cfg/fashion.cfg cfg/cifar_small.cfg)
thread_counts=(1 2)
python=/usr/bin/python3 # Debian's, with python3-torch

[ -x ./cdl ] || make -j2 >&2

json_field() { # json_field FIELD <<< JSON
    "$python" -c 'import json, sys; print(json.loads(sys.stdin.read())[sys.argv[1]])' "$1"
}

torch_version=$(env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE "$python" -c \
    'import torch; print(torch.__version__, "(" + torch.__file__.rsplit("/", 1)[0] + ")")')
echo "PyTorch $torch_version; $steps timed steps after $warmup warm-up, random data"
echo "(single runs, back to back: other load on the machine shows up in the numbers)"
printf '%-22s %7s %6s %14s %18s %8s\n' cfg threads batch "cdl images/s" "PyTorch images/s" ratio
for cfg in "${cfgs[@]}"; do
    for t in "${thread_counts[@]}"; do
        cdl_json=$(OMP_NUM_THREADS=$t ./cdl bench "$cfg" --threads "$t" --steps "$steps" \
            --warmup "$warmup" --json)
        batch=$(json_field batch <<<"$cdl_json")
        cdl_ips=$(json_field images_per_s <<<"$cdl_json")
        torch_json=$(OMP_NUM_THREADS=$t env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE \
            "$python" scripts/bench_torch.py --cfg "$cfg" --threads "$t" --batch "$batch" \
            --steps "$steps" --warmup "$warmup")
        torch_ips=$(json_field images_per_s <<<"$torch_json")
        ratio=$(awk -v a="$cdl_ips" -v b="$torch_ips" 'BEGIN { printf "%.2f", a / b }')
        printf '%-22s %7d %6d %14.1f %18.1f %8s\n' "$cfg" "$t" "$batch" "$cdl_ips" "$torch_ips" \
            "$ratio"
    done
done
