#!/usr/bin/env bats
# cdl check CFG [--data D] [--set K=V]... [--json]: everything train would refuse, listed at once
# before anything trains, and the memory a training step holds.
load helpers

@test "check of a cfg and data that train takes exits 0 with the net, data and memory" {
    run "$CDL" check "$REPO/cfg/digits.cfg"
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "${lines[0]}" == *"digits.cfg: input 1x8x8 (CxHxW), 10 outputs, 9978 parameters (+96 running statistics)" ]]
    [[ "${lines[1]}" == *"digits.data: idx or digits csv, 10 classes" ]]
    [[ "${lines[2]}" == "a training step (batch 32 in 1 mini-batch of 32) holds "*": parameters "*", gradients "*", sgd state "*", activations "* ]]
    [[ "${lines[3]}" == "this process may take "*" more: "*" is "* ]]
    [ "${lines[4]}" = "ok: train would start" ]
}

@test "check --json: the memory is parameters + gradients + optimizer state + activations" {
    run "$CDL" check "$REPO/cfg/digits.cfg" --set net.optimizer=adam --json
    [ "$status" -eq 0 ]
    echo "$output" | /usr/bin/python3 -c '
import json, sys
r = json.load(sys.stdin)
m = r["memory_bytes"]
assert r["ok"] and r["errors"] == [] and r["optimizer"] == "adam", r
assert m["params"] == 4 * (r["params"] + r["state"]), m
assert m["grads"] == 4 * r["params"] and m["optimizer"] == 8 * r["params"], m
assert m["total"] == m["params"] + m["grads"] + m["optimizer"] + m["activations"], m
# the first layer output, delta and batch-norm values of a 32-image mini-batch, at least
assert m["activations"] > 32 * 4 * (16 * 64 * 3), m'
}

@test "check lists every problem with its file and line, and exits 2 as train would" {
    mkdir -p data
    printf '[net]\nbatch=2\nbatch=3\nwidth=8\nheight=8\nchannels=1\nlearning_rat=0.1\n\n[connected]\noutput=10\nactivaton=relu\n\n[softmax]\n' > bad.cfg
    printf 'classes=12\ntrain=%s\nvalid=missing.csv\n' "$REPO/data/digits.csv.gz" > bad.data
    run "$CDL" check bad.cfg
    echo "$output"
    [ "$status" -eq 2 ]
    [ "${lines[0]}" = "cdl: bad.cfg:3: duplicate key 'batch' in [net]: '3' here, '2' at line 2 (give it once)" ]
    [ "${lines[1]}" = "cdl: bad.data: valid=missing.csv: cannot read: No such file or directory" ]
    [[ "${lines[2]}" == "cdl: bad.cfg:7: unknown key 'learning_rat' in [net] (valid keys: batch, "* ]]
    [[ "${lines[3]}" == "cdl: bad.cfg:11: unknown key 'activaton' in [connected] (valid keys: output, "* ]]
    [ "${lines[4]}" = "cdl: bad.data: the data has 12 classes but the net outputs 10" ]
    [ "${lines[-1]}" = "5 problems: train would refuse this" ]
    run "$CDL" train bad.cfg --epochs 1
    [ "$status" -eq 2 ]
}

@test "check names a --set that fails, and takes --data" {
    run "$CDL" check "$REPO/cfg/digits.cfg" --data "$REPO/cfg/digits.data" --set net.batch=abc \
        --set 9.output=3
    [ "$status" -eq 2 ]
    [ "${lines[0]}" = "cdl: --set '9.output=3': no layer 9 (the cfg has layers 0..4, or use net)" ]
    [ "${lines[1]}" = "cdl: --set net.batch=abc: bad value 'abc' for key 'batch' in [net]: expected an integer in -16777216..16777216" ]
    [ "${lines[-1]}" = "2 problems: train would refuse this" ]
}

@test "check warns where train only warns: fewer classes than outputs, samples converted" {
    printf '[net]\nbatch=2\nwidth=8\nheight=8\nchannels=3\n\n[connected]\noutput=12\n\n[softmax]\n' > wide.cfg
    run "$CDL" check wide.cfg --data "$REPO/cfg/digits.data"
    [ "$status" -eq 0 ]
    [[ "${lines[0]}" == *"digits.data: warning: the data has 10 classes and the net outputs 12: outputs 10..11 are never a label" ]]
    [ "${lines[-1]}" = "ok: train would start" ]
    [ -f /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ] || skip "no Fashion-MNIST (scripts/deps.sh)"
    run "$CDL" check wide.cfg --data "$REPO/cfg/fashion.data"
    [[ "$output" == *"fashion.data: warning: the samples have 1 channel and the net reads 3: each is converted"* ]]
    [[ "$output" == *"fashion.data: warning: the samples are 28x28 (HxW) and the net reads 8x8: each is resized"* ]]
}

