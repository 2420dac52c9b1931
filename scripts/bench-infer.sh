#!/usr/bin/env bash
# CPU inference speed of cdl (`cdl bench --inference`) against ONNX Runtime (CPUExecutionProvider,
# every graph optimisation, intra-op threads = cdl's, on the model `cdl export onnx` writes of
# the same cfg) and PyTorch 2 (eager, and torch.compile where it runs: scripts/bench_torch.py's
# net of the cfg), all from the venv of scripts/torch-venv.sh (build/torch-venv, or $TORCH_VENV).
# Same net, batch, threads and random inputs in [0, 1); weights random (only speed is compared).
# Each peer runs as one process per net, precision and thread count (scripts/
# bench_infer_peer.py: start-up, compilation and quantization paid once) that the script asks
# for one timed run at a time, alternating with a cdl run, --repeats times; the table shows
# the medians: batch 1 as latency (ms per image), larger batches as images/s, and cdl's speed
# over ONNX Runtime's and over the faster PyTorch (> 1: cdl is faster).
#   fp32: float32 everywhere.
#   bf16: cdl --precision bf16 against PyTorch under torch.autocast("cpu", torch.bfloat16)
#         (ONNX Runtime's CPU provider has no bf16 convolutions: "-").
#   int8: cdl quantize --calibrate (static input grids, on 8 random images: oneDNN's int8
#         convolutions where the CPU has VNNI) of the model `cdl import` makes of the exported
#         one, against ONNX Runtime's static QDQ model from its own quantizer (scripts/
#         bench_ort.py --quantize) and PyTorch's static int8 model (fbgemm;
#         scripts/bench_int8_torch.py), both calibrated on random batches.
# Usage: scripts/bench-infer.sh [--nets A,B,..] [--batches 1,16] [--threads 1,2]
#            [--precisions fp32,bf16,int8] [--repeats N] [--images N] [--no-compile] [--quick]
#   nets: resnet18 resnet50 mobilenetv2 densenet121 inception_v3 (cfg/NAME.cfg; default: these),
#   and the zoo's efficientnet_b0 mobilenet_v3_small mobilenet_v3_large convnext_tiny vit_b_16
#   shufflenet_v2_x1_0 regnet_y_400mf (PyTorch runs torchvision's model of the name);
#   batches: any (default 1,16; 64 too for throughput); --images: images per timed run (default
#   per net: 8, resnet18 16, mobilenetv2 32; at least
#   one step); --no-compile: no torch.compile column
#   (its first compilation of a net takes a minute); --quick: resnet18, batch 1, 1 thread,
#   fp32, 1 repeat of 2 images (a check that everything runs, not a measurement).
#   Besides printing it, a run (not --quick) writes its table to docs/speed/ as a dated
#   Markdown file (scripts/lib/speed-table.sh; CDL_SPEED_DIR=- writes none).
#   Where the time goes: `cdl profile CFG --inference` and scripts/bench_ort.py --profile.
set -euo pipefail

cd "$(dirname "$0")/.."
args=("$@")
quick=0
nets=resnet18,resnet50,mobilenetv2,densenet121,inception_v3
batch_list=1,16
thread_list=1,2
precision_list=fp32,bf16,int8
repeats=3
images=
compile=1
while [ $# -gt 0 ]; do
    case "$1" in
    --nets) nets=$2 && shift 2 ;;
    --batches) batch_list=$2 && shift 2 ;;
    --threads) thread_list=$2 && shift 2 ;;
    --precisions) precision_list=$2 && shift 2 ;;
    --repeats) repeats=$2 && shift 2 ;;
    --images) images=$2 && shift 2 ;;
    --no-compile) compile=0 && shift ;;
    --quick) nets=resnet18 batch_list=1 thread_list=1 precision_list=fp32 repeats=1 images=2 \
        quick=1 && shift ;;
    -h | --help) sed -n '2,32p' "$0" | sed 's/^# \{0,1\}//' && exit 0 ;;
    *) echo "bench-infer: unknown argument $1 (see --help)" >&2 && exit 2 ;;
    esac
