#!/usr/bin/env bats
# A checkpoint of a detector trained with map=FILE keeps the file's table (class_map=) in its cfg:
# loading it reads no side file, wherever it is run and whatever the file now holds; a checkpoint
# written before (map=FILE in its cfg) still loads as it did, reading the file.
load helpers
load detection_helpers

setup() {
    WORK="$(mktemp -d)"
    cd "$WORK"
    detection_set
    sed "s|^|$WORK/|" train.txt > abs.txt
    printf 'square\nmapped square\n' > two.names
    printf 'classes=2\ntrain=%s/abs.txt\nvalid=%s/abs.txt\nnames=%s/two.names\n' \
        "$WORK" "$WORK" "$WORK" > two.data
    printf '1\n0\n' > swap.map
    sed 's/^filters=6$/filters=7/; s/^classes=1$/classes=2/; s|^\[yolo\]$|[yolo]\nmap=swap.map\ncounters_per_class=10,40|' \
        tiny.cfg > two.cfg
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

@test "map=: the checkpoint keeps the table; info, detect, eval, export and resume elsewhere match" {
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
    # the run learned: the detector says class 1 (what the map teaches) and eval found boxes
    grep -q '"index": *1' here/detect
    grep -q '^mAP@0.5' here/eval
}

@test "map=: a changed map file does not change a loaded model's losses" {
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
