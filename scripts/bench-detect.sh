#!/usr/bin/env bash
# Detector inference speed: yolov3-tiny at 416x416, batch 1, cdl (`cdl bench --inference`, fp32,
# int8 from `cdl quantize --calibrate` (static input grids, oneDNN's int8 convolutions where the
# CPU has VNNI), and bf16 where the CPU has avx512_bf16)
# against Debian's darknet CPU forward and ONNX Runtime
# (scripts/bench_ort.py on `cdl export onnx --decode`'s model: the heads and the box decode, no
# NMS), at the same thread count (OMP_NUM_THREADS for darknet and cdl, intra-op threads for ONNX
# Runtime). darknet's figure is its own "Predicted in X seconds" (network_predict alone, the
# image already letterboxed) for the same photo (/usr/share/darknet/data/dog.jpg) fed N times
# to `darknet detector test` through its prompt, the first dropped as warm-up; cdl and ONNX
# Runtime time forwards on random input, which costs the same. darknet and ONNX Runtime run one
# set of random weights (scripts/ref/make_darknet_weights.py, batch-norm variances 0.5..2 and
# objectness biased low so that darknet draws no boxes), `cdl bench` its own random
# initialisation: speed does not depend on the values.
# Usage: scripts/bench-detect.sh [--threads 1,2] [--repeats N] [--images N] [--quick]
#   --repeats: alternating runs of the three, medians printed (default 3); --images: forwards
#   per timed run (default 10); --quick: 1 thread, 1 repeat of 3 images (a check that it runs).
#   A run (not --quick) writes its table to docs/speed/ (scripts/lib/speed-table.sh;
#   CDL_SPEED_DIR=- writes none). Without onnxruntime in python3 (or $PYTHON) its column is "-".
set -euo pipefail

cd "$(dirname "$0")/.."
args=("$@")
quick=0 thread_list=1,2 repeats=3 images=10
while [ $# -gt 0 ]; do
    case "$1" in
    --threads) thread_list=$2 && shift 2 ;;
    --repeats) repeats=$2 && shift 2 ;;
    --images) images=$2 && shift 2 ;;
    --quick) quick=1 thread_list=1 repeats=1 images=3 && shift ;;
    -h | --help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//' && exit 0 ;;
    *) echo "bench-detect: unknown argument $1 (see --help)" >&2 && exit 2 ;;
    esac
done
fail() { echo "bench-detect: $*" >&2 && exit 1; }
cfg=/usr/share/darknet/cfg/yolov3-tiny.cfg photo=/usr/share/darknet/data/dog.jpg
if ! command -v darknet >/dev/null || ! [ -f "$cfg" ]; then
    fail "needs Debian's darknet (apt install darknet)"
fi
py=${PYTHON:-python3}
ort=1
"$py" -c 'import onnxruntime' 2>/dev/null || ort=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
[ -x ./cdl ] || make -j2 >&2

field() { sed -n "s/.*\"$1\": *\([-0-9.e+]*\).*/\1/p"; }
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }
shown() { if [ "$1" = - ]; then echo -; else awk -v r="$1" 'BEGIN { printf "%.2f", r }'; fi; }
ratio() { if [ "$2" = - ] || [ -z "$2" ]; then echo -; else awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; fi; }

./cdl export npy "$cfg" "$tmp/shapes" >/dev/null 2>&1 || fail "cdl export npy $cfg failed"
/usr/bin/python3 scripts/ref/make_darknet_weights.py "$cfg" "$tmp/shapes" "$tmp/y.weights" \
    --seed 1 --variances 0.5,2 --score-bias -5 || fail "make_darknet_weights.py failed"
./cdl export onnx "$cfg" --weights "$tmp/y.weights" --decode -o "$tmp/y.onnx" >/dev/null 2>&1 ||
    fail "cdl export onnx --decode failed"
grep -qw avx512_bf16 /proc/cpuinfo && bf16=1 || bf16=0
# int8: `cdl quantize` takes a checkpoint; one training pass over 8 random images makes one, and
# calibrates the convolutions' input grids on them (speed only: the weights are random too).
mkdir -p "$tmp/one/images" "$tmp/one/labels"
/usr/bin/python3 -c '
import sys, numpy as np; from PIL import Image
r = np.random.default_rng(1)
for i in range(8):
    Image.fromarray(r.integers(0, 256, (416, 416, 3), dtype=np.uint8)).save(f"{sys.argv[1]}/{i}.png")
