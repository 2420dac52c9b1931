#!/usr/bin/env bats
# cdl import: ONNX models to a cfg and a checkpoint. (a) every image cfg in cfg/ goes through
# cdl export onnx and back to the same layer table and the same outputs (and a trained ViT);
# (b) torchvision's resnet18, mobilenet_v2, vgg11, ..., vit_b_16 and vit_b_32 with seeded
# random weights, exported by torch.onnx.export
# (scripts/ref/make_torchvision_onnx.py, run here: the files are too large to commit), match
# onnxruntime to 1e-5 relative (scripts/ref/onnx_import_check.py); (c) truncated, corrupted
# and unsupported models are refused with one line and exit 1 or 2, leaving no file.
load helpers

# random_png FILE SIDE CHANNELS: random pixels, grayscale for 1 channel, else RGB.
random_png() {
    /usr/bin/python3 - "$@" <<'PY'
import sys
import numpy as np
from PIL import Image
path, side, c = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
pixels = np.random.default_rng(side * 10 + c).integers(0, 256, (side, side, 3), dtype=np.uint8)
Image.fromarray(pixels[:, :, 0] if c == 1 else pixels, "L" if c == 1 else "RGB").save(path)
PY
}

# layer_rows MODEL: `cdl info`'s layer rows without the index column, dropout, drop_path and
# cost layers (which export as Identity and so import as no layer).
layer_rows() {
    "$CDL" info "$1" |
        awk '$1 ~ /^[0-9]+$/ && $2 != "dropout" && $2 != "drop_path" && $2 != "cost" {$1 = ""; print}'
}

# same_outputs A.json B.json: two `cdl predict --json` outputs agree to 1e-5 relative.
same_outputs() {
    python3 - "$1" "$2" <<'PY'
import json, sys
import numpy as np
a, b = ([t["probability"] for t in sorted(json.load(open(p))[0]["top"], key=lambda t: t["index"])]
        for p in sys.argv[1:3])
a, b = np.array(a), np.array(b)
rel = np.max(np.abs(a - b)) / max(np.max(np.abs(a)), 1e-30)
print(f"relative difference {rel:.3g} over {len(a)} outputs")
sys.exit(0 if len(a) == len(b) and rel <= 1e-5 else 1)
PY
}

