#!/usr/bin/env bats
# Files that lie and outputs the user did not mean (issue 43 items 5 and 6): every whole-file
# read is bounded, names from a file are escaped where they are written, and every writer
# refuses to replace its own input or a file of another kind.
load helpers

# Runs cdl on one thread under a 6 GB address-space limit, so that an unbounded read fails fast
# instead of filling the machine: a bounded one stops at its limit (at most 2 GiB, 3 GiB mapped
# while its buffer grows) with its message.
bounded() {
    run env OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 bash -c 'ulimit -v 6000000; exec "$@"' cdl \
        "$CDL" "$@"
}

@test "a config that never ends (/dev/zero) is refused at 16 MiB" {
    bounded train /dev/zero
    [ "$status" -eq 2 ]
    [ "$output" = "cdl: /dev/zero: larger than 16 MiB, the most cdl reads for one config (is it the right file?)" ]
}

@test "an image that never ends is refused at 256 MiB" {
    train_digits 1
    bounded predict digits.cdl /dev/zero
    [ "$status" -ne 0 ]
    [[ "$output" == *"/dev/zero: larger than 256 MiB, the most cdl reads for one image (is it the right file?)"* ]]
}

@test "an ONNX model that never ends is refused at 2 GiB" {
    bounded import /dev/zero -o z.cfg
    [ "$status" -eq 2 ]
    [ "$output" = "cdl: /dev/zero: larger than 2048 MiB, the most cdl reads for one ONNX model (is it the right file?)" ]
    [ ! -e z.cfg ]
}

@test "a training log that never ends is refused at 1 GiB" {
    bounded plot /dev/zero -o p.png
    [ "$status" -eq 2 ]
    [ "$output" = "cdl: /dev/zero: larger than 1024 MiB, the most cdl reads for one log (is it the right file?)" ]
}

@test "a text corpus that never ends is refused at 1 GiB" {
    printf 'type=text\ntokens=char\ntrain=/dev/zero\n' > z.data
    bounded train "$REPO/cfg/gpt_tiny.cfg" --data z.data --epochs 1 --out g.cdl
    [ "$status" -eq 2 ]
    [ "$output" = "cdl: /dev/zero: larger than 1024 MiB, the most cdl reads for one text (is it the right file?)" ]
}

@test "a dataset file that never ends (digits CSV or IDX, read through zlib) is refused at 2 GiB" {
    printf 'classes=10\ntrain=/dev/zero\n' > z.data
    bounded train "$REPO/cfg/digits.cfg" --data z.data --epochs 1 --out z.cdl
    [ "$status" -eq 2 ]
    [ "$output" = "cdl: z.data: /dev/zero: larger than 2048 MiB, the most cdl reads for one dataset (is it the right file?)" ]
}

# Renames the first node of ONNX file $1 to $3 and sets its producer to $4, into $2.
rename_onnx() {
    /usr/bin/python3 - "$@" <<'PY'
import sys, onnx
m = onnx.load(sys.argv[1])
m.graph.node[0].name = sys.argv[3]
m.producer_name = sys.argv[4]
onnx.save(m, sys.argv[2])
PY
}

@test "ONNX node and producer names are escaped in the imported cfg's comments, never cfg keys" {
    "$CDL" export onnx "$REPO/cfg/digits.cfg" -o d.onnx > /dev/null
    "$CDL" import d.onnx -o d.cfg > /dev/null
    # a newline in the name put mean=9 into [net]: the import predicted differently, exit 0
    rename_onnx d.onnx evil.onnx $'layer0\nmean=9\n# ' $'cdl\x1b[31m'
    run "$CDL" import evil.onnx -o evil.cfg
    [ "$status" -eq 0 ]
    grep -qxF "# node 'layer0\\x0Amean=9\\x0A# ' (Conv)" evil.cfg
    grep -qF "producer 'cdl\\x1B[31m')" evil.cfg
    diff <(grep -v '^#' d.cfg) <(grep -v '^#' evil.cfg)
}

