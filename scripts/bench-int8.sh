#!/usr/bin/env bash
# int8 inference (cdl quantize) against float32 and against PyTorch's quantized model, per
# trained model: test accuracy (float, int8 with dynamic inputs, int8 with calibrated
# convolution inputs), file size, and inference images/s of cdl float32, cdl int8, PyTorch
# float32 and PyTorch int8 (scripts/bench_int8_torch.py: static convolutions, dynamic Linear),
# measured one after the other in this run, with their ratios.
# Usage: scripts/bench-int8.sh [MODEL.cdl...]   (default: weights/fashion.cdl and
#        weights/resnet_fashion.cdl; each needs cfg/NAME.cfg for the PyTorch peer)
# Environment: DATA (cfg/fashion.data: calibration and evaluation), EVAL_DATA (evaluation
#              only; default DATA), THREADS (2), BATCH (64), STEPS (20), WARMUP (3),
#              BATCHES (calibration mini-batches, 10).
set -euo pipefail

cd "$(dirname "$0")/.."
args=("$@")
data=${DATA:-cfg/fashion.data}
eval_data=${EVAL_DATA:-$data}
threads=${THREADS:-2}
batch=${BATCH:-64}
steps=${STEPS:-20}
warmup=${WARMUP:-3}
calibration_batches=${BATCHES:-10}
python=/usr/bin/python3 # Debian's, with python3-torch
models=("$@")
[ ${#models[@]} -gt 0 ] || models=(weights/fashion.cdl weights/resnet_fashion.cdl)

[ -x ./cdl ] || make -j2 >&2

json_field() { # json_field FIELD <<< JSON
    "$python" -c 'import json, sys; print(json.loads(sys.stdin.read())[sys.argv[1]])' "$1"
}
ratio() { "$python" -c 'import sys; print("%.2f" % (float(sys.argv[1]) / float(sys.argv[2])))' "$@"; }
accuracy() {
    json_field accuracy <<<"$(./cdl eval "$1" --data "$eval_data" --threads "$threads" --json)"
}
inference_ips() {
    json_field images_per_s <<<"$(./cdl bench "$1" --inference --batch "$batch" --steps "$steps" \
        --warmup "$warmup" --threads "$threads" --json)"
}

# shellcheck source=scripts/lib/speed-table.sh
source scripts/lib/speed-table.sh
speed_table_begin bench-int8 "${args[@]}"
echo "batch $batch, $threads threads, $steps timed forwards after $warmup warm-up, random inputs"
echo "(single runs, back to back: other load on the machine shows up in the speed figures)"
for model in "${models[@]}"; do
    name=$(basename "$model" .cdl)
    cfg=cfg/$name.cfg
    dynamic=${model%.cdl}.int8-dynamic.cdl
    static=${model%.cdl}.int8.cdl
    ./cdl quantize "$model" -o "$dynamic" --threads "$threads" >/dev/null
    ./cdl quantize "$model" -o "$static" --threads "$threads" --calibrate "$data" \
        --batches "$calibration_batches" >/dev/null
    echo
    echo "== $model"
    acc_fp=$(accuracy "$model")
    acc_dyn=$(accuracy "$dynamic")
    acc_static=$(accuracy "$static")
    "$python" -c 'import sys; f, d, s = map(float, sys.argv[1:])
print("test accuracy: float32 %.2f%%, int8 dynamic %.2f%% (%+.2f), int8 calibrated %.2f%% (%+.2f)"
      % (100 * f, 100 * d, 100 * (d - f), 100 * s, 100 * (s - f)))' "$acc_fp" "$acc_dyn" "$acc_static"

    info=$(./cdl info "$model" --json)
    weight_bytes=$(( 4 * ($(json_field params <<<"$info") + $(json_field state <<<"$info")) ))
    int8_bytes=$(stat -c %s "$static")
    echo "size: float32 tensors $weight_bytes bytes (checkpoint with optimizer state" \
        "$(stat -c %s "$model")), int8 checkpoint $int8_bytes bytes:" \
        "$(ratio "$int8_bytes" "$weight_bytes") of the float32 tensors"

    cdl_fp=$(inference_ips "$model")
    cdl_q=$(inference_ips "$static")
    torch_json=$(env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OMP_NUM_THREADS="$threads" \
        "$python" scripts/bench_int8_torch.py "$cfg" --batch "$batch" --steps "$steps" \
        --warmup "$warmup" --threads "$threads")
    torch_fp=$(json_field fp32_images_per_s <<<"$torch_json")
    torch_q=$(json_field int8_images_per_s <<<"$torch_json")
    printf '%-28s %12s %12s %8s\n' "inference images/s" float32 int8 int8/fp32
    printf '%-28s %12.1f %12.1f %8s\n' cdl "$cdl_fp" "$cdl_q" "$(ratio "$cdl_q" "$cdl_fp")"
    printf '%-28s %12.1f %12.1f %8s\n' "PyTorch ($(json_field engine <<<"$torch_json"))" \
        "$torch_fp" "$torch_q" "$(ratio "$torch_q" "$torch_fp")"
    printf '%-28s %12s %12s\n' "cdl / PyTorch" "$(ratio "$cdl_fp" "$torch_fp")" \
        "$(ratio "$cdl_q" "$torch_q")"
done
speed_table_end
