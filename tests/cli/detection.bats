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