@test "every image cfg in cfg/ exports to ONNX and imports back to the same layers and outputs" {
    for cfg in "$REPO"/cfg/*.cfg; do
        name=$(basename "$cfg" .cfg)
        grep -q "^seq=" "$cfg" && continue # text nets have no ONNX export
        # vgg16's 550 MB adds no layer kind; torchvision's vgg11 below covers the family.
        [ "$name" = vgg16 ] && continue
        grep -q '^\[yolo\]' "$cfg" && continue # detectors: import refuses them (export_detector.bats)
        "$CDL" export onnx "$cfg" --seed 5 -o "$name.onnx" > /dev/null
        run "$CDL" import "$name.onnx" -o "$name.imp.cfg" --out "$name.imp.cdl"
        echo "$output"
        [ "$status" -eq 0 ]
        diff <(layer_rows "$cfg") <(layer_rows "$name.imp.cdl")
        read -r c h w < <("$CDL" info "$cfg" --json |
            python3 -c 'import json, sys; print(*json.load(sys.stdin)["input"])')
        random_png image.png "$w" "$c"
        "$CDL" predict "$cfg" --seed 5 image.png --top 100000 --json --no-crop > a.json
        "$CDL" predict "$name.imp.cdl" image.png --top 100000 --json --no-crop > b.json
        run same_outputs a.json b.json
        echo "# $name: ${lines[-1]}" >&3
        [ "$status" -eq 0 ]
        rm -f "$name.onnx" "$name.imp.cdl"
    done
}

# cdl's own export of token rows: [tokens] Reshaped to [N,1,T,C], [layernorm] as ReduceMean ...
# Add, [linear] as MatMul by Transposed weights, [attention] as the fused projection, Reshape to
# heads, Gather, ..., and [select_token] as a Slice; a trained net, so that no parameter is at
# its initial value.
@test "a trained vision transformer exported by cdl imports back to the same layers and outputs" {
    vit_cfg vit.cfg
    "$CDL" train vit.cfg --data "$REPO/cfg/digits.data" --epochs 1 --out vit.cdl --threads 1 \
        --log-every 1000 2>/dev/null
    "$CDL" export onnx vit.cdl -o vit.onnx > /dev/null
    run "$CDL" import vit.onnx -o vit.imp.cfg --out vit.imp.cdl
    echo "$output"
    [ "$status" -eq 0 ]
    diff <(layer_rows vit.cdl) <(layer_rows vit.imp.cdl)
    random_png image.png 8 1
    "$CDL" predict vit.cdl image.png --top 10 --json --no-crop > a.json
    "$CDL" predict vit.imp.cdl image.png --top 10 --json --no-crop > b.json
    run same_outputs a.json b.json
    echo "# vit: ${lines[-1]}" >&3
    [ "$status" -eq 0 ]
    [ "$(grep -A2 '^\[attention\]' vit.imp.cfg | grep -c -x -e 'heads=2' -e 'causal=0')" -eq 4 ]
}

@test "the imported cfg reads as the original: folded batch norm, activations, routes, mean/std" {
    "$CDL" export onnx "$REPO/cfg/resnet34.cfg" --seed 1 -o r.onnx > /dev/null
    "$CDL" import r.onnx -o r.cfg
    [ ! -e r.cdl ]
    run grep -c '^\[' r.cfg
    [ "$output" -eq 60 ] # [net] and the 59 layers of cfg/resnet34.cfg
    grep -qx 'mean=0.485,0.456,0.406' r.cfg
    grep -qx 'bn_eps=1e-05' r.cfg
    [ "$(grep -A6 -m1 '^\[convolutional\]' r.cfg | tr '\n' ' ')" = \
        "[convolutional] filters=64 size=7 stride=2 padding=3 batch_normalize=1 activation=relu " ]
    grep -q '^from=-3$' r.cfg
    grep -q '^layers=-3$' r.cfg
}

# Imports each NAME.onnx (written by make_torchvision_onnx.py; NAME-opsetK reads NAME.png) and
# compares cdl predict's outputs with onnxruntime's to 1e-5 (scripts/ref/onnx_import_check.py).
imports_match_onnxruntime() {
    for name in "$@"; do
        run "$CDL" import "$name.onnx" -o "$name.cfg" --out "$name.cdl"
        echo "$output"
        [ "$status" -eq 0 ]
        "$CDL" predict "$name.cdl" "${name%-opset*}.png" --top 100000 --json --no-crop > "$name.json"
        run python3 "$REPO/scripts/ref/onnx_import_check.py" "$name.onnx" "${name%-opset*}.png" \
            "$name.json"
        echo "# $name: ${lines[-1]}" >&3
        [ "$status" -eq 0 ]
        rm "$name.onnx" "$name.cdl"
    done
}

# One generator run writes all the models (about 600 MB, most of it vgg11's classifier);
# squeezenet1_0 adds MaxPool ceil_mode=1 and Concat, mnasnet0_5 ReduceMean.
@test "torchvision resnet18, mobilenet_v2, vgg11 and others import and match onnxruntime to 1e-5" {
    local models=(resnet18 mobilenet_v2 vgg11 squeezenet1_0 mnasnet0_5)
    /usr/bin/python3 "$REPO/scripts/ref/make_torchvision_onnx.py" . resnet18 mobilenet_v2 vgg11:224 \
        squeezenet1_0 mnasnet0_5 2> /dev/null
    imports_match_onnxruntime "${models[@]}"
}

# Swish and hardswish as x times Sigmoid/HardSigmoid(x), squeeze-excitation's Mul by a
# per-channel gate; mobilenet_v3_small at opsets 11 and 17 too (17 writes HardSwish).
# shufflenet: the channel split as Shape/Gather/Div/Mul arithmetic and Slice, the shuffle as
# Reshape/Transpose/Reshape.
@test "torchvision efficientnet_b0, mobilenet_v3, regnet_y, shufflenet_v2 match onnxruntime to 1e-5" {
    local models=(efficientnet_b0 mobilenet_v3_small mobilenet_v3_large regnet_y_400mf
        shufflenet_v2_x1_0 mobilenet_v3_small-opset11 mobilenet_v3_small-opset17
        shufflenet_v2_x1_0-opset11)
    /usr/bin/python3 "$REPO/scripts/ref/make_torchvision_onnx.py" . efficientnet_b0 \
        mobilenet_v3_small mobilenet_v3_large regnet_y_400mf shufflenet_v2_x1_0 \
        mobilenet_v3_small@11 mobilenet_v3_small@17 shufflenet_v2_x1_0@11 2> /dev/null
    imports_match_onnxruntime "${models[@]}"
    # squeeze-excitation as the zoo cfg writes it: [avgpool], two 1x1 convs, [scale_channels]
    grep -A1 -m1 '^\[scale_channels\]' efficientnet_b0.cfg | grep -q '^from=-4$'
    grep -q '^activation=swish$' efficientnet_b0.cfg
    grep -q '^activation=hardswish$' mobilenet_v3_small-opset17.cfg
    grep -q '^activation=hardsigmoid$' mobilenet_v3_small.cfg
    grep -A3 '^\[route\]' shufflenet_v2_x1_0.cfg | grep -q '^group_id=1$'
    grep -A1 '^\[shuffle\]' shufflenet_v2_x1_0.cfg | grep -q '^groups=2$'
}

# convnext: Transpose to channels last and back, the layer norm as ReduceMean ... Div, Mul,
# Add, Linear over the channels as MatMul, GELU as Div, Erf, Add, Mul, Mul, the layer scale's
# Mul (at opset 17 too); densenet: Relu after a standalone BatchNormalization, Concat of up to
# 32 inputs (chained [route]s), a zero Pad and AveragePool 2x2/2 ([avgpool] size=2 stride=2).
@test "torchvision convnext_tiny and densenet121 import and match onnxruntime to 1e-5" {
    local models=(convnext_tiny densenet121 convnext_tiny-opset17)
    /usr/bin/python3 "$REPO/scripts/ref/make_torchvision_onnx.py" . convnext_tiny densenet121 \
        convnext_tiny@17 2> /dev/null
    imports_match_onnxruntime "${models[@]}"
    grep -A2 -m1 '^\[layernorm\]' convnext_tiny.cfg | grep -q '^channels=1$'
    grep -q '^activation=gelu$' convnext_tiny.cfg
    grep -q '^\[layer_scale\]$' convnext_tiny.cfg
    grep -A1 '^\[batchnorm\]' densenet121.cfg | grep -q '^activation=relu$'
    grep -A1 '^\[avgpool\]' densenet121.cfg | grep -q '^size=2$'
}

@test "non-square Conv windows import as size=h,w stride=h,w padding=h,w" {
    { cat "$REPO/tests/ref/inception_convs.cfg"; printf '\n[connected]\noutput=5\nactivation=linear\n\n[softmax]\n'; } > convs.cfg
    "$CDL" export onnx convs.cfg --seed 3 -o convs.onnx > /dev/null
    "$CDL" import convs.onnx -o back.cfg --out back.cdl
    [ "$(grep -A4 -m1 '^\[convolutional\]' back.cfg | tr '\n' ' ')" = \
        "[convolutional] filters=4 size=1,7 stride=1,1 padding=0,3 " ]
    grep -qx 'size=3,1' back.cfg
    grep -qx 'stride=2,1' back.cfg
    diff <(layer_rows convs.cfg) <(layer_rows back.cdl)
    random_png image.png 8 3
    "$CDL" predict convs.cfg --seed 3 image.png --top 100000 --json --no-crop > a.json 2> /dev/null
    "$CDL" predict back.cdl image.png --top 100000 --json --no-crop > b.json 2> /dev/null
    run same_outputs a.json b.json
    echo "$output"
    [ "$status" -eq 0 ]
}

# inception_v3 at 299x299 (torch 1.13's export in eval mode: no auxiliary classifier): the
# factorised 1x7, 7x1, 1x3 and 3x1 Convs, the branch_pool AveragePools (3x3/1 padded by 1) and
# the block Concats, at opsets 11, 13 and 17.
@test "torchvision inception_v3 imports at opsets 11, 13 and 17 and matches onnxruntime to 1e-5" {
    local models=(inception_v3 inception_v3-opset11 inception_v3-opset17)
    /usr/bin/python3 "$REPO/scripts/ref/make_torchvision_onnx.py" . inception_v3:299 \
        inception_v3:299@11 inception_v3:299@17 2> /dev/null
    imports_match_onnxruntime "${models[@]}"
    grep -A6 '^# node .*/Mixed_6b/branch7x7_2/conv/Conv' inception_v3.cfg | grep -qx 'size=1,7'
    grep -A6 '^# node .*/Mixed_6b/branch7x7_2/conv/Conv' inception_v3.cfg | grep -qx 'padding=0,3'
    grep -A6 '^# node .*/Mixed_7b/branch3x3_2b/conv/Conv' inception_v3.cfg | grep -qx 'size=3,1'
}

