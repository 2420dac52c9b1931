#!/usr/bin/env bats
# darknet .weights (cdl export darknet, --weights on predict, export and train) and output parity
# with Debian's darknet program on the same cfg, weights and photo.
load helpers
load darknet_helpers

# A 40x40 classifier of every layer that darknet and cdl share, in inference: [crop] (centre
# window, 2x-1), convolutions with and without batch norm, grouped and strided (no 1x1 strided
# one: darknet computes those wrongly), leaky/relu/tanh/elu/logistic/linear, both maxpool
# paddings, [reorg], [upsample], [route], [shortcut] between different channel counts,
# [avgpool], [connected] with batch norm, [dropout], [softmax] and a trailing [cost]. (A
# standalone [batchnorm] crashes this darknet at inference, so it is left out.)
write_parity_cfg() {
    cat > parity.cfg <<'CFG'
[net]
batch=1
width=40
height=40
channels=3
letterbox=1

[crop]
crop_height=32
crop_width=32
flip=1

[convolutional]
filters=8
size=3
stride=1
pad=1
batch_normalize=1
activation=leaky

[maxpool]
size=2
stride=2

[convolutional]
filters=16
size=3
stride=1
pad=1
groups=2
batch_normalize=1
activation=relu

[maxpool]
size=3
stride=1

[convolutional]
filters=16
size=3
stride=2
pad=1
activation=tanh

[reorg]
stride=2

[convolutional]
filters=16
size=1
stride=1
pad=1
batch_normalize=1
activation=elu

[upsample]
stride=2

[route]
layers=-1,-4

[shortcut]
from=-5
activation=leaky

[convolutional]
filters=12
size=1
stride=1
pad=0
activation=logistic

[avgpool]

[connected]
output=10
batch_normalize=1
activation=leaky

[dropout]
probability=0.3

[connected]
output=5
activation=linear

[softmax]

[cost]
type=sse
CFG
}

# replace_first_pool CFG SECTION: CFG with its first 2x2/2 [maxpool] replaced by SECTION (text
# with \n escapes), in place.
replace_first_pool() {
    /usr/bin/python3 - "$1" "$2" <<'PY'
import sys
text, pool = open(sys.argv[1]).read(), "[maxpool]\nsize=2\nstride=2\n"
assert pool in text
open(sys.argv[1], "w").write(text.replace(pool, sys.argv[2].replace("\\n", "\n"), 1))
PY
}

# square.png: a 300x300 crop of the photo. Its aspect is the net's, so darknet's letterbox and
# its plain resize (classifier fout: short side to the net's size, centre crop) give the same
# input.
square_photo() {
    /usr/bin/python3 -c "
from PIL import Image
Image.open('$PHOTO').convert('RGB').crop((100, 50, 400, 350)).save('square.png')"
}

# compare_fout CFG WEIGHTS: darknet's `classifier fout` probabilities (%g: 6 digits) of
# square.png against cdl predict's; prints the largest relative difference.
compare_fout() {
    printf 'square.png\n' > list.txt
    darknet classifier fout darknet.data "$2" "$2.weights" list.txt 2>/dev/null > darknet.txt
    "$CDL" predict "$1" --weights "$2.weights" square.png --json --top 100000 2>/dev/null > cdl.json
    /usr/bin/python3 - <<'PY'
import json
darknet = [float(v) for v in open("darknet.txt").read().split()[1:]]
cdl = {t["index"]: t["probability"] for t in json.load(open("cdl.json"))[0]["top"]}
assert len(darknet) == len(cdl), (len(darknet), len(cdl))
print(max(abs(cdl[i] - p) / p for i, p in enumerate(darknet)))
PY
}

@test "export darknet writes darknet's layout: header 0.2.0, then each layer's tensors in parser order" {
    "$CDL" export npy "$REPO/cfg/digits.cfg" --seed 3 npy >/dev/null
    /usr/bin/python3 "$REPO/scripts/ref/make_darknet_weights.py" "$REPO/cfg/digits.cfg" npy \
        expected.weights --copy
    run "$CDL" export darknet "$REPO/cfg/digits.cfg" --seed 3 -o digits.weights
    [ "$status" -eq 0 ]
    [[ "$output" == "digits.weights: darknet 0.2.0, "*" parameters, 96 running statistics" ]]
    cmp digits.weights expected.weights
}

