#!/usr/bin/env bash
# CPU speed of cdl against PyTorch on the same nets, batch, steps and thread count (random
# data): cdl, Debian's PyTorch (/usr/bin/python3, python3-torch) and the PyPI PyTorch 2.x of
# scripts/torch-venv.sh (build/torch-venv, or $TORCH_VENV) run in alternation, N repeats, and
# the table shows the median images/s (tokens/s for text nets), cdl / the faster PyTorch, and
# cdl's GFLOP/s (cdl info's FLOPs per sample x 3 for training, x 1 for inference, x the rate)
# as a fraction of the fp32 FMA peak scripts/fma_peak.c measures at that thread count.
# Usage: scripts/bench-cpu.sh [--nets A,B,..] [--threads 1,2] [--repeats N] [--steps N]
#            [--warmup N] [--quick]
#   nets: resnet18_cifar resnet18 fashion cifar_small char_lstm gpt_tiny resnet50
#         resnet18_cifar_inference resnet18_inference resnet50_inference resnet18_cifar_bf16
#         resnet50_bf16 densenet121 densenet121_inference inception_v3 inception_v3_inference
#         and the zoo's efficientnet_b0 mobilenet_v3_small mobilenet_v3_large convnext_tiny
#         vit_b_16 shufflenet_v2_x1_0 regnet_y_400mf, each also as NAME_inference (PyTorch
#         runs torchvision's model of the name: scripts/bench_torch.py)
#         (default: all; _bf16: cdl
#         --precision bf16 against PyTorch under torch.autocast("cpu", torch.bfloat16));
#         --quick: 2 steps, 1 warm-up, 1 repeat (a check that everything runs, not a
#         measurement); --steps: every net's (default: per net)
#   Besides printing it, a run (not --quick) writes its table to docs/speed/ as a dated
#   Markdown file (scripts/lib/speed-table.sh; CDL_SPEED_DIR=- writes none).
set -euo pipefail

cd "$(dirname "$0")/.."
args=("$@")
quick=0
all_nets=resnet18_cifar,resnet18,fashion,cifar_small,char_lstm,gpt_tiny,resnet50
all_nets+=,resnet18_cifar_inference,resnet18_inference,resnet50_inference
all_nets+=,resnet18_cifar_bf16,resnet50_bf16,densenet121,densenet121_inference
all_nets+=,inception_v3,inception_v3_inference
zoo_nets=efficientnet_b0,mobilenet_v3_small,mobilenet_v3_large,convnext_tiny,vit_b_16
zoo_nets+=,shufflenet_v2_x1_0,regnet_y_400mf
all_nets+=,$zoo_nets,${zoo_nets//,/_inference,}_inference
nets=$all_nets
thread_list=1,2
repeats=3
steps=
warmup=2
while [ $# -gt 0 ]; do
    case "$1" in
    --nets) nets=$2 && shift 2 ;;
    --threads) thread_list=$2 && shift 2 ;;
    --repeats) repeats=$2 && shift 2 ;;
    --steps) steps=$2 && shift 2 ;;
    --warmup) warmup=$2 && shift 2 ;;
    --quick) steps=2 warmup=1 repeats=1 quick=1 && shift ;;
    -h | --help) sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//' && exit 0 ;;
    *) echo "bench-cpu: unknown argument $1 (see --help)" >&2 && exit 2 ;;
    esac
done

# NAME -> "CFG BATCH MODE DEFAULT_STEPS [bf16]" (batch 0: the cfg's; mode train|inference;
# bf16: cdl --precision bf16, PyTorch under autocast)
net_spec() {
    case "$1" in
    resnet18_cifar) echo "cfg/resnet18_cifar.cfg 64 train 10" ;;
    resnet18_cifar_bf16) echo "cfg/resnet18_cifar.cfg 64 train 10 bf16" ;;
    resnet50_bf16) echo "cfg/resnet50.cfg 16 train 5 bf16" ;;
    resnet18) echo "cfg/resnet18.cfg 16 train 10" ;;
    fashion) echo "cfg/fashion.cfg 64 train 30" ;;
    cifar_small) echo "cfg/cifar_small.cfg 64 train 30" ;;
    char_lstm) echo "cfg/char_lstm.cfg 0 train 10" ;;
    gpt_tiny) echo "cfg/gpt_tiny.cfg 0 train 10" ;;
    resnet50) echo "cfg/resnet50.cfg 16 train 5" ;;
    resnet18_cifar_inference) echo "cfg/resnet18_cifar.cfg 64 inference 10" ;;
    resnet18_inference) echo "cfg/resnet18.cfg 16 inference 10" ;;
    resnet50_inference) echo "cfg/resnet50.cfg 16 inference 10" ;;
    densenet121) echo "cfg/densenet121.cfg 8 train 5" ;;
    densenet121_inference) echo "cfg/densenet121.cfg 16 inference 10" ;;
    inception_v3) echo "cfg/inception_v3.cfg 8 train 5" ;;
    inception_v3_inference) echo "cfg/inception_v3.cfg 16 inference 10" ;;
    efficientnet_b0 | mobilenet_v3_small | mobilenet_v3_large | convnext_tiny | vit_b_16 | \
        shufflenet_v2_x1_0 | regnet_y_400mf) echo "cfg/$1.cfg 8 train 3" ;;
    efficientnet_b0_inference | mobilenet_v3_small_inference | mobilenet_v3_large_inference | \
        convnext_tiny_inference | vit_b_16_inference | shufflenet_v2_x1_0_inference | \
        regnet_y_400mf_inference) echo "cfg/${1%_inference}.cfg 16 inference 5" ;;
    *) return 1 ;;
    esac
}
IFS=, read -r -a net_names <<<"$nets"
IFS=, read -r -a thread_counts <<<"$thread_list"
for n in "${net_names[@]}"; do
    net_spec "$n" >/dev/null || { echo "bench-cpu: unknown net '$n' (one of $all_nets)" >&2 && exit 2; }