# vit: the patch map Reshaped and Transposed into rows, the class token's Expand and Concat and
# the position embedding's Add ([tokens]); nn.MultiheadAttention's subgraph ([attention]);
# LayerNormalization at opset 17 and its ReduceMean ... Add chain at 14 over the rows; MatMul by
# a constant, Add of the bias and GELU ([linear] activation=gelu); Gather of the class token's
# row ([select_token]). The layer table is cfg/vit_b_16.cfg's.
@test "torchvision vit_b_16 and vit_b_32 import and match onnxruntime to 1e-5" {
    local models=(vit_b_16-opset14 vit_b_16-opset17 vit_b_32-opset14)
    /usr/bin/python3 "$REPO/scripts/ref/make_torchvision_onnx.py" . vit_b_16:224@14 \
        vit_b_16:224@17 vit_b_32:224@14 2> /dev/null
    imports_match_onnxruntime "${models[@]}"
    diff <(layer_rows "$REPO/cfg/vit_b_16.cfg" | awk '$1 != "softmax"') \
        <(layer_rows vit_b_16-opset17.cfg)
    diff <(layer_rows vit_b_16-opset14.cfg) <(layer_rows vit_b_16-opset17.cfg)
    [ "$(grep -A2 -m1 '^\[tokens\]' vit_b_32-opset14.cfg | tr '\n' ' ')" = \
        "[tokens] class_token=1 positional=1 " ]
    [ "$(grep -A2 -m1 '^\[attention\]' vit_b_16-opset14.cfg | tr '\n' ' ')" = \
        "[attention] heads=12 causal=0 " ]
    grep -A1 '^\[select_token\]' vit_b_16-opset14.cfg | grep -qx 'index=0'
    grep -A2 -m1 '^\[linear\]' vit_b_16-opset14.cfg | grep -qx 'activation=gelu'
}