@test "cdl -> .weights -> cdl gives back every tensor byte for byte" {
    train_digits 1
    "$CDL" export npy digits.cdl before >/dev/null
    run "$CDL" export darknet digits.cdl
    [ "$status" -eq 0 ]
    [ -f digits.weights ]
    "$CDL" export npy "$REPO/cfg/digits.cfg" --weights digits.weights after >/dev/null
    [ "$(ls before | wc -l)" -eq 12 ]
    diff -r before after
}

@test "train and predict start from darknet .weights for their cfg" {
    train_digits 1
    "$CDL" export darknet digits.cdl -o d.weights >/dev/null
    gray_png seven.png digit 7 >/dev/null
    # The same class; the probability may differ in its last digits (darknet's batch norm).
    run "$CDL" predict "$REPO/cfg/digits.cfg" --weights d.weights seven.png --top 1
    [ "$status" -eq 0 ]
    [[ "${lines[0]}" == "cdl: --weights d.weights: darknet 0.2.0 weights (seen "*" images); as darknet computes, bn_darknet=1, letterbox=1 (not set by the cfg; --set net.KEY=0 keeps cdl's)" ]]
    [ "$(echo "${lines[2]}" | awk '{print $2}')" = \
        "$("$CDL" predict digits.cdl seven.png --top 1 | awk 'NR == 2 {print $2}')" ]
    run "$CDL" train "$REPO/cfg/digits.cfg" --weights d.weights --epochs 1 --out t.cdl \
        --log-every 1000
    [ "$status" -eq 0 ]
    [[ "$output" == *"cdl: --weights d.weights: darknet 0.2.0 weights (seen "*" images); as darknet computes, bn_darknet=1, letterbox=1"* ]]
}

@test "a .weights file that does not fit the cfg is refused naming the file and the layer" {
    "$CDL" export darknet "$REPO/cfg/digits.cfg" -o d.weights >/dev/null
    head -c 1000 d.weights > short.weights
    run "$CDL" predict "$REPO/cfg/digits.cfg" --weights short.weights x.png
    [ "$status" -eq 2 ]
    [[ "$output" == "cdl: short.weights: the data ends inside layer 2 [convolutional] of "*"digits.cfg ("*" bytes short): these weights are not for this cfg, or the file is truncated" ]]
    cat d.weights d.weights > long.weights
    run "$CDL" export npy "$REPO/cfg/digits.cfg" --weights long.weights out
    [ "$status" -eq 2 ]
    [[ "$output" == "cdl: long.weights: "*" bytes more than the layers of "*"digits.cfg need (the last with tensors is layer 3 [connected]): these weights are not for this cfg" ]]
    run "$CDL" predict "$REPO/cfg/digits.cfg" --weights missing.weights x.png
    [ "$status" -eq 1 ]
    [ "$output" = "cdl: missing.weights: cannot open weights: No such file or directory" ]
}

@test "--weights goes with a CFG and replaces --seed" {
    train_digits 1
    run "$CDL" predict digits.cdl --weights d.weights x.png
    [ "$status" -eq 2 ]
    [ "$output" = "cdl: --weights goes with a CFG, and replaces --seed" ]
    run "$CDL" export darknet "$REPO/cfg/digits.cfg" --seed 2 --weights d.weights
    [ "$status" -eq 2 ]
    [ "$output" = "cdl: --weights replaces --seed: give one of them" ]
}

@test "darknet's int32-seen header and transposed connected weights load like 0.2.0" {
    write_parity_cfg
    random_weights parity.cfg new.weights --seed 5
    random_weights parity.cfg old.weights --seed 5 --version 0.1.0
    [ "$(stat -c %s old.weights)" -eq $(($(stat -c %s new.weights) - 4)) ]
    square_photo
    "$CDL" predict parity.cfg --weights new.weights square.png --json > new.json 2>/dev/null
    "$CDL" predict parity.cfg --weights old.weights square.png --json > old.json 2>/dev/null
    cmp new.json old.json
}

