#!/usr/bin/env bash
# Speed of cdl's language models against PyTorch (scripts/text_torch.py) on the same cfg,
# batch, vocabulary and thread count, measured in the same run: training tokens/s on random
# tokens (cdl bench), and greedy generation tokens/s, batch 1, with and without the cache
# (attention keys/values, recurrent state) from a model trained for a second on the KJV
# text (cdl train --time-limit 1, then cdl predict --prompt ... --json [--no-cache]).
# Usage: scripts/bench-text.sh [--threads N] [--steps N] [--warmup N] [--gen-tokens N]
#            [--torch-only] [CFG...]      (default: cfg/char_lstm.cfg cfg/gpt_tiny.cfg, 2 threads)
set -euo pipefail

cd "$(dirname "$0")/.."
args=("$@")
threads=2
steps=10
warmup=2
gen_tokens=0 # 0: what fits the context after the prompt (text_torch.py's default)
torch_only=0
cfgs=()
while [ $# -gt 0 ]; do
    case "$1" in
    --threads) threads=$2 && shift 2 ;;
    --steps) steps=$2 && shift 2 ;;
    --warmup) warmup=$2 && shift 2 ;;
    --gen-tokens) gen_tokens=$2 && shift 2 ;;
    --torch-only) torch_only=1 && shift ;;
    -h | --help) sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//' && exit 0 ;;
    -*) echo "bench-text: unknown option $1 (see --help)" >&2 && exit 2 ;;
    *) cfgs+=("$1") && shift ;;
    esac
done
[ ${#cfgs[@]} -gt 0 ] || cfgs=(cfg/char_lstm.cfg cfg/gpt_tiny.cfg)
data=cfg/kjv.data
prompt="And God said"
python=/usr/bin/python3 # Debian's, with python3-torch

fail() {
    echo "bench-text: $*" >&2
    exit 1
}

json_field() { # json_field FIELD <<< JSON
    "$python" -c 'import json, sys; print(json.loads(sys.stdin.read())[sys.argv[1]])' "$1"
}

# run_cdl WHAT CMD...: CMD's stdout; on failure its output and what it was for, then exit.
run_cdl() {
    local what=$1 out
    shift
    if ! out=$("$@" 2>"$tmp/stderr"); then
        cat "$tmp/stderr" >&2
        fail "$what failed: $*"
    fi
    printf '%s\n' "$out"
}

# needs_option CMD OPTION: fails unless `cdl CMD --help` lists OPTION.
needs_option() {
    ./cdl "$1" --help 2>&1 | grep -q -- "$2" ||
        fail "this cdl's '$1' has no $2 option, which the benchmark needs (cdl $1 --help)"
}

[ -f data/text/kjv.txt ] || scripts/text-data.sh >&2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ $torch_only = 0 ]; then
    [ -x ./cdl ] || make -j2 >&2
    needs_option train --time-limit
    needs_option predict --prompt
    needs_option predict --tokens
    needs_option predict --temperature
    needs_option predict --no-cache
fi

torch_version=$(env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE "$python" -c \
    'import torch; print(torch.__version__)')
# shellcheck source=scripts/lib/speed-table.sh
source scripts/lib/speed-table.sh
speed_table_begin bench-text "${args[@]}"
echo "PyTorch $torch_version, $threads threads; training: $steps timed steps after $warmup" \
    "warm-up on random tokens; generation: greedy, batch 1, prompt \"$prompt\""
echo "(single runs, back to back: other load on the machine shows up in the numbers)"
printf '%-20s %5s %4s %-9s %11s %11s %6s\n' cfg batch seq tokens/s cdl PyTorch ratio

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf (b > 0 ? "%.2f" : "-"), a / b }'; }
row() { # row CFG BATCH SEQ WHAT CDL TORCH
    if [ $torch_only = 1 ]; then
        printf '%-20s %5s %4s %-9s %11s %11.1f %6s\n' "$1" "$2" "$3" "$4" - "$6" -
    else
        printf '%-20s %5s %4s %-9s %11.1f %11.1f %6s\n' "$1" "$2" "$3" "$4" "$5" "$6" \
            "$(ratio "$5" "$6")"
    fi
}

for cfg in "${cfgs[@]}"; do
    name=$(basename "$cfg" .cfg)
    torch_json=$(OMP_NUM_THREADS=$threads env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE \
        "$python" scripts/text_torch.py --cfg "$cfg" --data "$data" --bench --threads "$threads" \
        --steps "$steps" --warmup "$warmup" --prompt "$prompt" --gen-tokens "$gen_tokens") ||
        fail "scripts/text_torch.py --bench failed on $cfg"
    batch=$(json_field batch <<<"$torch_json")
    seq=$(json_field seq <<<"$torch_json")
    vocab=$(json_field vocab <<<"$torch_json")
    n=$(json_field gen_tokens <<<"$torch_json")
    [ "$(json_field gen_same_text <<<"$torch_json")" = True ] ||
        echo "bench-text: warning: PyTorch's $cfg: other text with the cache than without" >&2
    cdl_train=0 cdl_cache=0 cdl_nocache=0
    if [ $torch_only = 0 ]; then
        bench_json=$(run_cdl "cdl bench" env OMP_NUM_THREADS="$threads" ./cdl bench "$cfg" \
            --batch "$batch" --steps "$steps" --warmup "$warmup" --threads "$threads" \
            --set net.vocab="$vocab" --json)
        cdl_train=$(awk -v s="$(json_field images_per_s <<<"$bench_json")" -v t="$seq" \
            'BEGIN { print s * t }')
        run_cdl "cdl train (the model to generate with)" ./cdl train "$cfg" --data "$data" \
            --threads "$threads" --time-limit 1 --out "$tmp/$name.cdl" >/dev/null
        for cache in "" --no-cache; do
            gen_json=$(run_cdl "cdl predict" env OMP_NUM_THREADS="$threads" ./cdl predict \
                "$tmp/$name.cdl" --prompt "$prompt" --tokens "$n" --temperature 0 --threads \
                "$threads" --json $cache)
            rate=$(json_field tokens_per_s <<<"$gen_json")
            if [ -z "$cache" ]; then cdl_cache=$rate; else cdl_nocache=$rate; fi
        done
    fi
    row "$name" "$batch" "$seq" train "$cdl_train" \
        "$(json_field train_tokens_per_s <<<"$torch_json")"
    row "$name" 1 "$seq" "gen cache" "$cdl_cache" \
        "$(json_field gen_tokens_per_s_cache <<<"$torch_json")"
    row "$name" 1 "$seq" "gen none" "$cdl_nocache" \
        "$(json_field gen_tokens_per_s_nocache <<<"$torch_json")"
done
echo "(generation: seq minus ${#prompt} tokens after the ${#prompt}-character prompt," \
    "or --gen-tokens; 'none': no cache, the whole context reruns for every token)"
speed_table_end
