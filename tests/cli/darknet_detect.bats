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