@test "cdl predict matches darknet classifier fout to 1e-4 on a net of every shared layer" {
    write_parity_cfg
    write_darknet_data 5
    random_weights parity.cfg parity.cfg.weights --seed 1
    square_photo
    run compare_fout parity.cfg parity.cfg
    echo "$output"
    [ "$status" -eq 0 ]
    /usr/bin/python3 -c "assert $output < 1e-4, $output"
    echo "# largest relative difference to darknet's %g output: $output" >&3
}

@test "a downsampling [upsample] (stride=-2) matches darknet classifier fout to 1e-4" {
    write_parity_cfg
    cp parity.cfg down.cfg
    replace_first_pool down.cfg '[upsample]\nstride=-2\nscale=0.25\n'
    write_darknet_data 5
    random_weights down.cfg down.cfg.weights --seed 1
    square_photo
    run compare_fout down.cfg down.cfg
    echo "$output"
    [ "$status" -eq 0 ]
    /usr/bin/python3 -c "assert $output < 1e-4, $output"
}

@test "with PyTorch's batch norm (bn_darknet=0) the same weights miss darknet's output" {
    write_parity_cfg
    write_darknet_data 5
    random_weights parity.cfg parity.cfg.weights --seed 1
    sed 's/^letterbox=1$/letterbox=1\nbn_darknet=0/' parity.cfg > pytorch_bn.cfg
    cp parity.cfg.weights pytorch_bn.cfg.weights
    square_photo
    run compare_fout pytorch_bn.cfg parity.cfg
    echo "$output"
    [ "$status" -eq 0 ]
    /usr/bin/python3 -c "assert $output > 1e-3, $output"
}

@test "cdl predict matches darknet classifier predict on a letterboxed photo (darknet prints 0.01%)" {
    write_parity_cfg
    write_darknet_data 5
    random_weights parity.cfg parity.weights --seed 2
    darknet classifier predict darknet.data parity.cfg parity.weights "$PHOTO" 2>/dev/null > darknet.txt
    "$CDL" predict parity.cfg --weights parity.weights "$PHOTO" --top 5 2>/dev/null > cdl.txt
    run compare_top darknet.txt cdl.txt
    echo "$output"
    [ "$status" -eq 0 ]
}

@test "darknet's tiny.cfg with the same weights predicts the photo as darknet does" {
    sed 's/^\[net\]$/[net]\nletterbox=1/' /usr/share/darknet/cfg/tiny.cfg > tiny.cfg
    write_darknet_data 1000
    random_weights tiny.cfg tiny.weights --seed 3 --variances 0.5,2
    darknet classifier predict darknet.data tiny.cfg tiny.weights "$PHOTO" 2>/dev/null |
        head -5 > darknet.txt
    "$CDL" predict tiny.cfg --weights tiny.weights "$PHOTO" --top 5 2>/dev/null > cdl.txt
    run compare_top darknet.txt cdl.txt
    echo "$output"
    [ "$status" -eq 0 ]
}

@test "a darknet model exports to ONNX that onnxruntime runs as cdl predict does" {
    write_parity_cfg
    random_weights parity.cfg parity.weights --seed 4
    # Also the variants of crop and upsample the parity net does not use (a summing downsample
    # in place of the 2x2 max pool).
    sed 's/^flip=1$/noadjust=1/; /^\[upsample\]$/,/^$/ s/^stride=2$/stride=2\nscale=0.5/' \
        parity.cfg > variants.cfg
    replace_first_pool variants.cfg '[upsample]\nstride=-2\nscale=0.5\n'
    square_photo
    /usr/bin/python3 -c "
from PIL import Image
Image.open('square.png').resize((40, 40)).save('input.png')"
    for cfg in parity variants; do
        if [ $cfg = parity ]; then source=(--weights parity.weights); else source=(--seed 2); fi
        "$CDL" predict $cfg.cfg "${source[@]}" input.png --json --top 100 > $cfg.json 2>/dev/null
        "$CDL" export onnx $cfg.cfg "${source[@]}" -o $cfg.onnx 2>/dev/null
        run /usr/bin/python3 "$REPO/scripts/ref/onnx_check.py" $cfg.onnx
        [ "$status" -eq 0 ]
        run python3 "$REPO/scripts/ref/onnx_check.py" $cfg.onnx input.png $cfg.json
        echo "$output"
        [ "$status" -eq 0 ]
    done
}