@test "a truncated ONNX file is refused with one line and exit 1 at every cut, leaving no file" {
    "$CDL" export onnx "$REPO/cfg/digits.cfg" -o d.onnx > /dev/null
    size=$(stat -c %s d.onnx)
    for cut in 0 1 2 10 100 1000 $((size / 2)) $((size - 100)) $((size - 1)); do
        head -c "$cut" d.onnx > cut.onnx
        run "$CDL" import cut.onnx -o cut.cfg --out cut.cdl
        echo "cut $cut: $output"
        [ "$status" -eq 1 ]
        [ "${#lines[@]}" -eq 1 ]
        [[ "$output" == "cdl: cut.onnx: "* ]]
        [ ! -e cut.cfg ] && [ ! -e cut.cdl ]
    done
}

@test "an ONNX file with flipped bytes is refused or imported, never a crash" {
    "$CDL" export onnx "$REPO/cfg/digits.cfg" -o d.onnx > /dev/null
    size=$(stat -c %s d.onnx)
    for seed in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16; do
        python3 - d.onnx bad.onnx "$seed" <<'PY'
import random, sys
data = bytearray(open(sys.argv[1], "rb").read())
rng = random.Random(int(sys.argv[3]))
for _ in range(8):
    data[rng.randrange(len(data) if rng.random() < 0.5 else 400)] ^= 1 << rng.randrange(8)
open(sys.argv[2], "wb").write(data)
PY
        run "$CDL" import bad.onnx -o bad.cfg
        echo "seed $seed: $output"
        [ "$status" -eq 0 ] || { [ "$status" -le 2 ] && [ "${#lines[@]}" -eq 1 ]; }
    done
}

