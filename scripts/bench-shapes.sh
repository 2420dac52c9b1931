#!/usr/bin/env bash
# Single layers against PyTorch, isolated: each shape is a one-layer cfg (a convolution with
# batch norm and relu, then [avgpool] and [softmax] so both sides have a cheap loss; an LSTM or
# an attention layer between an [embedding] and a [linear] of a 16-token vocabulary), timed by
# `cdl bench` and by the PyTorch peers (scripts/bench_torch.py, scripts/text_torch.py) on
# random data, alternating cdl, Debian's PyTorch (/usr/bin/python3) and the PyPI PyTorch 2.x
# (build/torch-venv or $TORCH_VENV, when present), for a training step (forward + backward +
# update) and an inference forward (convolutions only), at each thread count. Prints each
# run's median ms per step and cdl / the faster PyTorch in speed (> 1: cdl faster).
# Usage: scripts/bench-shapes.sh [--shapes A,B,..] [--threads 1,2] [--repeats N] [--steps N]
#            [--modes train,inference] [--quick] [--list] [--cfg NAME]
#   --list: the shapes (name: layer, batch, input); --cfg NAME: print the shape's cfg;
#   --quick: 2 steps, 1 repeat (a check that everything runs, not a measurement)
#   Besides printing it, a run (not --quick) writes its table to docs/speed/ as a dated
#   Markdown file (scripts/lib/speed-table.sh; CDL_SPEED_DIR=- writes none).
set -euo pipefail

cd "$(dirname "$0")/.."
args=("$@")
# NAME -> "KIND BATCH ARGS": conv: C H W FILTERS SIZE STRIDE; lstm|attention: SEQ WIDTH
shape_spec() {
    case "$1" in
    c3_512x4) echo "conv 64 512 4 4 512 3 1" ;;    # resnet18_cifar's last stage
    c3_256x8) echo "conv 64 256 8 8 256 3 1" ;;    # resnet18_cifar's third stage
    c3_512x7) echo "conv 16 512 7 7 512 3 1" ;;    # resnet18/34's last stage
    c3_256x14) echo "conv 16 256 14 14 256 3 1" ;; # resnet18/34's third stage
    c1_1024to256x14) echo "conv 16 1024 14 14 256 1 1" ;; # resnet50's 1x1 reductions
    c1_256to1024x14) echo "conv 16 256 14 14 1024 1 1" ;; # resnet50's 1x1 expansions
    c1_512to2048x7) echo "conv 16 512 7 7 2048 1 1" ;;
    c1s2_512to1024x28) echo "conv 16 512 28 28 1024 1 2" ;; # resnet50's downsample
    c7s2_3to64x224) echo "conv 16 3 224 224 64 7 2" ;;      # resnets' first layer
    c3_512x7_b1) echo "conv 1 512 7 7 512 3 1" ;;           # batch 1 (< threads at 2)
    c3_256x14_b1) echo "conv 1 256 14 14 256 3 1" ;;
    c3_64x56_b1) echo "conv 1 64 56 56 64 3 1" ;;
    c1_1024to256x14_b1) echo "conv 1 1024 14 14 256 1 1" ;;
    lstm256) echo "lstm 32 128 256" ;;     # char_lstm's layer
    attention128) echo "attention 32 128 128" ;; # gpt_tiny's block attention
    *) return 1 ;;
    esac
}
all_shapes=c3_512x4,c3_256x8,c3_512x7,c3_256x14,c1_1024to256x14,c1_256to1024x14,c1_512to2048x7
all_shapes+=,c1s2_512to1024x28,c7s2_3to64x224,c3_512x7_b1,c3_256x14_b1,c3_64x56_b1
all_shapes+=,c1_1024to256x14_b1,lstm256,attention128
shapes=$all_shapes
thread_list=1,2
repeats=3
steps=10
warmup=2
mode_list=train,inference
print_cfg=
quick=0
while [ $# -gt 0 ]; do
    case "$1" in
    --shapes) shapes=$2 && shift 2 ;;
    --threads) thread_list=$2 && shift 2 ;;
    --repeats) repeats=$2 && shift 2 ;;
    --steps) steps=$2 && shift 2 ;;
    --modes) mode_list=$2 && shift 2 ;;
    --quick) steps=2 warmup=1 repeats=1 quick=1 && shift ;;
    --list)
        IFS=, read -r -a names <<<"$all_shapes"
        for n in "${names[@]}"; do printf '%-20s %s\n' "$n" "$(shape_spec "$n")"; done
        exit 0 ;;
    --cfg) print_cfg=$2 && shift 2 ;;
    -h | --help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//' && exit 0 ;;
    *) echo "bench-shapes: unknown argument $1 (see --help)" >&2 && exit 2 ;;
    esac
