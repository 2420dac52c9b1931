#!/usr/bin/env bats
# Detection parity with Debian's darknet program (pjreddie's 2018 code): its own detector cfgs
# with random .weights (scripts/ref/make_darknet_weights.py, not cdl), the same photo, and
# `darknet detector valid`'s full-precision results against `cdl detect --weights`.
load helpers
load darknet_helpers

setup() {
    [ -x /usr/bin/darknet ] || skip "Debian's darknet is not installed"
    WORK="$(mktemp -d)"
    cd "$WORK"
}

# Random weights for CFG (a copy in the test directory) whose objectness and class biases are
# lowered by 5, so that hundreds of boxes, not all of them, pass darknet valid's 0.005.
detector_weights() {
    random_weights "$1" "$2" --seed "$3" --variances 0.5,2 --score-bias -5
}

@test "yolov3-tiny.cfg: cdl detect gives darknet detector valid's boxes and scores" {
    cp /usr/share/darknet/cfg/yolov3-tiny.cfg .
    for seed in 1 2; do
        detector_weights yolov3-tiny.cfg y$seed.weights $seed
        run compare_detections yolov3-tiny.cfg y$seed.weights "$PHOTO" 80
        echo "$output"
        [ "$status" -eq 0 ]
        echo "# seed $seed: $output" >&3
    done
}

# pjreddie's [yolo] box deltas have no normalizer (AlexeyAB's default, cdl's, is 0.75).
YOLO_UNNORMALIZED="--set 16.iou_normalizer=1 --set 23.iou_normalizer=1"

# A training set darknet's random flip cannot change: one 416x416 image, mirror-symmetric, with
# a centred box and a mirrored pair (set/images/sym.png, set/labels/sym.txt, train.txt, t.data
# of 80 classes, backup/ for darknet's final weights).
symmetric_set() {
    mkdir -p set/images set/labels backup
    /usr/bin/python3 - <<'PY'
import numpy as np
from PIL import Image
half = np.random.default_rng(5).integers(0, 256, (416, 208, 3), dtype=np.uint8)
Image.fromarray(np.concatenate([half, half[:, ::-1]], axis=1)).save("set/images/sym.png")
open("set/labels/sym.txt", "w").write("3 0.5 0.3 0.2 0.3\n7 0.25 0.7 0.1 0.15\n7 0.75 0.7 0.1 0.15\n")
PY
    echo "$PWD/set/images/sym.png" > train.txt
    seq 0 79 > names.txt
    printf 'classes=80\ntrain=train.txt\nnames=names.txt\nbackup=backup\n' > t.data
}

# CFG for one darknet training step without augmentation: batch 1, one batch, no colour
# jitter, jitter=0 and random=0 in the [yolo] layers (no crop, no resize).
one_step_cfg() {
    sed 's/^batch=.*/batch=1/; s/^subdivisions=.*/subdivisions=1/; s/^max_batches *=.*/max_batches=1/
         s/^hue *=.*/hue=0/; s/^saturation *=.*/saturation=1/; s/^exposure *=.*/exposure=1/
         s/^jitter *=.*/jitter=0/; s/^random *=.*/random=0/' "$1"
}

# one_step_losses CFG WEIGHTS [ARGS...]: prints darknet's printed loss of the first step and
# cdl's (cdl train given ARGS too).
one_step_losses() {
    local darknet cdl cfg=$1 weights=$2
    shift 2
    darknet=$(darknet detector train t.data "$cfg" "$weights" 2>/dev/null |
        sed -n 's/^1: \([0-9.]*\),.*/\1/p')
    "$CDL" train "$cfg" --data t.data --weights "$weights" --epochs 1 --log run.jsonl \
        --threads 1 --out one.cdl "$@" >/dev/null 2>&1
    cdl=$(/usr/bin/python3 -c "import json; print(json.loads(open('run.jsonl').readline())['loss'])")
    echo "$darknet $cdl"
}

@test "yolov3-tiny.cfg without batch norm: one training step's loss is darknet's to 1e-5" {
    symmetric_set
    one_step_cfg /usr/share/darknet/cfg/yolov3-tiny.cfg |
        sed 's/^batch_normalize=1/batch_normalize=0/' > y.cfg
    random_weights y.cfg y.weights --seed 1
    read -r darknet cdl < <(one_step_losses y.cfg y.weights $YOLO_UNNORMALIZED)
    echo "darknet $darknet cdl $cdl"
    # darknet prints the mean of its two [yolo] layers' costs; cdl their sum.
    /usr/bin/python3 -c "assert abs($cdl / 2 - $darknet) <= 1e-5 * $darknet, ($darknet, $cdl)"
    echo "# darknet $darknet, cdl $cdl / 2" >&3
}

# With batch norm too: loading darknet .weights sets bn_darknet=1, so cdl trains with darknet's
# batch norm (the unbiased batch variance, divided by sqrt(var) + 1e-6).
@test "yolov3-tiny.cfg with batch norm: one training step's loss is darknet's to 1e-5" {
    symmetric_set
    one_step_cfg /usr/share/darknet/cfg/yolov3-tiny.cfg > y.cfg
    random_weights y.cfg y.weights --seed 1 --variances 0.5,2
    read -r darknet cdl < <(one_step_losses y.cfg y.weights $YOLO_UNNORMALIZED)
    echo "darknet $darknet cdl $cdl"
    /usr/bin/python3 -c "assert abs($cdl / 2 - $darknet) <= 1e-5 * $darknet, ($darknet, $cdl)"
    echo "# darknet $darknet, cdl $cdl / 2" >&3
}