done
IFS=, read -r -a net_names <<<"$nets"
IFS=, read -r -a batches <<<"$batch_list"
IFS=, read -r -a thread_counts <<<"$thread_list"
IFS=, read -r -a precisions <<<"$precision_list"
default_images() {
    case "$1" in
    resnet50 | densenet121 | inception_v3 | efficientnet_b0 | mobilenet_v3_small | \
        mobilenet_v3_large | convnext_tiny | vit_b_16 | shufflenet_v2_x1_0 | regnet_y_400mf) echo 8 ;;
    resnet18) echo 16 ;;
    mobilenetv2) echo 32 ;;
    *) return 1 ;;
    esac
}
for n in "${net_names[@]}"; do
    default_images "$n" >/dev/null || { echo "bench-infer: unknown net '$n'" >&2 && exit 2; }
done
for p in "${precisions[@]}"; do
    case "$p" in fp32 | bf16 | int8) ;; *) echo "bench-infer: unknown precision '$p'" >&2 && exit 2 ;; esac
done

fail() {
    echo "bench-infer: $*" >&2
    exit 1
}
venv=${TORCH_VENV:-build/torch-venv}
py=$venv/bin/python
if ! [ -x "$py" ] || ! env -u OPENBLAS_CORETYPE "$py" -c 'import torch, onnxruntime, onnx' 2>/dev/null; then
    fail "$venv lacks torch, onnxruntime or onnx: run scripts/torch-venv.sh"
fi
tmp=$(mktemp -d)
declare -A peer_pid=() peer_in=() peer_out=()
# close_peer NAME: closes the script's ends of NAME's FIFOs (the peer sees its input end).
close_peer() {
    local fd_in=${peer_in[$1]} fd_out=${peer_out[$1]}
    exec {fd_in}>&- {fd_out}<&-
}
stop_peers() {
    local name
    for name in "${!peer_pid[@]}"; do
        close_peer "$name"
        wait "${peer_pid[$name]}" 2>/dev/null || true
        rm -f "$tmp/$name.in" "$tmp/$name.out"
    done
    peer_pid=() peer_in=() peer_out=()
}
trap 'stop_peers; rm -rf "$tmp"' EXIT
[ -x ./cdl ] || make -j2 >&2

torch_env() { env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE "$@"; }
field() { sed -n "s/.*\"$1\": *\([-0-9.e+]*\).*/\1/p"; } # field NAME <<< ONE-LINE-JSON
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }
calibration_data() { # calibration_data CFG: a .data file of 8 random RGB images of CFG's size
    local side dir=$tmp/calibration
    side=$(sed -n 's/^width *= *//p' "$1" | head -1)
    mkdir -p "$dir/images/0"
    /usr/bin/python3 - "$dir/images/0" "$side" <<'PY'
import sys
import numpy as np
from PIL import Image
rng = np.random.default_rng(1)
for i in range(8):
    pixels = rng.integers(0, 256, (int(sys.argv[2]), int(sys.argv[2]), 3), dtype=np.uint8)
    Image.fromarray(pixels).save("%s/random%d.png" % (sys.argv[1], i))
PY
    printf 'classes=1\ntrain=%s\nvalid=%s\n' "$dir/images" "$dir/images" >"$dir/random.data"
    echo "$dir/random.data"
}
quiet() { # quiet CMD...: CMD's stdout; on failure its stderr, then exit
    local out
    out=$("$@" 2>"$tmp/stderr") || { cat "$tmp/stderr" >&2 && fail "failed: $*"; }
    printf '%s\n' "$out"
}

