#!/usr/bin/env bats
# cdl export onnx of detectors ([yolo], [region]): the raw heads and --decode's boxes and scores,
# run in onnxruntime and compared with cdl detect and cdl predict on a random image of the net's
# size (scripts/ref/onnx_detect_check.py). Skipped where python3 has no onnxruntime.
load helpers

setup() {
    python3 -c 'import onnxruntime' 2> /dev/null || skip "python3 has no onnxruntime"
    WORK="$(mktemp -d)"
    cd "$WORK"
}

# random_png FILE SIDE: random RGB pixels.
random_png() {
    /usr/bin/python3 - "$@" <<'PY'
import sys
import numpy as np
from PIL import Image
side = int(sys.argv[2])
pixels = np.random.default_rng(side).integers(0, 256, (side, side, 3), dtype=np.uint8)
Image.fromarray(pixels, "RGB").save(sys.argv[1])
PY
}

# expect_exports_match CFG SIDE [--predict] [--set K=V ..]: both exports pass the checks of
# onnx_detect_check.py against cdl detect (and cdl predict's last layer with --predict).
expect_exports_match() {
    local cfg=$1 side=$2 predict=
    shift 2
    [ "${1:-}" = --predict ] && predict=predict.json && shift
    random_png image.png "$side"
    run "$CDL" export onnx "$cfg" -o heads.onnx "$@"
    [ "$status" -eq 0 ]
    run "$CDL" export onnx "$cfg" --decode -o decoded.onnx "$@"
    [ "$status" -eq 0 ]
    "$CDL" detect "$cfg" image.png --thresh 0 --nms 0 --json "$@" > detect.json 2> /dev/null
    if [ -n "$predict" ]; then
        "$CDL" predict "$cfg" image.png --top 100000 --json --no-crop "$@" > predict.json \
            2> /dev/null
    fi
    run python3 "$REPO/scripts/ref/onnx_detect_check.py" heads.onnx decoded.onnx image.png \
        detect.json $predict
    echo "$output"
    [ "$status" -eq 0 ]
    echo "# $(basename "$cfg"): ${lines[0]}" >&3
}

@test "yolov3-tiny.cfg: the heads and the decoded boxes in onnxruntime are cdl detect's" {
    expect_exports_match /usr/share/darknet/cfg/yolov3-tiny.cfg 416
}

@test "yolo_fashion.cfg: the heads and the decoded boxes are cdl detect's and cdl predict's" {
    expect_exports_match "$REPO/cfg/yolo_fashion.cfg" 96 --predict
}

@test "scale_x_y: the scaled logistic of the centres is exported" {
    expect_exports_match "$REPO/cfg/yolo_fashion.cfg" 96 --predict --set 12.scale_x_y=1.1 \
        --set 19.scale_x_y=1.05
}

@test "yolov2-tiny-voc.cfg ([region] softmax=1): the heads and the decoded boxes are cdl's" {
    expect_exports_match /usr/share/darknet/cfg/yolov2-tiny-voc.cfg 416 --predict
}

@test "[region] with logistic classes: exported as cdl computes them" {
    expect_exports_match /usr/share/darknet/cfg/yolov2-tiny-voc.cfg 416 --set 15.softmax=0
}

@test "the outputs are named after their layers, with the shapes the docs give" {
    "$CDL" export onnx "$REPO/cfg/yolo_fashion.cfg" -o heads.onnx > /dev/null
    "$CDL" export onnx "$REPO/cfg/yolo_fashion.cfg" --decode --batch 2 -o decoded.onnx > /dev/null
    run python3 -c '
import sys, onnxruntime
for path in sys.argv[1:]:
    s = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    print(" ".join(f"{o.name}{o.shape}" for o in s.get_outputs()).replace(" ", "").replace("]", "] ").strip())
' heads.onnx decoded.onnx
    echo "$output"
    [ "${lines[0]}" = "yolo12['N',45,6,6] yolo19['N',45,12,12]" ]
    [ "${lines[1]}" = "boxes[2,540,4] scores[2,540,10]" ]
}

@test "--decode on a net without [yolo] or [region] is refused and writes nothing" {
    run "$CDL" export onnx "$REPO/cfg/digits.cfg" --decode -o d.onnx
    [ "$status" -eq 2 ]
    [ "$output" = "cdl: --decode: the net has no [yolo] or [region] layer to decode" ]
    [ ! -e d.onnx ]
    run "$CDL" export darknet "$REPO/cfg/digits.cfg" --decode -o d.weights
    [ "$status" -eq 2 ]
    [[ "$output" == *"--decode apply to export onnx"* ]]
}

@test "cdl import refuses a detector's export, naming the first node it cannot map" {
    "$CDL" export onnx "$REPO/cfg/yolo_fashion.cfg" -o heads.onnx > /dev/null
    run "$CDL" import heads.onnx -o imp.cfg --out imp.cdl
    [ "$status" -eq 2 ]
    [[ "$output" == "cdl: heads.onnx: node 'layer12.entries' (Reshape): "* ]]
    [ ! -e imp.cdl ]
}
