#!/usr/bin/env bats
# cdl export onnx and npy. ONNX files are checked with onnx.checker under both Debian's onnx
# 1.12 (/usr/bin/python3) and PyPI's (python3), then run in onnxruntime and compared with
# `cdl predict` on an image of exactly the net's size (scripts/ref/onnx_check.py).
load helpers

# random_png FILE WIDTH HEIGHT CHANNELS: random pixels, grayscale for 1 channel, else RGB.
random_png() {
    /usr/bin/python3 - "$@" <<'PY'
import sys
import numpy as np
from PIL import Image
path, w, h, c = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
pixels = np.random.default_rng(w * 1000 + h * 10 + c).integers(0, 256, (h, w, 3), dtype=np.uint8)
Image.fromarray(pixels[:, :, 0] if c == 1 else pixels, "L" if c == 1 else "RGB").save(path)
PY
}

# expect_same_as_predict ONNX MODEL [--seed S]: both onnx checkers pass, and onnxruntime's
# output on a random image of the net's size is cdl predict's to 1e-4, or to $TOLERANCE where set
# (figure on fd 3).
expect_same_as_predict() {
    local onnx=$1 model=$2
    shift 2
    read -r c h w < <("$CDL" info "$model" --json |
        python3 -c 'import json, sys; print(*json.load(sys.stdin)["input"])')
    random_png image.png "$w" "$h" "$c"
    # --no-crop: the graph starts after the cfg's framing (center crop, letterbox).
    "$CDL" predict "$model" image.png --top 100000 --json --no-crop "$@" > predict.json
    run /usr/bin/python3 "$REPO/scripts/ref/onnx_check.py" "$onnx"
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == *"checker passed (onnx 1.12"* ]]
    run python3 "$REPO/scripts/ref/onnx_check.py" "$onnx" image.png predict.json $TOLERANCE
    echo "$output"
    [ "$status" -eq 0 ]
    echo "# $onnx: ${lines[-1]}" >&3
}

# Every layer type, activation and layout change, on the digits' 8x8 gray images: grouped,
# depthwise and strided convolutions; shortcuts from larger (strided), smaller (spread) and
# flat inputs with fewer or more channels, alpha and beta; maxpools with even and uneven
# padding; routes of one and two layers and of a channel group; dropout after NCHW and flat values; a standalone
# batchnorm; connected with batch norm feeding a convolution; a squeeze-excitation block
# ([avgpool], two 1x1 convolutions, [scale_channels]) after a channel [shuffle] and a [pad] on
# 8x8 maps, then ConvNeXt's [layernorm] channels=1, [layer_scale] and [drop_path] on a residual
# branch, added to the classifier.
write_layers_cfg() {
    cat > layers.cfg <<'CFG'
[net]
batch=32
width=8
height=8
channels=1
learning_rate=0.01
momentum=0.9

[convolutional]
filters=8
size=3
pad=1
batch_normalize=1
activation=relu

[convolutional]
filters=8
size=3
pad=1
groups=4
activation=leaky

[convolutional]
filters=8
size=3
stride=2
pad=1
groups=8
batch_normalize=1
activation=swish

[shortcut]
from=-3
alpha=0.5
beta=2

[maxpool]
size=3
stride=1

[maxpool]
size=2
stride=1
padding=1

[convolutional]
filters=4
size=1
activation=mish

[shortcut]
from=0
activation=tanh

[convolutional]
filters=16
size=1
activation=gelu

[route]
layers=0

[shortcut]
from=8
activation=elu

[route]
layers=-1,1

[route]
layers=-1
groups=2
group_id=1

[dropout]
probability=0.3

[batchnorm]

[convolutional]
filters=6
size=3
stride=2
activation=relu6

[shortcut]
from=9
activation=logistic

[connected]
output=12
batch_normalize=1
activation=gelu

[dropout]
probability=0.2

[convolutional]
filters=10
size=1
activation=linear

[shortcut]
from=18
beta=0.5

[route]
layers=0

[shuffle]
groups=4

[pad]
left=1
bottom=2
value=0.5

[convolutional]
filters=10
size=1
activation=hardswish

[avgpool]

[convolutional]
filters=3
size=1
activation=relu

[convolutional]
filters=10
size=1
activation=hardsigmoid

[scale_channels]
from=-4
activation=swish

[layernorm]
channels=1

[layer_scale]
init=0.5

[drop_path]
probability=0.2

[shortcut]
from=-4

[avgpool]

[shortcut]
from=19

[softmax]
CFG
}

