#!/usr/bin/env bats
# darknet's per-class detection keys: map= (the class a truth box is learned as) and
# counters_per_class= (the classes' weights in [yolo]'s loss), end to end and their refusals.
load helpers
load detection_helpers

setup() {
    WORK="$(mktemp -d)"
    cd "$WORK"
    detection_set
}

# tiny.cfg with two classes and KEY=VALUE lines added to its [yolo].
two_class_cfg() {
    sed 's/^filters=6$/filters=7/; s/^classes=1$/classes=2/' tiny.cfg > two.cfg
    for kv in "$@"; do
        sed -i "s|^\[yolo\]$|[yolo]\n$kv|" two.cfg
    done
}

# two_class_cfg KEY=VALUE, then `cdl info` refuses it in one line, "cdl: two.cfg:37: " WHY (exit 2).
expect_refused() {
    two_class_cfg "$1"
    run "$CDL" info two.cfg
    [ "$status" -eq 2 ]
    [ "$output" = "cdl: two.cfg:37: $2" ]
}

@test "map=: a detector trained on class 0 learned as class 1 detects class 1 (detect --json)" {
    printf '1\n0\n' > swap.map
    printf 'square\nmapped square\n' > two.names
    printf 'classes=2\ntrain=train.txt\nnames=two.names\n' > two.data
    two_class_cfg jitter=0 map=swap.map
    "$CDL" train two.cfg --data two.data --epochs 400 --out two.cdl --threads 1 \
        --log-every 100000 >/dev/null 2>&1
    run "$CDL" detect two.cdl set/images/*.png --json --threads 1
    [ "$status" -eq 0 ]
    printf '%s\n' "$output" > all.json
    /usr/bin/python3 - <<'PY'
import json
dets = [d for r in json.load(open("all.json")) for d in r["detections"]]
# the labels say class 0; the map makes the loss teach class 1 (and class 0 down to 0)
assert len(dets) >= 12, len(dets)
assert all(d["index"] == 1 and d["class"] == "mapped square" for d in dets), dets[:3]
PY
}

@test "map=: a missing file, too few lines and a bad class are one line naming the files (exit 2)" {
    expect_refused map=nothing.map "key 'map' in [yolo]: nothing.map: cannot open class map: No such file or directory"
    echo 1 > short.map
    expect_refused map=short.map "map file short.map has 1 line; classes=2 needs 2 (line k + 1: the class that truth class k is learned as)"
    printf '1\nzero\n' > word.map
    expect_refused map=word.map "map file word.map:2: 'zero' is not a class in 0..1 (classes=2)"
    printf '1\n2\n' > range.map
    expect_refused map=range.map "map file range.map:2: '2' is not a class in 0..1 (classes=2)"
}

@test "class_map=: the table map= reads, as a checkpoint keeps it; refusals in one line (exit 2)" {
    expect_refused class_map=1,0,1 "bad value '1,0,1' for key 'class_map' in [yolo]: expected 2 classes (one for each of classes=2), got 3"
    expect_refused class_map=1,2 "bad value '1,2' for key 'class_map' in [yolo]: class 2 (truth class 1's) is not in 0..1"
    expect_refused class_map=1,x "bad value '1,x' for key 'class_map' in [yolo]: expected a comma-separated list of integers in -16777216..16777216"
    printf '1\n0\n' > swap.map
    two_class_cfg map=swap.map class_map=1,0
    run "$CDL" info two.cfg
    [ "$status" -eq 2 ]
    [ "$output" = "cdl: two.cfg:37: bad value '1,0' for key 'class_map' in [yolo]: give map=FILE or class_map=, not both" ]
    two_class_cfg class_map=1,0
    run "$CDL" info two.cfg
    [ "$status" -eq 0 ]
}

@test "counters_per_class=: a count per class, each >= 1, else one line (exit 2)" {
    expect_refused counters_per_class=10,20,30 "bad value '10,20,30' for key 'counters_per_class' in [yolo]: expected 2 counts (one for each of classes=2), got 3"
    expect_refused counters_per_class=10,0 "bad value '10,0' for key 'counters_per_class' in [yolo]: count 0 (class 1) must be >= 1"
    expect_refused counters_per_class=10,-3 "bad value '10,-3' for key 'counters_per_class' in [yolo]: count -3 (class 1) must be >= 1"
    two_class_cfg counters_per_class=10,40
    run "$CDL" info two.cfg
    [ "$status" -eq 0 ]
}

@test "export onnx refuses [yolo] new_coords=1 and [region] background=1 in one line (exit 2)" {
    two_class_cfg new_coords=1
    run "$CDL" export onnx two.cfg -o two.onnx
    [ "$status" -eq 2 ]
    [ "$output" = "cdl: layer 5 [yolo]: new_coords=1 is not exported (the ONNX decode is darknet's exp box of the logistic outputs)" ]
    [ ! -e two.onnx ]
    sed 's/^\[yolo\]$/[region]\nbackground=1/; /^mask=/d; s/^anchors=10,10$/anchors=1,1/' \
        tiny.cfg > region.cfg
    run "$CDL" export onnx region.cfg -o region.onnx
    [ "$status" -eq 2 ]
    [ "$output" = "cdl: layer 5 [region]: background=1 is not exported (the ONNX decode reads entry 4 as a logistic objectness)" ]
}
