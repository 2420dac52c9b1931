#!/usr/bin/env bash
# Translation on 2 cores: cfg/translate.cfg (a character-level Transformer encoder-decoder, the
# King James Bible into the Reina-Valera 1909) trained by cdl, and a PyTorch nn.Transformer of
# the same sizes and parameter count (scripts/seq2seq_torch.py, Debian's torch), each for the
# same wall time on the same training pairs with the same threads, one after the other; then
# both decode the same validation sources greedily and are scored against their targets by
# BLEU and chrF (sacreBLEU's defaults: cdl eval's own figures for cdl, and sacreBLEU on both
# hypothesis files where python3 has it). Prints steps, training pairs/s and its ratio, the
# validation loss per target token, BLEU and chrF, and one verse translated by cdl greedily
# and by beam search (--beam 4).
# The pairs: data/text/kjv-rv1909.tsv (scripts/text-data.sh), every 20th the validation set,
# the rest the training set; verses longer than the cfg's 128 source / 128 target characters
# are left out by both. Both draw batches from cfg/translate.data's length buckets (bucket=) and
# compute each padded to its longest source and target. Both run with OMP_WAIT_POLICY=passive (a fair share of a busy machine),
# PyTorch's OpenBLAS with --threads threads (as scripts/text_torch.py runs Debian's torch).
# cdl's time includes its validation after each epoch; PyTorch's training has none.
# Usage: scripts/bench-seq2seq.sh [--time-limit S] [--threads N] [--quick]
#   default: 600 s each, 2 threads. --quick: 20 s each, 20 validation pairs, no dated file (a
#   check that everything runs, not a measurement). A run (not --quick) writes its table to
#   docs/speed/ as a dated Markdown file (scripts/lib/speed-table.sh; CDL_SPEED_DIR=- writes none).
set -euo pipefail

cd "$(dirname "$0")/.."
args=("$@")
time_limit=600
threads=2
quick=0
while [ $# -gt 0 ]; do
    case "$1" in
    --time-limit) time_limit=$2 && shift 2 ;;
    --threads) threads=$2 && shift 2 ;;
    --quick) time_limit=20 quick=1 && shift ;;
    -h | --help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//' && exit 0 ;;
    *) echo "bench-seq2seq: unknown argument $1 (see --help)" >&2 && exit 2 ;;
    esac
done
fail() { echo "bench-seq2seq: $*" >&2 && exit 1; }
cfg=cfg/translate.cfg
pairs=data/text/kjv-rv1909.tsv
torch_python=/usr/bin/python3 # Debian's, with python3-torch
[ -x ./cdl ] || fail "./cdl is missing: run make first"
[ -f "$pairs" ] || fail "$pairs is missing: run scripts/text-data.sh first"
"$torch_python" -c 'import torch' 2>/dev/null || fail "$torch_python has no torch (python3-torch)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OMP_WAIT_POLICY=passive
# the table's header (date, load average) is read now, before either tool runs
# shellcheck source=scripts/lib/speed-table.sh
source scripts/lib/speed-table.sh
[ $quick = 1 ] || speed_table_begin bench-seq2seq "${args[@]}"

awk 'NR % 20 != 0' "$pairs" >"$tmp/train.tsv"
awk -v most=$((quick ? 20 : 1000000)) 'NR % 20 == 0 && ++n <= most' "$pairs" >"$tmp/valid.tsv"
bucket=$(sed -n 's/^bucket=//p' cfg/translate.data | head -1)
bucket=${bucket:-0}
printf 'type=pairs\ntokens=char\ntrain=%s\nvalid=%s\nbucket=%s\n' "$tmp/train.tsv" "$tmp/valid.tsv" \
    "$bucket" >"$tmp/pairs.data"
json_field() { "$torch_python" -c 'import json, sys; print(json.loads(sys.stdin.read())[sys.argv[1]])' "$1"; }

echo "bench-seq2seq: cdl trains $cfg for $time_limit s on $threads threads" >&2
./cdl train "$cfg" --data "$tmp/pairs.data" --time-limit "$time_limit" --threads "$threads" \
    --out "$tmp/cdl.cdl" --log "$tmp/cdl.log" >"$tmp/cdl.train" 2>&1 ||
    { cat "$tmp/cdl.train" >&2 && fail "cdl train failed"; }
last=$(grep '"type":"epoch"' "$tmp/cdl.log" | tail -1)
cdl_steps=$(json_field step <<<"$last")
cdl_params=$(./cdl info "$tmp/cdl.cdl" --json | json_field params)
batch=$(sed -n 's/^batch=//p' "$cfg" | head -1)
cdl_rate=$(awk -v s="$cdl_steps" -v b="$batch" -v t="$(json_field elapsed_s <<<"$last")" \
    'BEGIN { printf "%.2f", s * b / t }')