@test "yolov2-tiny.cfg ([region]): cdl detect gives darknet detector valid's boxes and scores" {
    cp /usr/share/darknet/cfg/yolov2-tiny.cfg .
    for seed in 1 2; do
        # softmax classes: only the objectness bias moves the count; -2 leaves about a thousand
        random_weights yolov2-tiny.cfg v$seed.weights --seed $seed --variances 0.5,2 \
            --score-bias -2
        run compare_detections yolov2-tiny.cfg v$seed.weights "$PHOTO" 80
        echo "$output"
        [ "$status" -eq 0 ]
        echo "# seed $seed: $output" >&3
    done
}

@test "yolov2-tiny.cfg without batch norm: one training step's loss is darknet's to 1e-5" {
    # The first step's images are fewer than 12800: the anchor prior is in the loss.
    symmetric_set
    one_step_cfg /usr/share/darknet/cfg/yolov2-tiny.cfg |
        sed 's/^batch_normalize=1/batch_normalize=0/' > v.cfg
    random_weights v.cfg v.weights --seed 1
    read -r darknet cdl < <(one_step_losses v.cfg v.weights)
    echo "darknet $darknet cdl $cdl"
    /usr/bin/python3 -c "assert abs($cdl - $darknet) <= 1e-5 * $darknet, ($darknet, $cdl)"
    echo "# darknet $darknet, cdl $cdl" >&3
}

@test "yolov2-tiny.cfg with batch norm: one training step's loss is darknet's to 1e-5" {
    symmetric_set
    one_step_cfg /usr/share/darknet/cfg/yolov2-tiny.cfg > v.cfg
    random_weights v.cfg v.weights --seed 1 --variances 0.5,2
    read -r darknet cdl < <(one_step_losses v.cfg v.weights)
    echo "darknet $darknet cdl $cdl"
    /usr/bin/python3 -c "assert abs($cdl - $darknet) <= 1e-5 * $darknet, ($darknet, $cdl)"
    echo "# darknet $darknet, cdl $cdl" >&3
}

@test "yolov3-tiny.cfg trained a step by cdl: its exported .weights detect in darknet as in cdl" {
    symmetric_set
    # the step on the image itself, not on darknet's random placement of it (jitter)
    sed 's/^jitter=.*/jitter=0/' /usr/share/darknet/cfg/yolov3-tiny.cfg > yolov3-tiny.cfg
    grep -q '^jitter=0$' yolov3-tiny.cfg
    detector_weights yolov3-tiny.cfg y.weights 1
    "$CDL" train yolov3-tiny.cfg --data t.data --weights y.weights --epochs 1 --threads 1 \
        --set net.batch=1 --set net.subdivisions=1 --set net.burn_in=0 --out y.cdl >/dev/null 2>&1
    "$CDL" export darknet y.cdl -o trained.weights 2>/dev/null
    ! cmp -s y.weights trained.weights
    run compare_detections yolov3-tiny.cfg trained.weights "$PHOTO" 80
    echo "$output"
    [ "$status" -eq 0 ]
}

# region_keys_step EDIT KEYS SEED EFFECT: yolov2-tiny without batch norm, one training step
# (one_step_cfg, then the sed script EDIT), with random .weights of SEED; the first step's loss
# with KEYS (lines, \n apart) added to its [region] is darknet's to 1e-5, and differs by more
# than EFFECT (relative) from cdl's without them. shift.map: class k learned as k + 1, 79 as 0.
region_keys_step() {
    symmetric_set
    seq 1 79 > shift.map
    echo 0 >> shift.map
    one_step_cfg /usr/share/darknet/cfg/yolov2-tiny.cfg |
        sed "s/^batch_normalize=1/batch_normalize=0/${1:+; $1}" > plain.cfg
    sed "s/^\[region\]/[region]\n$2/" plain.cfg > v.cfg
    ! cmp -s plain.cfg v.cfg
    random_weights v.cfg v.weights --seed "$3"
    read -r darknet cdl < <(one_step_losses v.cfg v.weights)
    rm run.jsonl
    read -r _ plain < <(one_step_losses plain.cfg v.weights)
    echo "darknet $darknet cdl $cdl, cdl without the keys $plain"
    /usr/bin/python3 -c "assert abs($cdl - $darknet) <= 1e-5 * $darknet, ($darknet, $cdl)"
    /usr/bin/python3 -c "assert abs($plain - $cdl) > $4 * $cdl, ($plain, $cdl)"
    echo "# darknet $darknet, cdl $cdl (cdl without the keys: $plain)" >&3
}

# [region] background=1 (entry 4 a background score in the softmax with the classes, its targets
# swapped) and map=, which darknet's region loss reads.
@test "yolov2-tiny.cfg with background=1 and map=: one training step's loss is darknet's to 1e-5" {
    region_keys_step "" 'background=1\nmap=shift.map' 1 1e-2
}

# map= alone, with logistic classes (where the class a truth is learned as moves the loss more than
# among 80 near-uniform softmax scores).
@test "yolov2-tiny.cfg with softmax=0 and map=: one training step's loss is darknet's to 1e-5" {
    region_keys_step 's/^softmax=1/softmax=0/' 'map=shift.map' 2 1e-4
}

# background=1's detections: objectness 1 and the classes' own softmax scores, which sit among
# the background score in the softmax (random weights: most scores pass valid's 0.005).
@test "yolov2-tiny.cfg with background=1: cdl detect gives darknet detector valid's boxes and scores" {
    sed 's/^\[region\]/[region]\nbackground=1/' /usr/share/darknet/cfg/yolov2-tiny.cfg > b.cfg
    grep -q '^background=1' b.cfg
    random_weights b.cfg b.weights --seed 1 --variances 0.5,2 --score-bias -2
    run compare_detections b.cfg b.weights "$PHOTO" 80
    echo "$output"
    [ "$status" -eq 0 ]
    echo "# $output" >&3
}
