#!/usr/bin/env bats
# Multi-scale training (random= on [yolo]): a yolov3-tiny-shaped detector on 64 images of
# data/detection/fashion-det changes its input size every 10 steps, says so, resumes to the
# checkpoint an uninterrupted run writes, and its loss still falls; bad values are refused.
load helpers
load detection_helpers

# ms.cfg: 64x64, two [yolo] heads (strides 16 and 8) with random=$1 (AlexeyAB's rule at factor 1.4:
# sizes 64, 96 and 128); ms.data: the first 64 training and 16 validation images of fashion-det.
multi_scale_setup() {
    local set="$REPO/data/detection/fashion-det"
    [ -d "$set" ] || skip "data/detection/fashion-det is missing (scripts/detection-data.sh)"
    head -64 "$set/train.txt" | sed "s|^|$set/|" > train.txt
    head -16 "$set/valid.txt" | sed "s|^|$set/|" > valid.txt
    printf 'classes=10\ntrain=train.txt\nvalid=valid.txt\nnames=%s\n' "$REPO/cfg/fashion.names" \
        > ms.data
    local head="[yolo]
anchors=33,14, 18,35, 40,22, 28,40, 47,32, 41,49
classes=10
num=6
max=8
jitter=0
random=$1"
    write_detector_cfg ms.cfg 'batch=8
width=64
height=64
channels=3
optimizer=adam
learning_rate=0.002
max_batches=1000
flip=1' 1 "8 16 32 32" <<CFG
[convolutional]
batch_normalize=1
filters=64
size=3
pad=1
activation=leaky
[convolutional]
size=1
filters=45
activation=linear
$head
mask=3,4,5
[route]
layers=-3
[convolutional]
batch_normalize=1
filters=16
size=1
activation=leaky
[upsample]
stride=2
[route]
layers=-1,6
[convolutional]
batch_normalize=1
filters=32
size=3
pad=1
activation=leaky
[convolutional]
size=1
filters=45
activation=linear
$head
mask=0,1,2
CFG
}

@test "random=1.4 trains at sizes that change every 10 steps, says so, and the loss falls" {
    multi_scale_setup 1.4
    run "$CDL" train ms.cfg --data ms.data --epochs 6 --out ms.cdl --threads 1 --log run.jsonl \
        --log-every 1
    [ "$status" -eq 0 ]
    [[ "$output" == *"step 1: resizing the input to 128x128"* ]]
    # said where the size changes, at steps 1, 11, 21, ...: not after each epoch's evaluation
    [ -z "$(echo "$output" | grep 'resizing the input' | grep -v -E 'step [0-9]*1: ')" ]
    /usr/bin/python3 - <<'PY'
import json
rows = [json.loads(l) for l in open("run.jsonl")]
steps = [r for r in rows if r["type"] == "step"]
sizes = [(r["width"], r["height"]) for r in steps]
assert len(sizes) == 48, len(sizes)
# the first 10 steps at the largest size, then a size per 10 steps from 64, 96 and 128
assert set(sizes[:10]) == {(128, 128)}, sizes
for first in range(0, 48, 10):
    assert len(set(sizes[first:first + 10])) == 1, sizes
assert set(sizes) <= {(64, 64), (96, 96), (128, 128)} and len(set(sizes)) >= 2, sizes
epochs = [r["loss"] for r in rows if r["type"] == "epoch"]
# Adam at 0.002: the epoch loss falls by more than a third over 6 epochs
assert len(epochs) == 6 and epochs[-1] < 0.67 * epochs[0], epochs
PY
    # the checkpoint, evaluation and inference keep the cfg's size
    run "$CDL" info ms.cdl
    [[ "$output" == *"input 3x64x64 (CxHxW)"* ]]
    "$CDL" eval ms.cdl --data ms.data --json | jq -e '.images == 16'
}

@test "random=1.4: a run resumed after 3 epochs ends as the uninterrupted one" {
    multi_scale_setup 1.4
    "$CDL" train ms.cfg --data ms.data --epochs 6 --out straight.cdl --threads 1 2>/dev/null
    "$CDL" train ms.cfg --data ms.data --epochs 3 --out split.cdl --threads 1 2>/dev/null
    run "$CDL" train --resume split.cdl --data ms.data --epochs 6 --threads 1
    [ "$status" -eq 0 ]
    [[ "$output" == *"resizing the input to"* ]]
    cmp straight.cdl split.cdl
}

@test "random= and resize= values darknet does not take are refused naming the line" {
    multi_scale_setup 0.5
    run "$CDL" train ms.cfg --data ms.data --epochs 1 --out ms.cdl
    [ "$status" -eq 2 ]
    [[ "$output" == *"ms.cfg:"*"random"*"expected 0 (off), 1 (multi-scale training) or a size factor above 1"* ]]
    multi_scale_setup 1
    sed -i 's/^random=1$/random=1\nresize=0.5/' ms.cfg
    run "$CDL" train ms.cfg --data ms.data --epochs 1 --out ms.cdl
    [ "$status" -eq 2 ]
    [[ "$output" == *"ms.cfg:"*"resize"*"expected a size factor of at least 1"* ]]
}

@test "random=1 on a net with a layer of a fixed size is refused naming the layer" {
    multi_scale_setup 1
    printf '[avgpool]\nsize=1\n' >> ms.cfg
    run "$CDL" train ms.cfg --data ms.data --epochs 1 --out ms.cdl
    [ "$status" -eq 2 ]
    [[ "$output" == *"ms.cfg: random= (multi-scale training): layer 18 [avgpool] cannot change its input size"* ]]
    [ ! -e ms.cdl ]
}