# digits with class names that are not UTF-8 (8) or hold a terminal escape (9), at names.cdl.
train_hostile_names() {
    printf 'zero\none\ntwo\nthree\nfour\nfive\nsix\nseven\nbad\xffname\nesc\x1b[2Jnine\n' > n.names
    printf 'classes=10\nnames=n.names\ntrain=%s/data/digits.csv.gz\nvalid_split=0.2\n' "$REPO" > n.data
    "$CDL" train "$REPO/cfg/digits.cfg" --data n.data --epochs 1 --out names.cdl --threads 1 \
        > /dev/null 2>&1
}

@test "--json stays valid UTF-8 JSON with file and class names that are not" {
    train_hostile_names
    img=$(printf 'img\xff\x1b[2J.png')
    gray_png "$img" digit 0 > /dev/null
    "$CDL" predict names.cdl "$img" --top 10 --json > p.json
    /usr/bin/python3 - <<'PY'
import json
d = json.load(open("p.json", encoding="utf-8"))
assert d[0]["file"] == "img\ufffd\x1b[2J.png", d[0]["file"]
names = {c["class"] for c in d[0]["top"]}
assert {"bad\ufffdname", "esc\x1b[2Jnine"} <= names, names
PY
    "$CDL" eval names.cdl --data n.data --json > e.json
    /usr/bin/python3 -c 'import json; assert "bad\ufffdname" in json.load(open("e.json", encoding="utf-8"))["per_class_accuracy"]'
}

@test "file and class names reach the terminal escaped, never as raw control bytes" {
    train_hostile_names
    img=$(printf 'img\xff\x1b[2J.png')
    gray_png "$img" digit 0 > /dev/null
    run "$CDL" predict names.cdl "$img" --top 10
    [ "$status" -eq 0 ]
    [ "${lines[0]}" = 'img\xFF\x1B[2J.png:' ]
    [[ "$output" == *'  bad\xFFname'* && "$output" == *'  esc\x1B[2Jnine'* ]]
    [[ "$output" != *$'\x1b'* ]]
    run "$CDL" eval names.cdl --data n.data
    [[ "$output" == *'bad\xFFname'* && "$output" != *$'\x1b'* ]]
    # error messages too: a missing image whose name holds an escape
    run "$CDL" predict names.cdl $'gone\x1b[2J.png'
    [[ "$output" == *'gone\x1B[2J.png'* && "$output" != *$'\x1b'* ]]
}

@test "a safetensors file of 200,000 tensors is read in linear time (its duplicate check was quadratic)" {
    /usr/bin/python3 - <<'PY'
import json, struct
n = 200000
hdr = {f"t{i}": {"dtype": "F32", "shape": [1], "data_offsets": [4 * i, 4 * i + 4]} for i in range(n)}
text = json.dumps(hdr, separators=(",", ":")).encode()
text += b" " * (-len(text) % 8)
open("many.safetensors", "wb").write(struct.pack("<Q", len(text)) + text + b"\0" * (4 * n))
PY
    # well under a second now; 91 s before (the bound is generous, not a timing)
    run timeout 60 "$CDL" export onnx "$REPO/cfg/digits.cfg" --weights many.safetensors -o d.onnx
    [ "$status" -eq 2 ]
    [[ "$output" == *"not in the cfg: t0, t1, t2, t3, t4, t5 and 199994 more" ]]
}

@test "a safetensors tensor named twice is refused naming it" {
    /usr/bin/python3 - <<'PY'
import struct
text = b'{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}'
text += b" " * (-len(text) % 8)
open("twice.safetensors", "wb").write(struct.pack("<Q", len(text)) + text + b"\0" * 8)
PY
    run "$CDL" export onnx "$REPO/cfg/digits.cfg" --weights twice.safetensors -o d.onnx
    [ "$status" -eq 2 ]
    [ "$output" = "cdl: twice.safetensors: tensor 'a' appears twice" ]
}

