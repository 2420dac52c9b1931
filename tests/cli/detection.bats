#!/usr/bin/env bats
# Training a detector on darknet's detection data: a list of images whose boxes are in label
# files found by darknet's /images/ -> /labels/ rule; bad label lines stop training naming
# FILE:LINE.
load helpers

load detection_helpers

@test "train reads the boxes of a darknet detection list and its loss decreases" {
    detection_set
    run "$CDL" train tiny.cfg --data det.data --epochs 20 --out det.cdl --threads 1 \
        --log run.jsonl --log-every 1
    [ "$status" -eq 0 ]
    /usr/bin/python3 - <<'PY'
import json
losses = [r["loss"] for r in map(json.loads, open("run.jsonl")) if r["type"] == "epoch"]
assert len(losses) == 20 and losses[0] > 0, losses
# Adam at 0.001 on 16 images: the epoch loss falls by more than a quarter over 20 epochs (22.0 to
# 12.0 when written).
assert losses[-1] < 0.75 * losses[0], losses
PY
}

@test "a bad label line stops training naming FILE:LINE" {
    detection_set
    printf '0 0.5 0.5 0.2 0.2\n\n0 1.5 0.5 0.2 0.2\n' > set/labels/5.txt
    run "$CDL" train tiny.cfg --data det.data --epochs 1 --out det.cdl --threads 1
    [ "$status" -eq 2 ]
    [[ "$output" == *"set/labels/5.txt:3: x = 1.5 is outside (0, 1): a box's centre must lie inside the image"* ]]
}

@test "an image without a label file is refused naming both" {
    detection_set
    rm set/labels/7.txt
    run "$CDL" train tiny.cfg --data det.data --epochs 1 --out det.cdl --threads 1
    [ "$status" -eq 1 ]
    [[ "$output" == *"set/images/7.png: its label file set/labels/7.txt does not exist"* ]]
}

@test "an augmentation that does not move boxes is refused for a detector" {
    detection_set
    run "$CDL" train tiny.cfg --data det.data --epochs 1 --out det.cdl --set net.pad=2
    [ "$status" -eq 2 ]
    [[ "$output" == *"[net] pad: this augmentation does not move truth boxes yet"* ]]
}

# Trains $2.cfg (on det.data) 3 epochs, 6 steps, on the CPU and on the GPU build $1 and checks
# their step losses agree to 1e-4 relative: the device computes the outputs and the loss.
same_losses_on_gpu() {
    local gpu_cdl=$1 cfg=$2
    "$CDL" train $cfg.cfg --data det.data --epochs 3 --out cpu.cdl --threads 1 --workers 0 \
        --log cpu_$cfg.jsonl --log-every 1
    "$gpu_cdl" train $cfg.cfg --data det.data --epochs 3 --out gpu.cdl --threads 1 \
        --workers 0 --gpu 0 --log gpu_$cfg.jsonl --log-every 1
    paste <(jq -r 'select(.type == "step").loss' cpu_$cfg.jsonl) \
        <(jq -r 'select(.type == "step").loss' gpu_$cfg.jsonl) > both
    [ "$(wc -l < both)" -eq 6 ]
    python3 -c 'import sys
for l in open("both"):
    c, g = map(float, l.split())
    assert abs(c - g) <= 1e-4 * abs(c), (c, g)'
}

# On the GPU (the simulator's build) the outputs, the loss and its delta come from the device
# (cuda/yolo.c, the CPU's rules as kernels): the step losses are the CPU's within float32
# round-off, with darknet's defaults and with scale_x_y and the CIoU loss, and with AlexeyAB's
# focal loss, label smoothing and objectness smoothing.
@test "a detector trains on the GPU with the CPU's losses" {
    local gpu_cdl="${CDL_GPUSIM_BIN:-$REPO/cdl-gpusim}"
    [ -x "$gpu_cdl" ] || skip "no GPU=sim build (needs the CUDA toolkit's headers)"
    detection_set
    sed 's/^max=4$/max=4\nscale_x_y=1.1\niou_loss=ciou\niou_normalizer=0.07/' tiny.cfg > ciou.cfg
    grep -q "iou_loss=ciou" ciou.cfg
    sed 's/^max=4$/max=4\nfocal_loss=1\nlabel_smooth_eps=0.1\nobjectness_smooth=1\nignore_thresh=0.2\ntruth_thresh=0.5/' \
        tiny.cfg > smooth.cfg
    grep -q "objectness_smooth=1" smooth.cfg
    for cfg in tiny ciou smooth; do
        same_losses_on_gpu "$gpu_cdl" $cfg
    done
}

