#!/usr/bin/env bash
# A/B comparison of two cdl binaries (e.g. before and after a refactor) on the same cfgs:
# training throughput (`cdl bench`, runs alternating A, B, A, B, ... so that drifting load hits
# both alike) and peak memory (`cdl profile`). Prints each side's median, the ratio B/A, and
# the spread of the runs. Usage:
#   scripts/bench-ab.sh A_BIN B_BIN [ROUNDS] [CFG...]
# (default 5 rounds; cfgs: fashion, resnet18_cifar, gpt_tiny; threads from THREADS [2]; timed
# steps per run from STEPS [20], after WARMUP [3]).
set -euo pipefail

cd "$(dirname "$0")/.."
[ $# -ge 2 ] || { echo "usage: scripts/bench-ab.sh A_BIN B_BIN [ROUNDS] [CFG...]" >&2; exit 2; }
a_bin=$1
b_bin=$2
rounds=${3:-5}
shift $(($# < 3 ? $# : 3))
cfgs=("$@")
[ ${#cfgs[@]} -gt 0 ] || cfgs=(cfg/fashion.cfg cfg/resnet18_cifar.cfg cfg/gpt_tiny.cfg)
threads=${THREADS:-2}
steps=${STEPS:-20}
warmup=${WARMUP:-3}
python=/usr/bin/python3

# field FIELD <<< JSON: one top-level value of a JSON object.
field() {
    "$python" -c 'import json, sys; print(json.loads(sys.stdin.read())[sys.argv[1]])' "$1"
}
# stats V...: "median min-max" of the numbers given.
stats() {
    printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END {
        m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
        printf "%.1f %.1f-%.1f", m, v[1], v[NR] }'
}

echo "A: $a_bin"
echo "B: $b_bin"
echo "$rounds alternating rounds of \`cdl bench --threads $threads --steps $steps --warmup $warmup\` per cfg; peak memory from \`cdl profile\`"
printf '%-24s %-14s %22s %22s %7s\n' cfg figure "A median (min-max)" "B median (min-max)" "B/A"
for cfg in "${cfgs[@]}"; do
    rate_key=images_per_s
    a_rates=()
    b_rates=()
    for _ in $(seq "$rounds"); do
        for side in a b; do
            bin=${side}_bin
            json=$(OMP_NUM_THREADS=$threads "${!bin}" bench "$cfg" --threads "$threads" --steps "$steps" \
                --warmup "$warmup" --json)
            grep -q '"tokens_per_s"' <<<"$json" && rate_key=tokens_per_s
            rate=$(field "$rate_key" <<<"$json")
            if [ $side = a ]; then a_rates+=("$rate"); else b_rates+=("$rate"); fi
        done
    done
    a_stats=$(stats "${a_rates[@]}")
    b_stats=$(stats "${b_rates[@]}")
    ratio=$(awk -v a="${a_stats%% *}" -v b="${b_stats%% *}" 'BEGIN { printf "%.3f", b / a }')
    printf '%-24s %-14s %22s %22s %7s\n' "$cfg" "$rate_key" "$a_stats" "$b_stats" "$ratio"

    a_peak=$(OMP_NUM_THREADS=$threads "$a_bin" profile "$cfg" --threads "$threads" --iters 2 --json |
        field peak_rss_bytes)
    b_peak=$(OMP_NUM_THREADS=$threads "$b_bin" profile "$cfg" --threads "$threads" --iters 2 --json |
        field peak_rss_bytes)
    ratio=$(awk -v a="$a_peak" -v b="$b_peak" 'BEGIN { printf "%.3f", b / a }')
    printf '%-24s %-14s %22.1f %22.1f %7s\n' "$cfg" "peak MiB" "$(awk -v v="$a_peak" 'BEGIN { print v / 1048576 }')" \
        "$(awk -v v="$b_peak" 'BEGIN { print v / 1048576 }')" "$ratio"
done