# onnx_graph FILE KIND: a small model built with the onnx package, of one of the kinds below.
onnx_graph() {
    python3 - "$@" <<'PY'
import sys
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
path, kind = sys.argv[1:3]
w = numpy_helper.from_array(np.ones((2, 1, 3, 3), np.float32), "w")
conv = {"pads": [1, 1, 1, 1]}
if kind == "dilated":
    conv["dilations"] = [2, 2]
if kind == "asymmetric":
    conv["pads"] = [0, 0, 1, 1]
nodes = [helper.make_node("Conv", ["x", "w"], ["y"], name="conv0", **conv)]
if kind == "sin":
    nodes.append(helper.make_node("Sin", ["y"], ["z"], name="sine"))
if kind == "leaky":
    nodes.append(helper.make_node("LeakyRelu", ["y"], ["z"], name="act", alpha=0.2))
if kind == "hardsigmoid":
    nodes.append(helper.make_node("HardSigmoid", ["y"], ["z"], name="gate", alpha=0.2))
if kind in ("dropout_bool", "dropout_train"):  # training_mode as a bool, as torch writes it
    mode = numpy_helper.from_array(np.array(kind == "dropout_train"), "mode")
    nodes = [helper.make_node("Constant", [], ["mode"], value=mode)] + nodes
    nodes.append(helper.make_node("Dropout", ["y", "", "mode"], ["z"], name="drop"))
if kind == "scale_w":  # a [C] constant broadcasts along W, not C
    scale = numpy_helper.from_array(np.array([2, 3], np.float32), "s")
    nodes = [helper.make_node("Constant", [], ["s"], value=scale)] + nodes
    nodes.append(helper.make_node("Mul", ["y", "s"], ["z"], name="scale"))
if kind == "transpose":
    nodes.append(helper.make_node("Transpose", ["y"], ["z"], name="hw", perm=[0, 1, 3, 2]))
if kind == "square":
    nodes.append(helper.make_node("Mul", ["y", "y"], ["z"], name="square"))
if kind in ("rows", "split5"):
    ints = {"rows": [[1], [3], [2]], "split5": [[1, 2, 1, 6, 6]]}[kind]
    init = [numpy_helper.from_array(np.array(v, np.int64), f"c{k}") for k, v in enumerate(ints)]
    inputs = ["y"] + [t.name for t in init]
    op = "Slice" if kind == "rows" else "Reshape"
    nodes.append(helper.make_node(op, inputs, ["z"], name=kind))
    nodes = [helper.make_node("Constant", [], [t.name], value=t) for t in init] + nodes
out = "z" if len(nodes) > 1 else "y"
graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 6, 6])],
                          [helper.make_tensor_value_info(out, TensorProto.FLOAT, None)], [w])
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
PY
}