# Trains $2.cfg (on det.data) 3 epochs on the GPU build $1 eagerly and with --cuda-graph and
# checks that the step losses and the checkpoints are equal: the simulator runs the same kernels
# in the same order either way, the truth boxes uploaded with each batch and the loss summed on
# the device. $3: the largest relative difference of a step's loss (0: equal, and the checkpoints
# byte for byte).
same_graph_and_eager() {
    local gpu_cdl=$1 cfg=$2 rel=$3
    for run in eager graph; do
        local graph=()
        [ "$run" = graph ] && graph=(--cuda-graph)
        "$gpu_cdl" train $cfg.cfg --data det.data --epochs 3 --out ${cfg}_$run.cdl --threads 1 \
            --workers 0 --gpu 0 --log ${cfg}_$run.jsonl --log-every 1 "${graph[@]}"
    done
    paste <(jq -r 'select(.type == "step").loss' ${cfg}_eager.jsonl) \
        <(jq -r 'select(.type == "step").loss' ${cfg}_graph.jsonl) > both
    [ "$(wc -l < both)" -eq 6 ]
    REL=$rel python3 -c 'import os
rel = float(os.environ["REL"])
for l in open("both"):
    e, g = map(float, l.split())
    assert abs(e - g) <= rel * abs(e), (e, g)'
    [ "$rel" != 0 ] || cmp ${cfg}_eager.cdl ${cfg}_graph.cdl
}

# A yolov3-tiny-style net (two [yolo] heads, the second after a [route], an [upsample] and a
# [route] of two layers): the CPU's step losses on the GPU; and --cuda-graph, which captures the
# detection losses, gives the eager run's for it, for tiny.cfg and for a [region] net (its anchor
# prior on: the images seen come from the device's step values).
@test "a yolov3-tiny-style net trains on the GPU with the CPU's losses; --cuda-graph as eager" {
    local gpu_cdl="${CDL_GPUSIM_BIN:-$REPO/cdl-gpusim}"
    [ -x "$gpu_cdl" ] || skip "no GPU=sim build (needs the CUDA toolkit's headers)"
    detection_set
    write_detector_cfg two_heads.cfg "$TINY_NET" 0 "8 16" <<'CFG'
[convolutional]
filters=12
size=1
activation=linear

[yolo]
mask=2,3
anchors=6,6, 10,10, 14,14, 20,20
classes=1
num=4
max=4
ignore_thresh=0.3

[route]
layers=-3

[convolutional]
filters=8
size=1
activation=leaky

[upsample]
stride=2

[route]
layers=-1,2

[convolutional]
filters=12
size=1
activation=linear

[yolo]
mask=0,1
anchors=6,6, 10,10, 14,14, 20,20
classes=1
num=4
max=4
ignore_thresh=0.3
CFG
    sed '/^\[yolo\]$/,$d; s/^filters=6$/filters=12/' tiny.cfg > region.cfg
    printf '[region]\nanchors=1,1, 2,2\nnum=2\nclasses=1\nmax=4\nbias_match=1\nrescore=1\n' >> region.cfg
    same_losses_on_gpu "$gpu_cdl" two_heads
    same_graph_and_eager "$gpu_cdl" tiny 0
    same_graph_and_eager "$gpu_cdl" region 0
    same_graph_and_eager "$gpu_cdl" two_heads 0
    # a [softmax] beside detection layers adds its loss to theirs in the pass's slot, as eagerly
    cp tiny.cfg mixed.cfg
    printf '\n[softmax]\n' >> mixed.cfg
    same_graph_and_eager "$gpu_cdl" mixed 0
}

# scripts/detection_data.py (what scripts/detection-data.sh runs) on a few images: darknet's
# layout, every label a valid box of a Fashion-MNIST class, and cfg/yolo_fashion.cfg trains on it.
@test "the fashion-det generator writes a detection set yolo_fashion.cfg trains on" {
    /usr/bin/python3 "$REPO/scripts/detection_data.py" fdet --train 8 --valid 4 --seed 3
    [ "$(wc -l < fdet/train.txt)" -eq 8 ] && [ "$(wc -l < fdet/valid.txt)" -eq 4 ]
    /usr/bin/python3 - <<'PY'
from PIL import Image
for split, n in (("train", 8), ("valid", 4)):
    for i in range(n):
        assert Image.open(f"fdet/images/{split}/{i}.png").size == (96, 96)
        lines = open(f"fdet/labels/{split}/{i}.txt").read().splitlines()
        assert 1 <= len(lines) <= 3, lines
        for l in lines:
            c, x, y, w, h = l.split()
            assert 0 <= int(c) < 10 and all(0 < float(v) < 1 for v in (x, y)), l
            assert all(0 < float(v) <= 56 / 96 + 1e-6 for v in (w, h)), l
PY
    printf 'classes=10\ntrain=fdet/train.txt\nvalid=fdet/valid.txt\nnames=%s\n' \
        "$REPO/cfg/fashion.names" > fdet.data
    "$CDL" train "$REPO/cfg/yolo_fashion.cfg" --data fdet.data --set net.batch=4 --epochs 1 \
        --out f.cdl --threads 1
    "$CDL" eval f.cdl --data fdet.data --json | jq -e '.images == 4 and .truths >= 4 and .map50 >= 0'
}