@test "check refuses a sequence net on image data and a text whose vocabulary the net does not fit" {
    printf '[net]\nbatch=2\nseq=4\n\n[embedding]\noutput=8\n\n[linear]\noutput=5\n\n[softmax]\n' > text.cfg
    run "$CDL" check text.cfg --data "$REPO/cfg/digits.data"
    [ "$status" -eq 2 ]
    [[ "$output" == *"digits.data: a sequence net ([net] seq=4) trains on text: the .data file needs type=text"* ]]
    for i in $(seq 50); do printf 'abc'; done > corpus.txt
    printf 'type=text\ntrain=corpus.txt\nvalid_split=0.1\n' > text.data
    run "$CDL" check text.cfg --data text.data
    [ "$status" -eq 2 ]
    [[ "$output" == *"cdl: text.data: the text has 3 distinct tokens but the net has vocab=3 and 5 outputs per token"* ]]
    run "$CDL" check text.cfg --data text.data --set 1.output=3
    [ "$status" -eq 0 ]
    [[ "$output" == *"text.data: text, 3 distinct tokens"* ]]
    run "$CDL" check "$REPO/cfg/digits.cfg" --data text.data
    [ "$status" -eq 2 ]
    [[ "$output" == *"cdl: text.data: a text dataset (type=text) is for sequence nets ([net] seq=), not for image classifiers"* ]]
}

@test "check refuses a mini-batch too large to train, as train does" {
    run "$CDL" check "$REPO/cfg/digits.cfg" --set net.batch=16000000
    [ "$status" -eq 2 ]
    [[ "$output" == *"digits.cfg: a mini-batch of 16000000 images needs more than 1073741824 activation values; lower batch or raise subdivisions"* ]]
}

@test "check of a missing cfg or data file, and of no CFG" {
    run "$CDL" check missing.cfg --data "$REPO/cfg/digits.data"
    [ "$status" -eq 2 ]
    [ "${lines[0]}" = "cdl: missing.cfg: cannot open config: No such file or directory" ]
    run "$CDL" check "$REPO/cfg/gpt_tiny.cfg"
    [ "$status" -eq 2 ]
    [[ "${lines[0]}" == "cdl: "*"cfg/gpt_tiny.data: cannot open data file: No such file or directory" ]]
    run "$CDL" check
    [ "$status" -eq 2 ]
    [ "$output" = "cdl: check takes one CFG; see --help" ]
}

@test "check --weights loads the initial weights as train would: shapes, and a head's classes" {
    train_digits 1
    run "$CDL" check "$REPO/cfg/digits.cfg" --weights digits.cdl
    [ "$status" -eq 0 ]
    [[ "$output" == *"--weights digits.cdl: loaded 3 layers"* ]]
    [ "${lines[-1]}" = "ok: train would start" ]
    # the same images under other class names: the loaded head's classes are refused, as train
    # refuses them, unless the head is new
    seq 10 19 > names.txt
    printf 'classes=10\ntrain=%s\nvalid_split=0.2\nnames=names.txt\n' "$REPO/data/digits.csv.gz" > renamed.data
    run "$CDL" check "$REPO/cfg/digits.cfg" --data renamed.data --weights digits.cdl
    [ "$status" -eq 2 ]
    [[ "$output" == *"cdl: renamed.data: its 10 classes (10, 11, 12, 13, 14, 15, ..., 18, 19) are not the 10 classes digits.cdl was trained on (0, 1, 2, 3, 4, 5, ..., 8, 9)"*"add --new-head"* ]]
    [ "${lines[-1]}" = "1 problem: train would refuse this" ]
    run "$CDL" train "$REPO/cfg/digits.cfg" --data renamed.data --weights digits.cdl --epochs 1 --out t.cdl
    [ "$status" -eq 2 ]
    run "$CDL" check "$REPO/cfg/digits.cfg" --data renamed.data --weights digits.cdl --new-head
    [ "$status" -eq 0 ]
    [[ "$output" == *"new head (--new-head): layer 3 [connected] keeps its initial values"* ]]
    # another head shape is skipped, naming both shapes; no layer that matches is refused
    run "$CDL" check "$REPO/cfg/digits.cfg" --weights digits.cdl --set 3.output=12
    [ "$status" -eq 0 ]
    [[ "$output" == *"skipped layers 3 [connected] (shape 12x"* ]]
    run "$CDL" check "$REPO/cfg/digits.cfg" --weights digits.cdl --set 0.filters=3 --set 2.filters=5 --set 3.output=12
    [ "$status" -eq 2 ]
    [[ "$output" == *"cdl: digits.cdl: its architecture differs from the cfg: no layer matches"* ]]
    printf 'x' > short.weights
    run "$CDL" check "$REPO/cfg/digits.cfg" --weights short.weights
    [ "$status" -eq 2 ]
    [[ "$output" == *"cdl: "*"short.weights"* ]]
    run "$CDL" check "$REPO/cfg/digits.cfg" --new-head
    [ "$status" -eq 2 ]
    [ "$output" = "cdl: --new-head goes with --weights" ]
}