@test "import -o refuses to replace a trained checkpoint with cfg text, and -o and --out naming one file" {
    train_digits 1
    cp digits.cdl kept.cdl
    "$CDL" export onnx digits.cdl -o d.onnx > /dev/null
    run "$CDL" import d.onnx -o digits.cdl
    [ "$status" -eq 2 ]
    [ "$output" = "cdl: digits.cdl: exists and is a cdl checkpoint, not a cfg file; not overwriting it (choose another path)" ]
    cmp digits.cdl kept.cdl
    run "$CDL" import d.onnx -o n.cfg --out n.cfg
    [ "$status" -eq 2 ]
    [ "$output" = "cdl: n.cfg: -o (the cfg) and --out (the checkpoint) name one file" ]
    [ ! -e n.cfg ]
    # a cfg it wrote before is replaced
    "$CDL" import d.onnx -o n.cfg > /dev/null
    "$CDL" import d.onnx -o n.cfg > /dev/null
}

@test "export and quantize refuse to overwrite their own input, under any name" {
    train_digits 1
    cp digits.cdl kept.cdl
    ln -s digits.cdl link.cdl
    for args in "darknet digits.cdl -o digits.cdl" "onnx digits.cdl -o link.cdl" "safetensors digits.cdl -o digits.cdl"; do
        run "$CDL" export $args
        [ "$status" -eq 2 ]
        [[ "$output" == "cdl: "*": is an input of this command (digits.cdl); not overwriting it (choose another output path)" ]]
    done
    run "$CDL" quantize digits.cdl -o digits.cdl
    [ "$status" -eq 2 ]
    [ "$output" = "cdl: digits.cdl: is an input of this command (digits.cdl); not overwriting it (choose another output path)" ]
    cmp digits.cdl kept.cdl
}

@test "every -o refuses a file of another kind and keeps it; files of its own kind are replaced" {
    train_digits 1
    echo "my notes" > notes.txt
    cp notes.txt kept.txt
    for args in "export onnx digits.cdl -o notes.txt" "export darknet digits.cdl -o notes.txt" \
        "export safetensors digits.cdl -o notes.txt" "quantize digits.cdl -o notes.txt" \
        "graph digits.cdl -o notes.txt" "profile digits.cdl --iters 1 --trace notes.txt"; do
        run "$CDL" $args
        [ "$status" -eq 2 ]
        [[ "$output" == "cdl: notes.txt: exists and is a text file, not "*"; not overwriting it (choose another path)" ]]
    done
    "$CDL" train "$REPO/cfg/digits.cfg" --epochs 1 --threads 1 --log run.jsonl --out r.cdl 2> /dev/null
    run "$CDL" plot run.jsonl -o notes.txt
    [ "$status" -eq 2 ]
    [ "$output" = "cdl: notes.txt: exists and is a text file, not a PNG image; not overwriting it (choose another path)" ]
    run "$CDL" train "$REPO/cfg/digits.cfg" --epochs 1 --threads 1 --trace notes.txt --out r.cdl
    [ "$status" -eq 2 ]
    [ "$output" = "cdl: notes.txt: exists and is a text file, not a JSON file; not overwriting it (choose another path)" ]
    cmp notes.txt kept.txt
    # the kind it writes is replaced, as before
    for n in 1 2; do
        "$CDL" export onnx digits.cdl -o d.onnx > /dev/null
        "$CDL" export darknet digits.cdl -o d.weights > /dev/null
        "$CDL" export safetensors digits.cdl -o d.safetensors > /dev/null
        "$CDL" plot run.jsonl -o p.png
        "$CDL" graph digits.cdl -o g.dot
        "$CDL" profile digits.cdl --iters 1 --trace t.json > /dev/null
    done
}