@test "an operator or attribute cdl cannot express is refused naming node, operator and attribute" {
    onnx_graph ok.onnx plain
    run "$CDL" import ok.onnx -o ok.cfg --out ok.cdl
    [ "$status" -eq 0 ]
    onnx_graph drop.onnx dropout_bool
    run "$CDL" import drop.onnx -o drop.cfg
    [ "$status" -eq 0 ]
    onnx_graph train.onnx dropout_train
    run "$CDL" import train.onnx -o train.cfg
    [ "$status" -eq 2 ]
    [ "$output" = "cdl: train.onnx: node 'drop' (Dropout): input training_mode is not a constant false: only inference graphs import" ]
    onnx_graph sin.onnx sin
    run "$CDL" import sin.onnx -o sin.cfg
    [ "$status" -eq 2 ]
    [ "$output" = "cdl: sin.onnx: node 'sine' (Sin): operator not supported by cdl import (see \`cdl import --help\`)" ]
    onnx_graph dilated.onnx dilated
    run "$CDL" import dilated.onnx -o dilated.cfg
    [ "$status" -eq 2 ]
    [ "$output" = "cdl: dilated.onnx: node 'conv0' (Conv): attribute dilations=[2,2]: cdl has no dilated windows" ]
    onnx_graph asym.onnx asymmetric
    run "$CDL" import asym.onnx -o asym.cfg
    [ "$status" -eq 2 ]
    [[ "$output" == "cdl: asym.onnx: node 'conv0' (Conv): attribute pads=[0,0,1,1]: "* ]]
    onnx_graph leaky.onnx leaky
    run "$CDL" import leaky.onnx -o leaky.cfg
    [ "$status" -eq 2 ]
    [[ "$output" == "cdl: leaky.onnx: node 'act' (LeakyRelu): attribute alpha=0.2: "* ]]
    onnx_graph hsig.onnx hardsigmoid
    run "$CDL" import hsig.onnx -o hsig.cfg
    [ "$status" -eq 2 ]
    [[ "$output" == "cdl: hsig.onnx: node 'gate' (HardSigmoid): attributes alpha=0.2 beta=0.5: "* ]]
    onnx_graph square.onnx square
    run "$CDL" import square.onnx -o square.cfg
    [ "$status" -eq 2 ]
    [ "$output" = "cdl: square.onnx: node 'square' (Mul): multiplies 2x6x6 by 2x6x6: cdl multiplies a feature map only by a per-channel [C,1,1] gate of the same C ([scale_channels])" ]
    onnx_graph scale_w.onnx scale_w
    run "$CDL" import scale_w.onnx -o scale_w.cfg
    [ "$status" -eq 2 ]
    [ "$output" = "cdl: scale_w.onnx: node 'scale' (Mul): multiplies a 2x6x6 map by constant 's' of shape [2]: cdl multiplies by one value per channel ([layer_scale], shape [C,1,1])" ]
    onnx_graph hw.onnx transpose
    run "$CDL" import hw.onnx -o hw.cfg
    [ "$status" -eq 2 ]
    [ "$output" = "cdl: hw.onnx: node 'hw' (Transpose): attribute perm=[0,1,3,2] of a [N,C,H,W] map: cdl imports only a layer's map to channels last [0,2,3,1] and back [0,3,1,2]" ]
    onnx_graph rows.onnx rows
    run "$CDL" import rows.onnx -o rows.cfg
    [ "$status" -eq 2 ]
    [ "$output" = "cdl: rows.onnx: node 'rows' (Slice): only a Slice of a feature map's channels (one axis, 1, step 1) is supported" ]
    onnx_graph split5.onnx split5
    run "$CDL" import split5.onnx -o split5.cfg
    [ "$status" -eq 2 ]
    [ "$output" = "cdl: split5.onnx: node 'split5' (Reshape): a rank-5 Reshape imports only as the channel shuffle: [N,g,C/g,H,W], Transpose [0,2,1,3,4], Reshape back to [N,C,H,W]" ]
    [ ! -e hsig.cfg ] && [ ! -e square.cfg ] && [ ! -e sin.cfg ] && [ ! -e rows.cfg ] && [ ! -e dilated.cfg ] && [ ! -e asym.cfg ] && [ ! -e leaky.cfg ]
}

@test "import usage: -o is required, a missing file exits 1, --help lists the operators" {
    run "$CDL" import model.onnx
    [ "$status" -eq 2 ]
    [ "$output" = "cdl: import takes one MODEL.onnx and -o NET.cfg; see --help" ]
    run "$CDL" import missing.onnx -o net.cfg
    [ "$status" -eq 1 ]
    [ "$output" = "cdl: missing.onnx: cannot open ONNX model: No such file or directory" ]
    run "$CDL" import --help
    [ "$status" -eq 0 ]
    [[ "${lines[0]}" == "usage: cdl import MODEL.onnx -o NET.cfg [--out NET.cdl]"* ]]
    [[ "$output" == *"BatchNormalization"*"GlobalAveragePool"*"Concat"* ]]
}

# Small models from scripts/ref/make_onnx_import_cases.py, committed under tests/ref/onnx/.
CASES="$BATS_TEST_DIRNAME/../ref/onnx"

# onnxruntime_or_skip: the comparisons with onnxruntime need it in python3 (the pyenv one).
onnxruntime_or_skip() {
    python3 -c "import numpy, onnxruntime, PIL" 2> /dev/null || skip "python3 has no onnxruntime"
}

# random_npy FILE D0 D1 ...: seeded uniform [0, 1) float32 values of that shape.
random_npy() {
    python3 -c 'import sys, numpy as np
shape = [int(d) for d in sys.argv[2:]]
np.save(sys.argv[1], np.random.default_rng(len(shape)).random(shape, dtype=np.float32))' "$@"
}

@test "Sub/Div constants shaped [3,1,1] or [1,3,1,1] at the input import as [net] mean/std" {
    for name in norm_c11 norm_1c11; do
        run "$CDL" import "$CASES/$name.onnx" -o "$name.cfg"
        echo "$output"
        [ "$status" -eq 0 ]
        grep -qx 'mean=0.485,0.456,0.406' "$name.cfg"
        grep -qx 'std=0.229,0.224,0.225' "$name.cfg"
    done
}