eval_json=$(./cdl eval "$tmp/cdl.cdl" --data "$tmp/pairs.data" --threads "$threads" --json)

echo "bench-seq2seq: PyTorch trains the same sizes for $time_limit s" >&2
torch_json=$(OPENBLAS_NUM_THREADS=$threads "$torch_python" scripts/seq2seq_torch.py --train "$tmp/train.tsv" \
    --valid "$tmp/valid.tsv" --source 128 --seq 129 --width 128 --heads 4 --ff 512 --layers 2 \
    --batch "$batch" --lr 0.001 --warmup 200 --time-limit "$time_limit" --threads "$threads" --bucket "$bucket" \
    --hypotheses "$tmp/torch.hyp" --kept "$tmp/kept")
torch_params=$(json_field params <<<"$torch_json")
[ "$torch_params" = "$cdl_params" ] ||
    fail "PyTorch's model has $torch_params parameters, cdl's $cdl_params: the sizes here no longer match $cfg"
./cdl predict "$tmp/cdl.cdl" --sources "$tmp/kept.sources" --threads "$threads" >"$tmp/cdl.hyp"

# sacre FILE: sacreBLEU's BLEU and chrF of FILE against the kept targets ("- -" without it)
sacre() {
    python3 - "$1" "$tmp/kept.targets" <<'PY' 2>/dev/null || echo "- -"
import sys
import sacrebleu
hyps = open(sys.argv[1], encoding="utf-8").read().split("\n")[:-1]
refs = open(sys.argv[2], encoding="utf-8").read().split("\n")[:-1]
assert len(hyps) == len(refs)
print(f"{sacrebleu.corpus_bleu(hyps, [refs]).score:.2f} {sacrebleu.corpus_chrf(hyps, [refs]).score:.2f}")
PY
}
read -r cdl_sacre_bleu cdl_sacre_chrf <<<"$(sacre "$tmp/cdl.hyp")"
read -r torch_sacre_bleu torch_sacre_chrf <<<"$(sacre "$tmp/torch.hyp")"
round2() { awk -v x="$1" 'BEGIN { printf "%.2f", x }'; }

speed_table_meta threads "$threads"
speed_table_meta "time limit" "$time_limit s each"
speed_table_meta "pairs" "$(wc -l <"$tmp/train.tsv") training, $(wc -l <"$tmp/kept.targets") validation decoded ($(wc -l <"$tmp/valid.tsv") held out)"
speed_table_meta PyTorch "$(json_field torch <<<"$torch_json") ($torch_python)"
speed_table_columns tool params steps "pairs/s" "valid loss" BLEU chrF "sacreBLEU BLEU" "sacreBLEU chrF"
printf '%-8s %8s %7s %8s %10s %6s %6s %14s %14s\n' tool params steps pairs/s "valid loss" BLEU chrF \
    "sacreBLEU BLEU" "sacreBLEU chrF"
row() {
    printf '%-8s %8s %7s %8s %10s %6s %6s %14s %14s\n' "$@"
    speed_table_row "$@"
}
row cdl "$cdl_params" "$cdl_steps" "$cdl_rate" "$(round2 "$(json_field loss <<<"$eval_json")")" \
    "$(round2 "$(json_field bleu <<<"$eval_json")")" "$(round2 "$(json_field chrf <<<"$eval_json")")" \
    "$cdl_sacre_bleu" "$cdl_sacre_chrf"
row PyTorch "$torch_params" "$(json_field steps <<<"$torch_json")" \
    "$(round2 "$(json_field pairs_per_s <<<"$torch_json")")" \
    "$(round2 "$(json_field valid_loss <<<"$torch_json")")" - - "$torch_sacre_bleu" "$torch_sacre_chrf"
speed_ratio=$(awk -v a="$cdl_rate" -v b="$(json_field pairs_per_s <<<"$torch_json")" \
    'BEGIN { printf "%.2f", a / b }')
echo "cdl / PyTorch training pairs/s: $speed_ratio"
verse="And God said, Let there be light: and there was light."
echo "source:        $verse"
echo "cdl greedy:    $(./cdl predict "$tmp/cdl.cdl" --source "$verse" --threads "$threads")"
echo "cdl --beam 4:  $(./cdl predict "$tmp/cdl.cdl" --source "$verse" --beam 4 --threads "$threads")"
echo "reference:     $(grep -F "$verse" "$pairs" | cut -f2 | head -1)"
speed_table_meta "cdl / PyTorch pairs/s" "$speed_ratio"
[ $quick = 1 ] || speed_table_end
