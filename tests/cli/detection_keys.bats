#!/usr/bin/env bats
# darknet's per-class detection keys: map= (the class a truth box is learned as) and
# counters_per_class= (the classes' weights in [yolo]'s loss), end to end and their refusals, and
# the checkpoints of a net with them, which keep map='s table.
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

# A checkpoint of map= and counters_per_class=: two.cdl, 2 epochs on two.data (absolute paths, so
# that it runs from another directory) with map=swap.map (1, 0) and counters_per_class=10,40.
train_map_checkpoint() {
    sed "s|^|$WORK/|" train.txt > abs.txt
    printf 'square\nmapped square\n' > two.names
    printf 'classes=2\ntrain=%s/abs.txt\nvalid=%s/abs.txt\nnames=%s/two.names\n' \
        "$WORK" "$WORK" "$WORK" > two.data
    printf '1\n0\n' > swap.map
    two_class_cfg counters_per_class=10,40 map=swap.map
    "$CDL" train two.cfg --data two.data --epochs 2 --out two.cdl --threads 1 \
        --log-every 100000 >/dev/null 2>&1
}

# The step losses of `train --resume CKPT` to epoch 4 (saved to resumed.cdl), one a line.
resumed_losses() {
    "$CDL" train --resume "$1" --out resumed.cdl --epochs 4 --threads 1 --log-every 1 2>&1 |
        sed -n 's/^epoch .* step .* loss \([^ ]*\) avg.*/\1/p'
}

# What each command makes of CKPT in the working directory, into files under DIR:
# info, detect --json, eval, export onnx and the resumed run's losses.
outputs_of() {
    local ckpt=$1 dir=$2
    mkdir -p "$dir"
    "$CDL" info "$ckpt" > "$dir/info" 2>&1
    "$CDL" detect "$ckpt" "$WORK"/set/images/*.png --json --threads 1 > "$dir/detect" 2>&1
    "$CDL" eval "$ckpt" --data "$WORK/two.data" --threads 1 > "$dir/eval" 2>&1
    "$CDL" export onnx "$ckpt" -o "$dir/model.onnx" > /dev/null 2>&1
    resumed_losses "$ckpt" > "$dir/losses"
    [ "$(wc -l < "$dir/losses")" -eq 4 ]
}

# Writes OUT: CKPT with its header's cfg edited by the sed script SED (the checksum made again).
edit_checkpoint_cfg() {
    /usr/bin/python3 - "$@" <<'PY'
import json, struct, subprocess, sys, zlib
path, script, out = sys.argv[1:4]
b = open(path, "rb").read()
n = struct.unpack_from("<Q", b, 16)[0]
h = json.loads(b[24:24 + n])
h["cfg"] = subprocess.run(["sed", script], input=h["cfg"], capture_output=True, text=True,
                          check=True).stdout
head = json.dumps(h, separators=(",", ":")).encode()
body = b[:16] + struct.pack("<Q", len(head)) + head + b[24 + n:-12]
open(out, "wb").write(body + struct.pack("<I", zlib.crc32(body)) + b[-8:])
PY
}

# The cfg text a checkpoint keeps.
checkpoint_cfg() {
    /usr/bin/python3 -c '
import json, struct, sys
b = open(sys.argv[1], "rb").read()
n = struct.unpack_from("<Q", b, 16)[0]
print(json.loads(b[24:24 + n])["cfg"])' "$1"
}

# A checkpoint keeps map='s table as class_map=: loading it reads no side file, wherever it is run
# and whatever the file now holds; one written before (map=FILE in its cfg) loads as it did.
@test "map=: the checkpoint keeps the table; info, detect, eval, export and resume elsewhere match" {
    train_map_checkpoint
    checkpoint_cfg two.cdl | grep -qx 'class_map=1,0'
    ! checkpoint_cfg two.cdl | grep -q '^map='
    checkpoint_cfg two.cdl | grep -qx 'counters_per_class=10,40'
    outputs_of two.cdl here
    mkdir other
    cp two.cdl other/
    rm swap.map
    cd other
    outputs_of two.cdl there
    cd ..
    for f in info detect eval losses; do
        diff here/$f other/there/$f
    done
    cmp here/model.onnx other/there/model.onnx
    # the outputs compared are the commands' results, not their refusals
    grep -q '"detections"' here/detect
    grep -q '^mAP@0.5' here/eval
    grep -q '^total: 1511 parameters' here/info
    [ -s here/model.onnx ]
}

@test "map=: a changed map file does not change a loaded model's losses" {
    train_map_checkpoint
    resumed_losses two.cdl > before
    printf '0\n1\n' > swap.map
    resumed_losses two.cdl > after
    [ "$(wc -l < before)" -eq 4 ]
    diff before after
    # the cfg itself reads the file anew: a new run from it learns another table
    "$CDL" train two.cfg --data two.data --epochs 1 --out identity.cdl --threads 1 \
        --log-every 100000 >/dev/null 2>&1
    checkpoint_cfg identity.cdl | grep -qx 'class_map=0,1'
}

@test "a checkpoint written before (map=FILE in its cfg) loads as before, says so, and its resumed run keeps the table" {
    train_map_checkpoint
    edit_checkpoint_cfg two.cdl 's/^class_map=1,0$/map=swap.map/' old.cdl
    checkpoint_cfg old.cdl | grep -qx 'map=swap.map'
    resumed_losses two.cdl > new_losses
    run "$CDL" train --resume old.cdl --out old_resumed.cdl --epochs 4 --threads 1 --log-every 1
    [ "$status" -eq 0 ]
    [[ "$output" == *"cdl: old.cdl(cfg):37: warning: map=swap.map is read from the working directory: old.cdl was written before checkpoints kept class maps (one saved from it keeps the table)"* ]]
    diff new_losses <(sed -n 's/^epoch .* step .* loss \([^ ]*\) avg.*/\1/p' <<< "$output")
    checkpoint_cfg old_resumed.cdl | grep -qx 'class_map=1,0'
    "$CDL" info old.cdl > /dev/null
    "$CDL" detect old.cdl set/images/0.png --json --threads 1 > /dev/null
    # without the file, as before this change: one line naming it, exit 2
    mkdir other
    cp old.cdl other/
    cd other
    run "$CDL" info old.cdl
    [ "$status" -eq 2 ]
    [ "$output" = "cdl: old.cdl(cfg):37: key 'map' in [yolo]: swap.map: cannot open class map: No such file or directory" ]
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
