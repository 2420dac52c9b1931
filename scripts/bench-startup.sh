#!/usr/bin/env bash
# Start-up and batch-1 latency of the small models: the wall time of one `cdl predict MODEL
# IMAGE` process (start, model load, PNG decode, one forward, the answer printed) against one
# Python process doing the same with ONNX Runtime on the model `cdl export onnx` writes
# (scripts/bench_startup_ort.py: import, session, PIL decode, run, print), alternating, medians.
# Besides, the batch-1 latency inside a running process: `cdl bench --inference --batch 1`
# against ONNX Runtime's session.run (scripts/bench_ort.py), where start-up is paid once.
# ONNX Runtime from the pyenv python3, or build/torch-venv's ($TORCH_VENV); its C API is not a
# peer here: the PyPI wheel ships libonnxruntime.so without its headers.
# Nets: digits (8x8 grey) and fashion (28x28 grey), cfg/NAME.cfg with random weights (seed 1),
# saved as a checkpoint through `cdl import` of the export, so that both tools load a model file;
# the image is a random PNG of the net's own size (no resizing), and the two processes must
# print the same class (scores to 1e-4), or the script stops.
# Usage: scripts/bench-startup.sh [--nets digits,fashion] [--threads 1] [--repeats N] [--quick]
#   --quick: digits, 3 repeats, no dated file (a check that everything runs, not a measurement).
#   Besides printing it, a run (not --quick) writes its table to docs/speed/ as a dated Markdown
#   file (scripts/lib/speed-table.sh; CDL_SPEED_DIR=- writes none).
set -euo pipefail

cd "$(dirname "$0")/.."
args=("$@")
nets=digits,fashion
threads=1
repeats=21
quick=0
while [ $# -gt 0 ]; do
    case "$1" in
    --nets) nets=$2 && shift 2 ;;
    --threads) threads=$2 && shift 2 ;;
    --repeats) repeats=$2 && shift 2 ;;
    --quick) nets=digits repeats=3 quick=1 && shift ;;
    -h | --help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//' && exit 0 ;;
    *) echo "bench-startup: unknown argument $1 (see --help)" >&2 && exit 2 ;;
    esac
done
IFS=, read -r -a net_names <<<"$nets"
fail() { echo "bench-startup: $*" >&2 && exit 1; }

py=python3
if [ -n "${TORCH_VENV:-}" ]; then py=$TORCH_VENV/bin/python; fi
"$py" -c 'import onnxruntime, PIL, numpy' 2>/dev/null ||
    fail "$py has no onnxruntime, PIL or numpy (scripts/torch-venv.sh installs a venv with them)"
[ -x ./cdl ] || fail "./cdl is missing: run make first"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OMP_NUM_THREADS=$threads

# now_s: the wall clock in seconds, to the nanosecond
now_s() { date +%s.%N; }
# elapsed START: seconds since START (a now_s)
elapsed() { awk -v a="$1" -v b="$(now_s)" 'BEGIN { printf "%.6f\n", b - a }'; }
# median: the middle of the numbers on stdin
median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
# ms SECONDS [PLACES]: to milliseconds, two places or PLACES
ms() { awk -v s="$1" -v p="${2:-2}" 'BEGIN { printf "%.*f", p, s * 1e3 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }

# shellcheck source=scripts/lib/speed-table.sh
source scripts/lib/speed-table.sh
[ $quick = 1 ] || speed_table_begin bench-startup "${args[@]}"
speed_table_meta threads "$threads"
speed_table_meta repeats "$repeats (medians of alternating runs)"
speed_table_meta "ONNX Runtime" "$("$py" -c 'import onnxruntime; print(onnxruntime.__version__)') ($py)"
speed_table_columns net "cdl process ms" "ORT process ms" "ORT / cdl" "cdl b1 ms" "ORT b1 ms" \
    "ORT / cdl (b1)"
printf '%-8s %14s %14s %10s %10s %10s %14s\n' net "cdl process ms" "ORT process ms" "ORT/cdl" \
    "cdl b1 ms" "ORT b1 ms" "ORT/cdl (b1)"

for net in "${net_names[@]}"; do
    cfg=cfg/$net.cfg
    [ -f "$cfg" ] || fail "$cfg: no such cfg"
    ./cdl export onnx "$cfg" --seed 1 -o "$tmp/$net.onnx" >/dev/null
    ./cdl import "$tmp/$net.onnx" -o "$tmp/$net.cfg" --out "$tmp/$net.cdl" >/dev/null
    "$py" - "$tmp/$net.onnx" "$tmp/$net.png" <<'PY'
import sys
import numpy as np
import onnxruntime
from PIL import Image
c, h, w = onnxruntime.InferenceSession(sys.argv[1]).get_inputs()[0].shape[1:]
pixels = np.random.default_rng(7).integers(0, 256, (h, w, c), dtype=np.uint8)
Image.fromarray(pixels[:, :, 0] if c == 1 else pixels).save(sys.argv[2])
PY
    cdl_run=(./cdl predict "$tmp/$net.cdl" "$tmp/$net.png" --top 1 --json --threads "$threads")
    ort_run=("$py" scripts/bench_startup_ort.py "$tmp/$net.onnx" "$tmp/$net.png" --threads "$threads")
    cdl_answer=$("${cdl_run[@]}" | "$py" -c \
        'import json, sys; t = json.load(sys.stdin)[0]["top"][0]; print(t["index"], t["probability"])')
    ort_answer=$("${ort_run[@]}")
    read -r cdl_class cdl_score <<<"$cdl_answer"
    read -r ort_class ort_score <<<"$ort_answer"
    [ "$cdl_class" = "$ort_class" ] &&
        awk -v a="$cdl_score" -v b="$ort_score" 'BEGIN { exit !((a - b) ^ 2 < 1e-8) }' ||
        fail "$net: cdl answers class $cdl_class ($cdl_score), ONNX Runtime $ort_class ($ort_score)"
    : >"$tmp/cdl.s"
    : >"$tmp/ort.s"
    for _ in $(seq "$repeats"); do
        start=$(now_s)
        "${cdl_run[@]}" >/dev/null
        elapsed "$start" >>"$tmp/cdl.s"
        start=$(now_s)
        "${ort_run[@]}" >/dev/null
        elapsed "$start" >>"$tmp/ort.s"
    done
    cdl_s=$(median <"$tmp/cdl.s")
    ort_s=$(median <"$tmp/ort.s")
    steps=$((quick ? 20 : 2000))
    cdl_b1=$(./cdl bench "$tmp/$net.cdl" --inference --batch 1 --steps "$steps" --warmup 20 \
        --threads "$threads" --json 2>/dev/null | "$py" -c 'import json, sys; print(1 / json.load(sys.stdin)["images_per_s"])')
    ort_b1=$("$py" scripts/bench_ort.py "$tmp/$net.onnx" --batch 1 --steps "$steps" --warmup 20 \
        --threads "$threads" | "$py" -c 'import json, sys; print(json.load(sys.stdin)["ms_per_step"] / 1e3)')
    row=("$net" "$(ms "$cdl_s")" "$(ms "$ort_s")" "$(ratio "$ort_s" "$cdl_s")" "$(ms "$cdl_b1" 4)"
        "$(ms "$ort_b1" 4)" "$(ratio "$ort_b1" "$cdl_b1")")
    printf '%-8s %14s %14s %10s %10s %10s %14s\n' "${row[@]}"
    speed_table_row "${row[@]}"
done
[ $quick = 1 ] || speed_table_end