' "$tmp/one/images"
: >"$tmp/one.txt"
for i in 0 1 2 3 4 5 6 7; do
    echo "0 0.5 0.5 0.3 0.3" >"$tmp/one/labels/$i.txt"
    echo "$tmp/one/images/$i.png" >>"$tmp/one.txt"
done
seq 0 79 >"$tmp/names.txt"
printf 'classes=80\ntrain=%s\nnames=%s\n' "$tmp/one.txt" "$tmp/names.txt" >"$tmp/one.data"
./cdl train "$cfg" --data "$tmp/one.data" --epochs 1 --set net.batch=1 --set net.subdivisions=1 \
    --set net.burn_in=0 --threads 1 --out "$tmp/y.cdl" >/dev/null 2>&1 || fail "cdl train (one pass) failed"
./cdl quantize "$tmp/y.cdl" -o "$tmp/y8.cdl" --calibrate "$tmp/one.data" --batches 8 --threads 1 \
    >/dev/null 2>&1 || fail "cdl quantize failed"

# cdl_rate MODEL THREADS [--precision P]: images/s of `cdl bench --inference`.
cdl_rate() {
    local model=$1 t=$2
    shift 2
    OMP_NUM_THREADS=$t ./cdl bench "$model" --inference --batch 1 --steps "$images" --warmup 1 \
        --threads "$t" --json "$@" 2>"$tmp/stderr" | field images_per_s ||
        { cat "$tmp/stderr" >&2 && fail "cdl bench failed"; }
}
# darknet_rate THREADS: 1 / the median of darknet's "Predicted in" seconds after the first.
darknet_rate() {
    local seconds
    seconds=$(for _ in $(seq $((images + 1))); do echo "$photo"; done |
        (cd "$tmp" && OMP_NUM_THREADS=$1 darknet detector test /usr/share/darknet/cfg/coco.data \
            "$cfg" y.weights -thresh 0.5 -out predictions 2>&1) |
        grep -ao 'Predicted in [0-9.]* seconds' | tail -n +2 | awk '{ print $3 }' | median)
    [ -n "$seconds" ] || fail "darknet printed no timing"
    awk -v s="$seconds" 'BEGIN { printf "%.3f", 1 / s }'
}
ort_rate() {
    [ $ort = 1 ] || { echo - && return; }
    "$py" scripts/bench_ort.py "$tmp/y.onnx" --batch 1 --steps "$images" --warmup 1 \
        --threads "$1" | field images_per_s
}

# shellcheck source=scripts/lib/speed-table.sh
source scripts/lib/speed-table.sh
[ $quick = 1 ] || speed_table_begin bench-detect "${args[@]}"
speed_table_meta threads "$thread_list"
speed_table_meta repeats "$repeats (medians of alternating runs of $images images)"
speed_table_columns net threads batch "cdl fp32" "cdl int8" "cdl bf16" darknet "ONNX Runtime" \
    "cdl/darknet" "cdl/ort"
echo "yolov3-tiny 416x416, batch 1, images/s (medians of $repeats runs); load: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-12s %3s %5s %9s %9s %9s %9s %9s %11s %7s\n' net thr batch "cdl fp32" "cdl int8" \
    "cdl bf16" darknet ort cdl/darknet cdl/ort
for t in ${thread_list//,/ }; do
    declare -A runs=([cdl]="" [int8]="" [bf16]="" [darknet]="" [ort]="")
    for _ in $(seq "$repeats"); do
        runs[cdl]+="$(cdl_rate "$cfg" "$t") "
        runs[int8]+="$(cdl_rate "$tmp/y8.cdl" "$t") "
        [ "$bf16" = 1 ] && runs[bf16]+="$(cdl_rate "$cfg" "$t" --precision bf16) "
        runs[darknet]+="$(darknet_rate "$t") "
        runs[ort]+="$(ort_rate "$t") "
    done
    declare -A med
    for k in cdl int8 bf16 darknet ort; do
        med[$k]=$(tr ' ' '\n' <<<"${runs[$k]}" | grep -v -- '^-\?$' | median)
        med[$k]=${med[$k]:--}
    done
    row=(yolov3-tiny "$t" 1 "$(shown "${med[cdl]}")" "$(shown "${med[int8]}")" "$(shown "${med[bf16]}")"
        "$(shown "${med[darknet]}")" "$(shown "${med[ort]}")"
        "$(ratio "${med[cdl]}" "${med[darknet]}")" "$(ratio "${med[cdl]}" "${med[ort]}")")
    printf '%-12s %3s %5s %9s %9s %9s %9s %9s %11s %7s\n' "${row[@]}"
    speed_table_row "${row[@]}"
done
speed_table_end