# peer_start NAME THREADS ARGS...: bench_infer_peer.py ARGS at THREADS threads in the
# background, talking through two FIFOs; 1 when it did not come up (its error to stderr).
peer_start() {
    local name=$1 t=$2 line
    shift 2
    mkfifo "$tmp/$name.in" "$tmp/$name.out"
    ( # without the other peers' FIFO ends, so that each sees its input's end when closed
        for fd in "${peer_in[@]}" "${peer_out[@]}"; do eval "exec $fd>&-"; done
        exec env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OMP_NUM_THREADS="$t" "$py" \
            scripts/bench_infer_peer.py "$@" --threads "$t"
    ) <"$tmp/$name.in" >"$tmp/$name.out" 2>"$tmp/$name.err" &
    peer_pid[$name]=$!
    local fd_in fd_out
    exec {fd_in}>"$tmp/$name.in" {fd_out}<"$tmp/$name.out"
    peer_in[$name]=$fd_in peer_out[$name]=$fd_out
    if ! read -r line <&"$fd_out"; then
        echo "bench-infer: $name did not start:" >&2
        tail -3 "$tmp/$name.err" >&2
        close_peer "$name"
        unset "peer_pid[$name]" "peer_in[$name]" "peer_out[$name]"
        rm -f "$tmp/$name.in" "$tmp/$name.out"
        return 1
    fi
}

# rate RUNNER BATCH STEPS WARMUP: one timed run's images/s ("-" for a peer that failed).
rate() {
    local runner=$1 batch=$2 steps=$3 warmup=$4 line
    local timing=(--batch "$batch" --steps "$steps" --warmup "$warmup" --threads "$t" --json)
    case "$runner" in
    cdl)
        quiet env OMP_NUM_THREADS="$t" ./cdl bench "$cdl_model" --inference "${timing[@]}" \
            "${cdl_flags[@]}" | field images_per_s ;;
    *)
        if [ -z "${peer_pid[$runner]:-}" ]; then echo - && return; fi
        echo "$batch $steps $warmup" >&"${peer_in[$runner]}"
        if read -r line <&"${peer_out[$runner]}"; then
            field images_per_s <<<"$line"
        else
            echo "bench-infer: $runner failed at batch $batch:" >&2
            tail -3 "$tmp/$runner.err" >&2
            close_peer "$runner"
            unset "peer_pid[$runner]" "peer_in[$runner]" "peer_out[$runner]"
            echo -
        fi ;;
    esac
}

# shown RATE: images/s as the row's unit shows it ("-" stays)
shown() {
    if [ "$1" = - ]; then echo -; elif [ "$unit" = ms ]; then
        awk -v r="$1" 'BEGIN { printf "%.2f", 1e3 / r }'
    else awk -v r="$1" 'BEGIN { printf "%.1f", r }'; fi
}
# ratio A B: A / B to two places ("-" when B is missing)
ratio() { if [ -z "$2" ] || [ "$2" = - ]; then echo -; else
    awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; fi; }

# shellcheck source=scripts/lib/speed-table.sh
source scripts/lib/speed-table.sh
[ $quick = 1 ] || speed_table_begin bench-infer "${args[@]}"
speed_table_meta threads "$thread_list"
speed_table_meta repeats "$repeats (medians of alternating runs)"
speed_table_columns net precision threads batch unit cdl "ONNX Runtime" PyTorch \
    "PyTorch compile" "cdl / ORT" "cdl / PyTorch"

echo "cdl $(./cdl --version | cut -d' ' -f2-)"
echo "peers ($venv): $(torch_env "$py" -c 'import torch, onnxruntime
print("ONNX Runtime %s (CPUExecutionProvider), PyTorch %s" % (onnxruntime.__version__, torch.__version__))')"
echo "median of $repeats alternating repeats; batch 1 in ms per image, larger batches in images/s;"
echo "cdl/ORT, cdl/pt: cdl's speed over ONNX Runtime's and the faster PyTorch's (> 1: cdl faster)"
echo "load average now $(cut -d' ' -f1-3 /proc/loadavg): other processes show up in the numbers"
printf '%-12s %-5s %3s %5s %-5s %9s %9s %9s %9s %7s %7s\n' net prec thr batch unit cdl ort \
    torch compile cdl/ort cdl/pt

