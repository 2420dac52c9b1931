#!/usr/bin/env bash
# Learning-rate sweep: trains one cfg at several learning rates (--set net.learning_rate=LR),
# logs each run (--log), evaluates each checkpoint (cdl eval --json), prints a table
# (lr, accuracy, loss) and plots the runs together (cdl plot).
#
#   scripts/sweep-lr.sh [--epochs N] [--out DIR] [--threads N] [CFG [LR ...]]
#
# Defaults: cfg/digits.cfg, learning rates 0.01 0.05 0.2, the cfg's own epoch count, DIR
# weights/sweep-lr. DIR receives lr<LR>.cdl, lr<LR>.jsonl and curves.png. $CDL_BIN picks
# the binary (default: ./cdl of this checkout).
set -euo pipefail

repo="$(cd "$(dirname "$0")/.." && pwd)"
cdl="${CDL_BIN:-$repo/cdl}"
out=weights/sweep-lr
train_opts=()

usage() {
    sed -n '2,10s/^# \{0,1\}//p' "$0"
    exit "$1"
}

while [ $# -gt 0 ]; do
    case "$1" in
        --epochs | --threads)
            [ $# -ge 2 ] || usage 2
            train_opts+=("$1" "$2")
            shift 2
            ;;
        --out)
            [ $# -ge 2 ] || usage 2
            out="$2"
            shift 2
            ;;
        -h | --help) usage 0 ;;
        -*)
            echo "sweep-lr: unknown option $1" >&2
            usage 2
            ;;
        *) break ;;
    esac
done

cfg="${1:-$repo/cfg/digits.cfg}"
[ $# -gt 0 ] && shift
rates=("$@")
[ ${#rates[@]} -gt 0 ] || rates=(0.01 0.05 0.2)

mkdir -p "$out"
logs=()
rows=()
for lr in "${rates[@]}"; do
    run="$out/lr$lr"
    rm -f "$run.jsonl" # --log appends; a rerun starts a fresh log
    echo "sweep-lr: training $(basename "$cfg") at learning rate $lr" >&2
    "$cdl" train "$cfg" --set "net.learning_rate=$lr" "${train_opts[@]}" --out "$run.cdl" \
        --log "$run.jsonl" >&2
    json=$("$cdl" eval "$run.cdl" --json)
    # cdl eval --json prints one flat object: pick "accuracy" and "loss" out of it.
    accuracy=$(sed -E 's/.*"accuracy":([^,}]*).*/\1/' <<<"$json")
    loss=$(sed -E 's/.*"loss":([^,}]*).*/\1/' <<<"$json")
    rows+=("$(printf '%-10s %-10.4f %.4f' "$lr" "$accuracy" "$loss")")
    logs+=("$run.jsonl")
done

"$cdl" plot "${logs[@]}" -o "$out/curves.png" --title "Learning-rate sweep: $(basename "$cfg")"

printf '%-10s %-10s %s\n' lr accuracy loss
printf '%s\n' "${rows[@]}"
echo "sweep-lr: curves in $out/curves.png" >&2