@test "every image cfg in cfg/ exports to ONNX that onnxruntime runs as cdl predict does" {
    local n=0
    for cfg in "$REPO"/cfg/*.cfg; do
        name=$(basename "$cfg" .cfg)
        grep -q '^seq=' "$cfg" && continue # text models: next test and export_text.bats
        if grep -q '^\[yolo\]' "$cfg"; then # detectors: both checkers here, values in export_detector.bats
            for decode in "" --decode; do
                "$CDL" export onnx "$cfg" $decode -o "$name.onnx" > /dev/null
                run /usr/bin/python3 "$REPO/scripts/ref/onnx_check.py" "$name.onnx"
                echo "$output"
                [ "$status" -eq 0 ]
            done
            continue
        fi
        run "$CDL" export onnx "$cfg" --seed 5 -o "$name.onnx"
        echo "$output"
        [ "$status" -eq 0 ]
        [ "$output" = "$name.onnx: opset 13, IR version 7, dynamic batch" ]
        expect_same_as_predict "$name.onnx" "$cfg" --seed 5
        n=$((n + 1))
    done
    [ "$n" -ge 3 ]
}

@test "every sequence cfg in cfg/ exports to ONNX that the checkers pass (export_text.bats runs it)" {
    local n=0
    for cfg in $(grep -l '^seq=' "$REPO"/cfg/*.cfg); do
        name=$(basename "$cfg" .cfg)
        if grep -q '^source=' "$cfg"; then # sequence to sequence: export_seq2seq.bats runs it
            run "$CDL" export onnx "$cfg" --seed 5 -o "$name.onnx"
            [ "$status" -eq 0 ]
            [ "$output" = "$name.encoder.onnx and $name.decoder.onnx: opset 13, IR version 7, dynamic batch" ]
            for part in encoder decoder; do
                run /usr/bin/python3 "$REPO/scripts/ref/onnx_check.py" "$name.$part.onnx"
                echo "$output"
                [ "$status" -eq 0 ]
            done
            continue
        fi
        run "$CDL" export onnx "$cfg" --seed 5 -o "$name.onnx"
        echo "$output"
        [ "$status" -eq 0 ]
        [ "$output" = "$name.onnx: opset 13, IR version 7, dynamic batch" ]
        run /usr/bin/python3 "$REPO/scripts/ref/onnx_check.py" "$name.onnx"
        echo "$output"
        [ "$status" -eq 0 ]
        n=$((n + 1))
    done
    [ "$n" -ge 2 ]
}

@test "a trained digits checkpoint exports to ONNX that onnxruntime runs as cdl predict does" {
    train_digits
    "$CDL" export onnx digits.cdl
    expect_same_as_predict digits.onnx digits.cdl
}

@test "every layer type and activation exports, with trained batch-norm statistics" {
    write_layers_cfg
    "$CDL" train layers.cfg --data "$REPO/cfg/digits.data" --epochs 1 --out layers.cdl \
        --threads 1 --log-every 1000 2>/dev/null
    "$CDL" export onnx layers.cdl
    expect_same_as_predict layers.onnx layers.cdl
    "$CDL" export onnx layers.cdl --opset 17 -o layers17.onnx
    expect_same_as_predict layers17.onnx layers.cdl
}

@test "a trained vision transformer exports: [tokens], [select_token], image-net attention, to 1e-5" {
    vit_cfg vit.cfg
    "$CDL" train vit.cfg --data "$REPO/cfg/digits.data" --epochs 1 --out vit.cdl --threads 1 \
        --log-every 1000 2>/dev/null
    TOLERANCE=1e-5
    "$CDL" export onnx vit.cdl
    expect_same_as_predict vit.onnx vit.cdl
    "$CDL" export onnx vit.cdl --opset 17 --batch 1 -o vit17.onnx
    expect_same_as_predict vit17.onnx vit.cdl
    # the token rows are [N][1][T][C] values: the class token expanded to the batch, the
    # position embedding added, the class token's row sliced out
    python3 -c '
import onnx
g = onnx.load("vit.onnx").graph
ops = [n.op_type for n in g.node if n.output[0].split(".")[0] == "layer1"]
assert ops == ["Reshape", "Transpose", "Shape", "Slice", "Concat", "Expand", "Concat", "Add",
               "Reshape"], ops
shapes = {i.name: list(i.dims) for i in g.initializer}
assert shapes["layer1.class_token"] == [1, 1, 16] and shapes["layer1.positional"] == [1, 17, 16]
'
}

@test "--batch fixes the batch axis; a net without softmax keeps its NCHW output" {
    # 6x5 RGB input; the connected layers' flat outputs are reshaped back for the route.
    printf '[net]\nwidth=6\nheight=5\nchannels=3\n\n[convolutional]\nfilters=4\nsize=3\nstride=2\npad=1\nactivation=leaky\n\n[connected]\noutput=7\nactivation=relu\n\n[connected]\noutput=5\nactivation=logistic\n\n[route]\nlayers=-1\n\n[avgpool]\n' > flat.cfg
    "$CDL" export onnx flat.cfg --batch 1
    python3 -c '
import onnx
g = onnx.load("flat.onnx").graph
dims = lambda v: [d.dim_value or d.dim_param for d in v.type.tensor_type.shape.dim]
assert dims(g.input[0]) == [1, 3, 5, 6], dims(g.input[0])
assert dims(g.output[0]) == [1, 5, 1, 1], dims(g.output[0])
'
    expect_same_as_predict flat.onnx flat.cfg
}

@test "Inception's and DenseNet's layers export: windowed [avgpool], unpadded [maxpool], bias=0" {
    # 9x8 RGB input: a bias-free conv, the 3x3 average with padding counted, a 3x3 stride-2
    # average (5x4), an unpadded 3x3 stride-2 max pool (2x1).
    printf '[net]\nwidth=8\nheight=9\nchannels=3\n\n[convolutional]\nfilters=4\nsize=3\npad=1\nbias=0\nactivation=tanh\n\n[avgpool]\nsize=3\nstride=1\npadding=1\n\n[avgpool]\nsize=3\nstride=2\npadding=1\n\n[maxpool]\nsize=3\nstride=2\npadding=0\n\n[connected]\noutput=5\nactivation=linear\n\n[softmax]\n' > pools.cfg
    "$CDL" export onnx pools.cfg --seed 3
    expect_same_as_predict pools.onnx pools.cfg --seed 3
}

@test "non-square convolutions export with kernel_shape, strides and pads per axis" {
    # Inception v3's factorised convolutions (tests/ref/inception_convs.cfg) and a head
    { cat "$REPO/tests/ref/inception_convs.cfg"; printf '\n[connected]\noutput=5\nactivation=linear\n\n[softmax]\n'; } > convs.cfg
    "$CDL" export onnx convs.cfg --seed 3
    run /usr/bin/python3 -c "
import onnx
g = onnx.load('convs.onnx').graph
for n in g.node:
    if n.op_type == 'Conv':
        a = {x.name: list(x.ints) for x in n.attribute if x.ints}
        print(a['kernel_shape'], a['strides'], a['pads'])"
    echo "$output"
    [ "${lines[0]}" = "[1, 7] [1, 1] [0, 3, 0, 3]" ]
    [ "${lines[1]}" = "[7, 1] [1, 1] [3, 0, 3, 0]" ]
    [ "${lines[2]}" = "[1, 3] [1, 2] [0, 1, 0, 1]" ]
    [ "${lines[3]}" = "[3, 1] [2, 1] [1, 0, 1, 0]" ]
    expect_same_as_predict convs.onnx convs.cfg --seed 3
}

@test "the ONNX of a cfg depends on --seed as cdl predict does" {
    write_layers_cfg
    "$CDL" export onnx layers.cfg --seed 2
    random_png image.png 8 8 1
    "$CDL" predict layers.cfg image.png --top 10 --json --seed 3 > predict.json
    run python3 "$REPO/scripts/ref/onnx_check.py" layers.onnx image.png predict.json
    echo "$output"
    [ "$status" -eq 1 ]
    [[ "$output" == *"exceeds 0.0001"* ]]
}

@test "export onnx defaults to weights/latest.cdl, named after the checkpoint it links to" {
    "$CDL" train "$REPO/cfg/digits.cfg" --epochs 1 --threads 1 2>/dev/null
    run "$CDL" export onnx
    [ "$status" -eq 0 ]
    [ "$output" = "digits.onnx: opset 13, IR version 7, dynamic batch" ]
    [ -s digits.onnx ]
}

@test "export onnx into a missing directory fails with exit 1 and leaves no file" {
    run "$CDL" export onnx "$REPO/cfg/digits.cfg" -o missing/digits.onnx
    echo "$output"
    [ "$status" -eq 1 ]
    [ "$output" = "cdl: missing/digits.onnx: cannot create a file in missing: No such file or directory" ]
    [ -z "$(ls -A)" ]
}

@test "export onnx over a directory fails with exit 1 and leaves no temporary file" {
    mkdir out.onnx
    run "$CDL" export onnx "$REPO/cfg/digits.cfg" -o out.onnx
    echo "$output"
    [ "$status" -eq 1 ]
    [ "$output" = "cdl: out.onnx: cannot write: Is a directory" ]
    [ "$(ls -A)" = out.onnx ]
    [ -z "$(ls -A out.onnx)" ]
}

@test "export usage errors exit 2: no or unknown format, opset out of range, --seed on a checkpoint" {
    run "$CDL" export
    [ "$status" -eq 2 ]
    [ "$output" = "cdl: export needs a format, onnx, npy, darknet or safetensors; see --help" ]
    run "$CDL" export tflite
    [ "$status" -eq 2 ]
    [ "$output" = "cdl: export needs a format, onnx, npy, darknet or safetensors (not 'tflite'); see --help" ]
    run "$CDL" export onnx "$REPO/cfg/digits.cfg" --opset 12
    [ "$status" -eq 2 ]
    [ "$output" = "cdl: bad value '12' for --opset: expected an integer in 13..17" ]
    train_digits 1
    run "$CDL" export onnx digits.cdl --seed 3
    [ "$status" -eq 2 ]
    [ "$output" = "cdl: --seed and --weights apply to cfg files, not checkpoints" ]
    run "$CDL" export npy digits.cdl out -o x.onnx
    [ "$status" -eq 2 ]
    [ "$output" = "cdl: option -o applies to export onnx, not npy" ]
}

@test "export --help lists the formats and options" {
    run "$CDL" export --help
    [ "$status" -eq 0 ]
    [[ "${lines[0]}" == "usage: cdl export onnx [MODEL|CFG]"*"export npy MODEL|CFG DIR"* ]]
    for opt in -o --batch --opset --seed; do
        [[ "$output" == *"  $opt VALUE"* ]]
    done
}

@test "export npy writes every checkpoint tensor, shaped, with the values ONNX holds" {
    train_digits
    run "$CDL" export npy digits.cdl tensors
    [ "$status" -eq 0 ]
    [ "$output" = "tensors: 9978 parameters, 96 running statistics" ]
    "$CDL" export onnx digits.cdl
    python3 - <<'PY'
import json, os, struct
import numpy as np
import onnx
from onnx import numpy_helper

raw = open("digits.cdl", "rb").read()
header = json.loads(raw[24:24 + struct.unpack_from("<Q", raw, 16)[0]])
want = {f"layer{t['layer']}.{t['name']}": t["count"] for t in header["tensors"]}
files = sorted(os.listdir("tensors"))
assert files == sorted(name + ".npy" for name in want), files
onnx_values = {t.name: numpy_helper.to_array(t)
               for t in onnx.load("digits.onnx").graph.initializer}
shapes = {"layer0.weights": (16, 1, 3, 3), "layer2.weights": (32, 16, 3, 3),
          "layer3.weights": (10, 512)}
for name, count in want.items():
    a = np.load(f"tensors/{name}.npy")
    assert a.dtype == np.float32, (name, a.dtype)
    assert a.shape == shapes.get(name, (count,)), (name, a.shape)
    assert np.array_equal(a, onnx_values[name]), name
PY
}

@test "export npy shapes grouped convolution and connected weights naturally" {
    write_layers_cfg
    "$CDL" export npy layers.cfg tensors --seed 4
    python3 -c '
import numpy as np
assert np.load("tensors/layer1.weights.npy").shape == (8, 2, 3, 3)   # groups=4 of 8 channels
assert np.load("tensors/layer2.weights.npy").shape == (8, 1, 3, 3)   # depthwise
assert np.load("tensors/layer17.weights.npy").shape == (12, 54)      # 6x3x3 inputs
assert np.load("tensors/layer14.rolling_variance.npy").shape == (8,)  # after the group route
'
}

@test "export npy into a path that is a file fails with exit 1" {
    touch taken
    run "$CDL" export npy "$REPO/cfg/digits.cfg" taken
    [ "$status" -eq 1 ]
    [ "$output" = "cdl: taken: not a directory" ]
}

@test "predict on a cfg initialises from --seed: the same seed gives the same output" {
    random_png image.png 8 8 1
    a=$("$CDL" predict "$REPO/cfg/digits.cfg" image.png --top 10 --json --seed 9)
    b=$("$CDL" predict "$REPO/cfg/digits.cfg" image.png --top 10 --json --seed 9)
    c=$("$CDL" predict "$REPO/cfg/digits.cfg" image.png --top 10 --json)
    [ "$a" = "$b" ]
    [ "$a" != "$c" ]
}

@test "export onnx folds the [net] mean/std normalisation into the graph" {
    sed 's/^channels=1$/channels=3\nmean=0.485,0.456,0.406\nstd=0.229,0.224,0.225/' \
        "$REPO/cfg/digits.cfg" > norm.cfg
    grep -q '^mean=' norm.cfg
    run "$CDL" export onnx norm.cfg -o norm.onnx --seed 3
    [ "$status" -eq 0 ]
    expect_same_as_predict norm.onnx norm.cfg --seed 3
}