# The same for [region] (cuda/region.c): logistic and softmax classes, the anchor prior on (the
# first 12800 images), rescore and bias_match.
@test "a [region] detector trains on the GPU with the CPU's losses" {
    local gpu_cdl="${CDL_GPUSIM_BIN:-$REPO/cdl-gpusim}"
    [ -x "$gpu_cdl" ] || skip "no GPU=sim build (needs the CUDA toolkit's headers)"
    detection_set
    sed -n '/^\[yolo\]$/q;p' tiny.cfg > logistic.cfg
    printf '[region]\nanchors=1.2,1.2\nclasses=1\nnum=1\nmax=4\nrescore=1\n' >> logistic.cfg
    sed 's/^rescore=1$/softmax=1\nbias_match=1\nobject_scale=5/' logistic.cfg > softmax.cfg
    for cfg in logistic softmax; do
        same_losses_on_gpu "$gpu_cdl" $cfg
    done
}

# cdl augment outlines a detector's boxes where augment_train placed them: with darknet's random
# placement (jitter) the red outline of each tile's box holds the tile's bright square.
@test "augment draws a detector's boxes around its objects, placed as training places them" {
    detection_set
    sed -i 's/^max=4$/max=4\njitter=0.3/' tiny.cfg
    "$CDL" augment tiny.cfg --data det.data -o grid.png --n 8 --cols 8 --zoom 2
    /usr/bin/python3 - <<'PY'
import numpy as np
from PIL import Image
g = np.asarray(Image.open("grid.png").convert("RGB")).astype(int)
tile, gap = 64, 2
checked = 0
for i in range(8):
    t = g[gap:gap + tile, gap + i * (tile + gap):gap + i * (tile + gap) + tile]
    red = (t[..., 0] == 255) & (t[..., 1] == 0) & (t[..., 2] == 0)
    bright = (t.min(axis=2) > 150) & ~red
    if not red.any() or bright.sum() < 16:
        continue  # the square left the frame, or shrank to a few pixels
    ys, xs = np.nonzero(red)
    by, bx = np.nonzero(bright)
    assert ys.min() - 2 <= by.min() and by.max() <= ys.max() + 2, (i, ys.min(), ys.max(), by.min(), by.max())
    assert xs.min() - 2 <= bx.min() and bx.max() <= xs.max() + 2, (i, xs.min(), xs.max(), bx.min(), bx.max())
    checked += 1
assert checked >= 4, checked
PY
}

