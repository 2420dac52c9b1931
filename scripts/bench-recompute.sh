#!/usr/bin/env bash
# Gradient checkpointing's trade-off, measured: for each net, `cdl bench` training steps with
# and without [net] recompute_every=N, printing the activation slab (what `cdl info` reports as
# training activations), the process's peak RSS and ms/step of both and their ratios. Each run
# is its own process, so its peak RSS is its own. Defaults: resnet50 at 224x224, batch 16,
# recompute_every=8; gpt_tiny at its batch 32, recompute_every=8.
# Usage: scripts/bench-recompute.sh [--threads N] [--steps N] [--warmup N]
#            [CFG:BATCH:N ...]          (BATCH 0: the cfg's batch and subdivisions)
set -euo pipefail

cd "$(dirname "$0")/.."
args=("$@")
threads=0 # all cores
steps=3
warmup=1
runs=()
while [ $# -gt 0 ]; do
    case "$1" in
    --threads) threads=$2 && shift 2 ;;
    --steps) steps=$2 && shift 2 ;;
    --warmup) warmup=$2 && shift 2 ;;
    -h | --help) sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//' && exit 0 ;;
    -*) echo "bench-recompute: unknown option $1 (see --help)" >&2 && exit 2 ;;
    *) runs+=("$1") && shift ;;
    esac
done
[ ${#runs[@]} -gt 0 ] || runs=(cfg/resnet50.cfg:16:8 cfg/gpt_tiny.cfg:0:8)
[ -x ./cdl ] || { echo "bench-recompute: build cdl first (make)" >&2 && exit 1; }

# bench CFG BATCH EVERY: one JSON line of cdl bench.
bench() {
    local batch_opt=()
    [ "$2" -gt 0 ] && batch_opt=(--batch "$2")
    ./cdl bench "$1" "${batch_opt[@]}" --steps "$steps" --warmup "$warmup" --threads "$threads" \
        --set net.recompute_every="$3" --json
}

# shellcheck source=scripts/lib/speed-table.sh
source scripts/lib/speed-table.sh
speed_table_begin bench-recompute "${args[@]}"
printf '%-20s %6s %12s %12s %12s\n' "cfg" "every" "slab MiB" "peak RSS MiB" "ms/step"
for run in "${runs[@]}"; do
    IFS=: read -r cfg batch every <<< "$run"
    plain=$(bench "$cfg" "$batch" 0)
    ckpt=$(bench "$cfg" "$batch" "$every")
    python3 - "$cfg" "$every" "$plain" "$ckpt" <<'PY'
import json, sys
cfg, every, plain, ckpt = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), json.loads(sys.argv[4])
mib = 1 << 20
def row(label, r):
    print(f"{cfg.split('/')[-1]:<20} {label:>6} {r['activation_bytes'] / mib:12.1f} "
          f"{r['peak_rss_bytes'] / mib:12.1f} {r['ms_per_step']:12.1f}")
row("off", plain)
row(every, ckpt)
print(f"{'':<20} {'ratio':>6} {ckpt['activation_bytes'] / plain['activation_bytes']:12.3f} "
      f"{ckpt['peak_rss_bytes'] / plain['peak_rss_bytes']:12.3f} "
      f"{ckpt['ms_per_step'] / plain['ms_per_step']:12.3f}")
PY
done
speed_table_end