done

fail() {
    echo "bench-cpu: $*" >&2
    exit 1
}
debian_python=/usr/bin/python3 # with python3-torch
venv=${TORCH_VENV:-build/torch-venv}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
[ -x ./cdl ] || make -j2 >&2

# shellcheck source=scripts/bench-peers.sh
source scripts/bench-peers.sh

# The FMA peak per thread count (GFLOP/s), from the bundled probe.
declare -A peak
if grep -qw avx2 /proc/cpuinfo && grep -qw fma /proc/cpuinfo; then
    cc -O3 -mavx2 -mfma -fopenmp scripts/fma_peak.c -o "$tmp/fma_peak"
    for t in "${thread_counts[@]}"; do peak[$t]=$("$tmp/fma_peak" "$t"); done
fi

needs_text=0
for n in "${net_names[@]}"; do case "$n" in char_lstm | gpt_tiny) needs_text=1 ;; esac done
if [ $needs_text = 1 ]; then
    [ -f data/text/kjv.txt ] || scripts/text-data.sh >&2
    text_vocab=$(quiet torch_env "$debian_python" -c \
        'import sys; sys.path.insert(0, "scripts"); from text_torch import TextData
print(TextData("cfg/kjv.data").vocab)')
fi

# shellcheck source=scripts/lib/speed-table.sh
source scripts/lib/speed-table.sh
[ $quick = 1 ] || speed_table_begin bench-cpu "${args[@]}"
speed_table_meta threads "$thread_list"
speed_table_meta repeats "$repeats (medians of alternating runs)"
for t in "${thread_counts[@]}"; do
    speed_table_meta "FMA peak, $t thread(s)" "${peak[$t]:-unknown} GFLOP/s"
done
speed_table_columns net threads batch unit cdl "PyTorch 1" "PyTorch 2" "cdl / faster" GFLOP/s \
    "of FMA peak"

echo "cdl $(./cdl --version | cut -d' ' -f2-); OpenBLAS kernels: $(./cdl doctor --json |
    "$debian_python" -c 'import json, sys; print(json.load(sys.stdin)["blas"]["core"])')" \
    "(OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-unset}; Debian's PyTorch 1.13 calls the system BLAS," \
    "OpenBLAS, with the kernels OpenBLAS itself picks: Prescott where cdl says it fell back)"
echo "PyTorch 1: $torch1_version ($torch1_python); PyTorch 2: $torch2_version ($venv)"
for t in "${thread_counts[@]}"; do
    echo "FMA peak, $t thread(s): ${peak[$t]:-unknown (no AVX2/FMA)} GFLOP/s (scripts/fma_peak.c)"
done
echo "median of $repeats alternating repeats (cdl, PyTorch 1, PyTorch 2); load average now" \
    "$(cut -d' ' -f1-3 /proc/loadavg): other processes show up in the numbers"
printf '%-24s %3s %5s %-6s %9s %9s %9s %6s %8s %6s\n' net thr batch unit cdl torch1 torch2 \
    cdl/pt GFLOP/s peak

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }

# rate RUNNER NAME THREADS: one run's images/s or tokens/s.
rate() {
    local runner=$1 name=$2 t=$3 cfg batch mode def_steps precision n_steps json
    read -r cfg batch mode def_steps precision <<<"$(net_spec "$name")"
    n_steps=${steps:-$def_steps}
    local common=(--steps "$n_steps" --warmup "$warmup" --threads "$t")
    local inference=() cdl_bf16=() torch_bf16=()
    [ "$mode" = inference ] && inference=(--inference)
    [ "$precision" = bf16 ] && cdl_bf16=(--precision bf16) torch_bf16=(--bf16)
    case "$name:$runner" in
    char_lstm:cdl | gpt_tiny:cdl)
        json=$(quiet env OMP_NUM_THREADS="$t" ./cdl bench "$cfg" "${common[@]}" \
            --set net.vocab="$text_vocab" --json)
        awk -v s="$(json_field images_per_s <<<"$json")" -v q="$seq" 'BEGIN { print s * q }' ;;
    char_lstm:* | gpt_tiny:*)
        local py=${runner}_python
        json=$(quiet torch_env OMP_NUM_THREADS="$t" "${!py}" scripts/text_torch.py --cfg "$cfg" \
            --data cfg/kjv.data --bench --gen-tokens 1 "${common[@]}")
        json_field train_tokens_per_s <<<"$json" ;;
    *:cdl)
        json=$(quiet env OMP_NUM_THREADS="$t" ./cdl bench "$cfg" --batch "$batch" \
            "${common[@]}" "${inference[@]}" "${cdl_bf16[@]}" --json)
        json_field images_per_s <<<"$json" ;;
    *)
        local py=${runner}_python
        json=$(quiet torch_env OMP_NUM_THREADS="$t" "${!py}" scripts/bench_torch.py --cfg "$cfg" \
            --batch "$batch" "${common[@]}" "${inference[@]}" "${torch_bf16[@]}")
        json_field images_per_s <<<"$json" ;;
    esac
}

for name in "${net_names[@]}"; do
    read -r cfg batch mode _ <<<"$(net_spec "$name")"
    info_set=()
    unit=img/s
    seq=1
    case "$name" in char_lstm | gpt_tiny) info_set=(--set net.vocab="$text_vocab") unit=tok/s ;; esac
    info=$(quiet ./cdl info "$cfg" "${info_set[@]}" --json)
    flops=$(json_field flops <<<"$info")
    if [ "$unit" = tok/s ]; then
        seq=$(json_field seq <<<"$info")
        batch=$("$debian_python" -c 'import sys; sys.path.insert(0, "scripts")
from bench_torch import parse_cfg; print(parse_cfg(sys.argv[1])[0][1].get("batch", 1))' "$cfg")
    fi
    if [ "$unit" = tok/s ]; then
        torch_params=$(quiet torch_env "$debian_python" scripts/text_torch.py --cfg "$cfg" \
            --data cfg/kjv.data --params)
    else
        torch_params=$(quiet torch_env "$debian_python" scripts/bench_torch.py --cfg "$cfg" --params)
    fi
    [ "$torch_params" = "$(json_field params <<<"$info")" ] ||
        fail "$cfg: PyTorch's net has $torch_params parameters, cdl's $(json_field params <<<"$info")"
    mult=3
    [ "$mode" = inference ] && mult=1
    for t in "${thread_counts[@]}"; do
        rm -f "$tmp"/rate.*
        for ((r = 0; r < repeats; r++)); do
            for runner in "${runners[@]}"; do rate "$runner" "$name" "$t" >>"$tmp/rate.$runner"; done
        done
        declare -A med=()
        for runner in cdl torch1 torch2; do
            med[$runner]=$([ -f "$tmp/rate.$runner" ] && median <"$tmp/rate.$runner" || echo -)
        done
        best=$(printf '%s\n' "${med[torch1]}" "${med[torch2]}" | grep -v -- - | sort -g | tail -1)
        ratio=$(awk -v a="${med[cdl]}" -v b="$best" 'BEGIN { printf "%.2f", a / b }')
        gflops=$(awk -v f="$flops" -v m="$mult" -v r="${med[cdl]}" -v q="$seq" \
            'BEGIN { printf "%.1f", f * m * r / q / 1e9 }')
        frac=$(awk -v g="$gflops" -v p="${peak[$t]:-0}" \
            'BEGIN { if (p > 0) printf "%.0f%%", 100 * g / p; else print "-" }')
        printf '%-24s %3s %5s %-6s %9s %9s %9s %6s %8s %6s\n' "$name" "$t" "$batch" "$unit" \
            "$(printf '%.1f' "${med[cdl]}")" "$(printf '%.1f' "${med[torch1]}")" \
            "$([ "${med[torch2]}" = - ] && echo - || printf '%.1f' "${med[torch2]}")" "$ratio" \
            "$gflops" "$frac"
        speed_table_row "$name" "$t" "$batch" "$unit" "$(printf '%.1f' "${med[cdl]}")" \
            "$(printf '%.1f' "${med[torch1]}")" \
            "$([ "${med[torch2]}" = - ] && echo - || printf '%.1f' "${med[torch2]}")" "$ratio" \
            "$gflops" "$frac"
    done
done
echo "(cdl/pt: cdl over the faster PyTorch; GFLOP/s and peak: cdl's, FLOPs from cdl info;" \
    "training counts 3x the forward FLOPs; _bf16 rows against the float32 peak too)"
speed_table_end