@test "Sub constants shaped [3], [1,3], [1,1,1,3] or [3,1] vary along W or H: refused with their shape" {
    for name in norm_3 norm_13 norm_1113 norm_31; do
        run "$CDL" import "$CASES/$name.onnx" -o "$name.cfg"
        echo "$output"
        [ "$status" -eq 2 ]
        [ "${#lines[@]}" -eq 1 ]
        [ ! -e "$name.cfg" ]
    done
    run "$CDL" import "$CASES/norm_1113.onnx" -o n.cfg
    [ "$output" = "cdl: $CASES/norm_1113.onnx: node '/Sub' (Sub): constant '/Constant_output_0' of shape [1,1,1,3] varies along W of the [N,3,5,3] input (ONNX aligns shapes on the right): cdl's [net] mean/std hold one value per channel (shape [3,1,1] or [1,3,1,1])" ]
    run "$CDL" import "$CASES/norm_3.onnx" -o n.cfg
    [[ "$output" == *"constant '/Constant_output_0' of shape [3] varies along W of the [N,3,5,3] input"* ]]
    run "$CDL" import "$CASES/norm_13.onnx" -o n.cfg
    [[ "$output" == *"of shape [1,3] varies along W of the [N,3,5,3] input"* ]]
    run "$CDL" import "$CASES/norm_31.onnx" -o n.cfg
    [[ "$output" == *"of shape [3,1] varies along H of the [N,3,3,5] input"* ]]
}

@test "an opset-18 ReduceMean takes its axes from its input: [avgpool]" {
    run "$CDL" import "$CASES/reduce18.onnx" -o r.cfg
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$output" = "r.cfg: 3 layers from 4 ONNX nodes (opset 18)" ]
    grep -qx '\[avgpool\]' r.cfg
}

@test "Reshape to [2,-1] on a fixed batch of 2 is the flatten; to [1,-1] it is refused" {
    run "$CDL" import "$CASES/reshape_b2.onnx" -o b2.cfg
    echo "$output"
    [ "$status" -eq 0 ]
    run "$CDL" import "$CASES/reshape_b2_1.onnx" -o b1.cfg
    [ "$status" -eq 2 ]
    [ "$output" = "cdl: $CASES/reshape_b2_1.onnx: node '/Reshape' (Reshape): shape [1,-1]: only a flatten to [2, 18] is supported" ]
}

@test "torchvision's ViT at opset 13 imports; an attention with a causal mask is refused at the mask" {
    run "$CDL" import "$CASES/vit.onnx" -o vit.cfg
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(grep -c '^\[attention\]$' vit.cfg)" -eq 1 ]
    run "$CDL" import "$CASES/vit_masked.onnx" -o masked.cfg
    echo "$output"
    [ "$status" -eq 2 ]
    [ "$output" = "cdl: $CASES/vit_masked.onnx: node '/attention/Add_2' (Add): adds a constant inside a multi-head attention (a mask?): cdl's attention over an image's tokens lets every token see every token" ]
    [ ! -e masked.cfg ]
}

@test "imported models give onnxruntime's outputs on the same .npy tensor, one row per sample" {
    onnxruntime_or_skip
    # name and the .npy's shape: without a batch axis, a batch of 1, the fixed batch of 2
    for spec in "norm_c11:3 6 6" "norm_1c11:1 3 6 6" "reduce18:1 3 6 6" "reshape_b2:2 3 6 6" \
        "pools:1 3 8 8" "padded:1 3 6 6" "vit:1 3 8 8" "vit11:1 3 8 8"; do
        name=${spec%%:*}
        random_npy x.npy ${spec#*:}
        "$CDL" import "$CASES/$name.onnx" -o "$name.cfg" --out "$name.cdl" > /dev/null
        "$CDL" predict "$name.cdl" x.npy --top 100 --json > "$name.json"
        run python3 "$REPO/scripts/ref/onnx_import_check.py" "$CASES/$name.onnx" x.npy "$name.json"
        echo "# $name: ${lines[-1]}" >&3
        [ "$status" -eq 0 ]
    done
    [ "$(python3 -c 'import json; print(len(json.load(open("reshape_b2.json"))))')" -eq 2 ]
}