# mosaic=1 (AlexeyAB's): half the tiles are four images cut to the quadrants around a random
# centre; every bright square pixel the net sees lies inside a red outline (or on its edge), some
# tiles hold several boxes, and the same seed draws the same grid.
@test "augment draws mosaics with each piece's boxes around its squares" {
    detection_set
    sed -i 's/^max=4$/max=4\njitter=0.3/; s/^flip=1$/flip=1\nmosaic=1/' tiny.cfg
    "$CDL" augment tiny.cfg --data det.data -o grid.png --n 16 --cols 8 --zoom 2
    "$CDL" augment tiny.cfg --data det.data -o again.png --n 16 --cols 8 --zoom 2
    cmp grid.png again.png
    /usr/bin/python3 - <<'PY'
import numpy as np
from PIL import Image
g = np.asarray(Image.open("grid.png").convert("RGB")).astype(int)
tile, gap = 64, 2
several = 0
for i in range(16):
    top, left = gap + (i // 8) * (tile + gap), gap + (i % 8) * (tile + gap)
    t = g[top:top + tile, left:left + tile]
    red = (t[..., 0] == 255) & (t[..., 1] == 0) & (t[..., 2] == 0)
    bright = (t.min(axis=2) > 150) & ~red
    near_red = np.zeros_like(red)
    for dy in range(-2, 3):
        for dx in range(-2, 3):
            near_red |= np.roll(np.roll(red, dy, 0), dx, 1)
    for y, x in zip(*np.nonzero(bright & ~near_red)):
        enclosed = red[y, :x].any() and red[y, x:].any() and red[:y, x].any() and red[y:, x].any()
        assert enclosed, (i, y, x)
    right = np.roll(red, -1, 1); below = np.roll(red, -1, 0)
    corners = red & right & below & ~np.roll(red, 1, 1) & ~np.roll(red, 1, 0)
    several += corners.sum() >= 2
assert several >= 2, several
PY
}

@test "a detector trains with mosaic=1; a classifier is refused it" {
    detection_set
    sed -i 's/^flip=1$/flip=1\nmosaic=1/' tiny.cfg
    run "$CDL" train tiny.cfg --data det.data --epochs 2 --out det.cdl --threads 1
    [ "$status" -eq 0 ]
    mkdir -p cls/a cls/b
    cp set/images/[0-7].png cls/a/; cp set/images/1[0-5].png cls/b/
    write_cfg cls.cfg <<'CFG'
[net]
batch=2
width=8
height=8
channels=3
mosaic=1

[connected]
output=2
activation=linear

[softmax]
CFG
    run "$CDL" train cls.cfg --data cls --epochs 1 --out cls.cdl --threads 1
    [ "$status" -eq 2 ]
    [[ "$output" == *"[net] mosaic=1 needs a detection net"* ]]
}

# The same labels as a COCO-style JSON (train=*.json) and as darknet label files give the same
# batches, so the same losses, step by step; names come from the JSON's categories.
@test "a COCO JSON train= trains as the same labels in darknet label files do" {
    detection_set
    /usr/bin/python3 - <<'PY'
import json
from PIL import Image
images, annotations = [], []
for i in range(16):
    w, h = Image.open(f"set/images/{i}.png").size
    cls, cx, cy, bw, bh = open(f"set/labels/{i}.txt").read().split()
    x, y, bw, bh = (float(cx) - float(bw) / 2) * w, (float(cy) - float(bh) / 2) * h, float(bw) * w, float(bh) * h
    images.append({"id": 100 + i, "file_name": f"set/images/{i}.png", "width": w, "height": h})
    annotations.append({"id": i, "image_id": 100 + i, "category_id": 7, "bbox": [x, y, bw, bh], "iscrowd": 0})
    # the label file holds the values the JSON's conversion computes, to the last bit
    open(f"set/labels/{i}.txt", "w").write(
        f"0 {(x + bw / 2) / w!r} {(y + bh / 2) / h!r} {bw / w!r} {bh / h!r}\n")
json.dump({"images": images, "annotations": annotations,
           "categories": [{"id": 7, "name": "square"}]}, open("det.json", "w"))
open("coco.data", "w").write("train=det.json\nbackup=backup/\n")
PY
    "$CDL" train tiny.cfg --data det.data --epochs 2 --out list.cdl --threads 1 --log list.jsonl --log-every 1
    "$CDL" train tiny.cfg --data coco.data --epochs 2 --out coco.cdl --threads 1 --log coco.jsonl --log-every 1
    /usr/bin/python3 - <<'PY'
import json
def losses(path):
    return [r["loss"] for r in map(json.loads, open(path)) if r["type"] == "step"]
a, b = losses("list.jsonl"), losses("coco.jsonl")
assert len(a) == 4 and a == b, (a, b)
PY
}

@test "a bad COCO annotation stops training naming the file and the annotation" {
    detection_set
    cat > bad.json <<'JSON'
{"images": [{"id": 1, "file_name": "set/images/0.png", "width": 36, "height": 48}],
 "annotations": [{"id": 41, "image_id": 1, "category_id": 3, "bbox": [1, 2, 3, 4]}],
 "categories": [{"id": 1, "name": "square"}]}
JSON
    printf 'train=bad.json\n' > bad.data
    run "$CDL" train tiny.cfg --data bad.data --epochs 1 --out bad.cdl --threads 1
    [ "$status" -eq 2 ]
    [[ "$output" == *"bad.json: annotations[0] (id 41): category_id is no category's id"* ]]
}

# AlexeyAB's yolov4-tiny (cfg/yolov4_tiny.cfg): darknet prints 6.910 BFLOPs for it, and its
# 6,056,606 weights are AlexeyAB's count for 80 classes; its [yolo] keys are read (ciou,
# scale_x_y, nms_kind, beta_nms, resize, and YOLOv4-csp's new_coords) without a warning; a
# forward pass finds boxes.
@test "yolov4_tiny.cfg loads with AlexeyAB's parameters and FLOPs and runs forward" {
    "$CDL" info "$REPO/cfg/yolov4_tiny.cfg" --json 2> warnings.txt > info.json
    jq -e '.params == 6056606 and .flops == 6910385664' info.json
    [ ! -s warnings.txt ]
    /usr/bin/python3 -c 'from PIL import Image; Image.effect_noise((64, 48), 40).convert("RGB").save("n.png")'
    run "$CDL" detect "$REPO/cfg/yolov4_tiny.cfg" n.png --thresh 0.2 --threads 2
    [ "$status" -eq 0 ]
    [[ "${lines[-1]}" == *"%  x="*" y="*" w="*" h="* ]]
    sed 's/^beta_nms=0.6$/beta_nms=0.6\nnew_coords=1/' "$REPO/cfg/yolov4_tiny.cfg" > v.cfg
    grep -q '^new_coords=1$' v.cfg
    "$CDL" info v.cfg 2> warnings.txt > /dev/null
    [ ! -s warnings.txt ]
}

@test "yolov4_tiny_fashion.cfg trains on fashion-det and evaluates" {
    /usr/bin/python3 "$REPO/scripts/detection_data.py" fdet --train 8 --valid 4 --seed 3
    printf 'classes=10\ntrain=fdet/train.txt\nvalid=fdet/valid.txt\nnames=%s\n' \
        "$REPO/cfg/fashion.names" > fdet.data
    "$CDL" train "$REPO/cfg/yolov4_tiny_fashion.cfg" --data fdet.data --set net.batch=4 \
        --epochs 2 --out f.cdl --threads 2 --log run.jsonl --log-every 1
    /usr/bin/python3 - <<'PY'
import json, math
losses = [r["loss"] for r in map(json.loads, open("run.jsonl")) if r["type"] == "step"]
assert len(losses) == 4 and all(math.isfinite(l) and l > 0 for l in losses), losses
PY
    "$CDL" eval f.cdl --data fdet.data --json | jq -e '.images == 4 and .truths >= 4'
}

# [yolo] resize=1.5 with random=0 (yolov4-tiny's) trains on AlexeyAB's rescaled crops: no warning,
# finite losses, the same seed gives the same weights, and other first batches than resize=1.
@test "yolov4_tiny_fashion.cfg with resize=1.5 and jitter=.3 trains without a warning, repeatably" {
    /usr/bin/python3 "$REPO/scripts/detection_data.py" fdet --train 8 --valid 4 --seed 3
    printf 'classes=10\ntrain=fdet/train.txt\nvalid=fdet/valid.txt\nnames=%s\n' \
        "$REPO/cfg/fashion.names" > fdet.data
    sed 's/^jitter=0$/jitter=.3\nrandom=0\nresize=1.5/' "$REPO/cfg/yolov4_tiny_fashion.cfg" > r.cfg
    [ "$(grep -c '^resize=1.5$' r.cfg)" -eq 2 ]
    for run in 1 2; do
        "$CDL" train r.cfg --data fdet.data --set net.batch=4 --set net.mosaic=1 --epochs 1 \
            --out r$run.cdl --threads 2 --log r$run.jsonl --log-every 1 2> err$run.txt
    done
    [ -z "$(grep -Ei 'warning|ignored|resize' err1.txt)" ]
    cmp r1.cdl r2.cdl
    sed -i 's/^resize=1.5$/resize=1/' r.cfg # darknet's jitter placement: other samples
    "$CDL" train r.cfg --data fdet.data --set net.batch=4 --set net.mosaic=1 --epochs 1 \
        --out r3.cdl --threads 2 --log r3.jsonl --log-every 1 2> /dev/null
    /usr/bin/python3 - <<'PY'
import json, math
losses = {k: [r["loss"] for r in map(json.loads, open(f"r{k}.jsonl")) if r["type"] == "step"]
          for k in (1, 2, 3)}
assert len(losses[1]) == 2 and all(math.isfinite(l) and l > 0 for l in losses[1]), losses
assert losses[1] == losses[2] and losses[1][0] != losses[3][0], losses
PY
}

@test "check compares the data's classes with the detector's [yolo] classes, not its output width" {
    detection_set
    run "$CDL" check tiny.cfg --data det.data
    [ "$status" -eq 0 ]
    [[ "$output" != *"warning: the data has"* ]]
    [ "${lines[-1]}" = "ok: train would start" ]
    sed -i 's/^classes=1$/classes=3/' det.data
    printf 'square\ncircle\nstar\n' > det.names
    run "$CDL" check tiny.cfg --data det.data
    [ "$status" -eq 2 ]
    [[ "$output" == *"det.data: the data has 3 classes but the net detects 1"* ]]
}