done
IFS=, read -r -a shape_names <<<"$shapes"
IFS=, read -r -a thread_counts <<<"$thread_list"
IFS=, read -r -a modes <<<"$mode_list"
for n in "${shape_names[@]}"; do
    shape_spec "$n" >/dev/null || { echo "bench-shapes: unknown shape '$n' (see --list)" >&2 && exit 2; }
done
for m in "${modes[@]}"; do
    case "$m" in train | inference) ;; *) echo "bench-shapes: unknown mode '$m'" >&2 && exit 2 ;; esac
done

fail() {
    echo "bench-shapes: $*" >&2
    exit 1
}
debian_python=/usr/bin/python3 # with python3-torch
venv=${TORCH_VENV:-build/torch-venv}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# write_cfg NAME: the shape's one-layer cfg, as $tmp/NAME.cfg.
write_cfg() {
    local kind batch a b c d e f
    read -r kind batch a b c d e f <<<"$(shape_spec "$1")"
    case "$kind" in
    conv)
        printf '[net]\nbatch=%s\nchannels=%s\nheight=%s\nwidth=%s\nlearning_rate=0.01\n' \
            "$batch" "$a" "$b" "$c"
        printf 'momentum=0.9\ndecay=0.0005\n\n[convolutional]\nfilters=%s\nsize=%s\n' "$d" "$e"
        printf 'stride=%s\npad=1\nbatch_normalize=1\nactivation=relu\n\n[avgpool]\n\n' "$f"
        printf '[softmax]\n' ;;
    lstm | attention)
        printf '[net]\nbatch=%s\nseq=%s\ninputs=1\noptimizer=adam\nlearning_rate=0.001\n' \
            "$batch" "$a"
        printf 'decay=0\n\n[embedding]\noutput=%s\n\n' "$b"
        if [ "$kind" = lstm ]; then
            printf '[lstm]\noutput=%s\n\n' "$b"
        else
            printf '[attention]\nheads=4\n\n'
        fi
        printf '[linear]\n\n[softmax]\n' ;;
    esac >"$tmp/$1.cfg"
}

if [ -n "$print_cfg" ]; then
    shape_spec "$print_cfg" >/dev/null || fail "unknown shape '$print_cfg' (see --list)"
    write_cfg "$print_cfg" && cat "$tmp/$print_cfg.cfg" && exit 0
fi
[ -x ./cdl ] || make -j2 >&2
cdl=${CDL_BIN:-./cdl}
vocab=16

# shellcheck source=scripts/bench-peers.sh
source scripts/bench-peers.sh

# ms RUNNER NAME MODE THREADS: one run's ms per step.
ms() {
    local runner=$1 name=$2 mode=$3 t=$4 kind batch json
    read -r kind batch _ <<<"$(shape_spec "$name")"
    local cfg=$tmp/$name.cfg common=(--steps "$steps" --warmup "$warmup" --threads "$t")
    local inference=()
    [ "$mode" = inference ] && inference=(--inference)
    case "$kind:$runner" in
    conv:cdl)
        json=$(quiet env OMP_NUM_THREADS="$t" "$cdl" bench "$cfg" "${common[@]}" \
            "${inference[@]}" --json)
        awk -v r="$(json_field images_per_s <<<"$json")" -v b="$batch" 'BEGIN { print 1e3 * b / r }' ;;
    *:cdl)
        json=$(quiet env OMP_NUM_THREADS="$t" "$cdl" bench "$cfg" "${common[@]}" \
            --set net.vocab=$vocab --json)
        awk -v r="$(json_field images_per_s <<<"$json")" -v b="$batch" 'BEGIN { print 1e3 * b / r }' ;;
    conv:*)
        local py=${runner}_python
        json=$(quiet torch_env OMP_NUM_THREADS="$t" "${!py}" scripts/bench_torch.py --cfg "$cfg" \
            "${common[@]}" "${inference[@]}")
        json_field ms_per_step <<<"$json" ;;
    *)
        local py=${runner}_python seq
        seq=$(shape_spec "$name" | cut -d' ' -f3)
        json=$(quiet torch_env OMP_NUM_THREADS="$t" "${!py}" scripts/text_torch.py --cfg "$cfg" \
            --vocab $vocab --bench --gen-tokens 1 "${common[@]}")
        awk -v r="$(json_field train_tokens_per_s <<<"$json")" -v n="$((batch * seq))" \
            'BEGIN { print 1e3 * n / r }' ;;
    esac
}

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }

# shellcheck source=scripts/lib/speed-table.sh
source scripts/lib/speed-table.sh
[ $quick = 1 ] || speed_table_begin bench-shapes "${args[@]}"
speed_table_meta threads "$(IFS=,; echo "${thread_counts[*]}")"
speed_table_meta repeats "$repeats (medians of alternating runs), $steps steps after $warmup warm-up"
speed_table_columns shape mode threads batch "cdl ms" "PyTorch 1 ms" "PyTorch 2 ms" \
    "faster PyTorch / cdl"
echo "cdl $("$cdl" --version | cut -d' ' -f2-) ($cdl)"
echo "PyTorch 1: $torch1_version ($torch1_python); PyTorch 2: $torch2_version ($venv)"
echo "median ms per step of $repeats alternating repeats, $steps steps after $warmup warm-up;" \
    "load average now $(cut -d' ' -f1-3 /proc/loadavg): other processes show up in the numbers"
printf '%-20s %-9s %3s %5s %9s %9s %9s %6s\n' shape mode thr batch cdl_ms torch1 torch2 pt/cdl
for name in "${shape_names[@]}"; do
    write_cfg "$name"
    read -r kind batch _ <<<"$(shape_spec "$name")"
    # Both sides build the same layer: the same parameter count.
    if [ "$kind" = conv ]; then
        info=$(quiet "$cdl" info "$tmp/$name.cfg" --json)
        torch_params=$(quiet torch_env "$debian_python" scripts/bench_torch.py --cfg "$tmp/$name.cfg" --params)
    else
        info=$(quiet "$cdl" info "$tmp/$name.cfg" --set net.vocab=$vocab --json)
        torch_params=$(quiet torch_env "$debian_python" scripts/text_torch.py --cfg "$tmp/$name.cfg" \
            --vocab $vocab --params)
    fi
    [ "$torch_params" = "$(json_field params <<<"$info")" ] ||
        fail "$name: PyTorch's layer has $torch_params parameters, cdl's $(json_field params <<<"$info")"
    for mode in "${modes[@]}"; do
        [ "$kind" != conv ] && [ "$mode" = inference ] && continue # the peers time training only
        for t in "${thread_counts[@]}"; do
            rm -f "$tmp"/ms.*
            for ((r = 0; r < repeats; r++)); do
                for runner in "${runners[@]}"; do ms "$runner" "$name" "$mode" "$t" >>"$tmp/ms.$runner"; done
            done
            declare -A med=()
            for runner in cdl torch1 torch2; do
                med[$runner]=$([ -f "$tmp/ms.$runner" ] && median <"$tmp/ms.$runner" || echo -)
            done
            best=$(printf '%s\n' "${med[torch1]}" "${med[torch2]}" | grep -v -- - | sort -g | head -1)
            printf '%-20s %-9s %3s %5s %9.2f %9.2f %9s %6.2f\n' "$name" "$mode" "$t" "$batch" \
                "${med[cdl]}" "${med[torch1]}" \
                "$([ "${med[torch2]}" = - ] && echo - || printf '%.2f' "${med[torch2]}")" \
                "$(awk -v a="${med[cdl]}" -v b="$best" 'BEGIN { print b / a }')"
            speed_table_row "$name" "$mode" "$t" "$batch" "$(printf '%.2f' "${med[cdl]}")" \
                "$(printf '%.2f' "${med[torch1]}")" \
                "$([ "${med[torch2]}" = - ] && echo - || printf '%.2f' "${med[torch2]}")" \
                "$(awk -v a="${med[cdl]}" -v b="$best" 'BEGIN { printf "%.2f", b / a }')"
        done
    done
done
echo "(pt/cdl: the faster PyTorch's ms over cdl's, > 1: cdl faster; each step includes the" \
    "cheap [avgpool]+[softmax] loss, or the [embedding]+[linear] of a 16-token vocabulary)"
speed_table_end