for name in "${net_names[@]}"; do
    cfg=cfg/$name.cfg
    per_run=${images:-$(default_images "$name")}
    quiet ./cdl export onnx "$cfg" -o "$tmp/$name.onnx" >/dev/null
    torch_params=$(quiet torch_env "$py" scripts/bench_torch.py --cfg "$cfg" --params)
    cdl_params=$(quiet ./cdl info "$cfg" --json | field params)
    [ "$torch_params" = "$cdl_params" ] ||
        fail "$cfg: PyTorch's net has $torch_params parameters, cdl's $cdl_params"
    for precision in "${precisions[@]}"; do
        cdl_model=$cfg cdl_flags=() runners=(cdl ort eager)
        [ $compile = 1 ] && runners+=(compile)
        case "$precision" in
        bf16) cdl_flags=(--precision bf16) runners=("${runners[@]/ort/}") ;;
        int8)
            quiet ./cdl import "$tmp/$name.onnx" -o "$tmp/$name.cfg" --out "$tmp/$name.cdl" >/dev/null
            quiet ./cdl quantize "$tmp/$name.cdl" -o "$tmp/$name.int8.cdl" --batches 8 \
                --calibrate "$(calibration_data "$cfg")" >/dev/null
            quiet torch_env OMP_NUM_THREADS=1 "$py" scripts/bench_ort.py "$tmp/$name.onnx" \
                --quantize "$tmp/$name.int8.onnx" --batch 2 >/dev/null
            cdl_model=$tmp/$name.int8.cdl runners=(cdl ort int8) ;;
        esac
        for t in "${thread_counts[@]}"; do
            for runner in "${runners[@]}"; do
                case "$runner" in
                ort) model=$tmp/$name.onnx
                    [ "$precision" = int8 ] && model=$tmp/$name.int8.onnx
                    peer_start ort "$t" ort --cfg "$cfg" --onnx "$model" || true ;;
                eager | compile) peer_start "$runner" "$t" "$runner" --cfg "$cfg" \
                    ${cdl_flags[0]:+--bf16} || true ;;
                int8) peer_start int8 "$t" int8 --cfg "$cfg" || true ;;
                esac
            done
            for batch in "${batches[@]}"; do
                steps=$(((per_run + batch - 1) / batch))
                warmup=$((batch == 1 ? 3 : 2)) # cdl: its second forward transforms for Winograd
                rm -f "$tmp"/rate.*
                for ((r = 0; r < repeats; r++)); do
                    for runner in "${runners[@]}"; do
                        [ -n "$runner" ] && rate "$runner" "$batch" "$steps" "$warmup" >>"$tmp/rate.$runner"
                    done
                done
                declare -A med=()
                for runner in cdl ort eager compile int8; do
                    med[$runner]=-
                    [ -f "$tmp/rate.$runner" ] && ! grep -q -- - "$tmp/rate.$runner" &&
                        med[$runner]=$(median <"$tmp/rate.$runner")
                done
                torch=${med[eager]} torch_compiled=${med[compile]}
                [ "$precision" = int8 ] && torch=${med[int8]}
                best=$(printf '%s\n' "$torch" "$torch_compiled" | grep -v -- - | sort -g | tail -1)
                unit=img/s
                [ "$batch" = 1 ] && unit=ms
                row=("$name" "$precision" "$t" "$batch" "$unit" "$(shown "${med[cdl]}")"
                    "$(shown "${med[ort]}")" "$(shown "$torch")" "$(shown "$torch_compiled")"
                    "$(ratio "${med[cdl]}" "${med[ort]}")" "$(ratio "${med[cdl]}" "$best")")
                printf '%-12s %-5s %3s %5s %-5s %9s %9s %9s %9s %7s %7s\n' "${row[@]}"
                speed_table_row "${row[@]}"
            done
            stop_peers
        done
    done
done
echo "(int8: PyTorch is its static int8 model, no compile; cdl's convolutions are calibrated too)"
speed_table_end
