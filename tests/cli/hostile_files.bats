#!/usr/bin/env bats
# Files that lie and outputs the user did not mean (issue 43 items 5 and 6): every whole-file
# read is bounded, names from a file are escaped where they are written, and every writer
# refuses to replace its own input or a file of another kind.
load helpers

# Runs cdl under a 4 GB address-space limit, so that an unbounded read fails fast instead of
# filling the machine: a bounded one stops at its limit (at most 2 GiB) with its message.
bounded() {
    run bash -c 'ulimit -v 4000000; exec "$@"' cdl "$CDL" "$@"
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
