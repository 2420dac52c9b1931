#!/usr/bin/env bats
# cdl eval, predict and info on real outputs.
load helpers

@test "eval prints loss, top-1, top-5, per-class accuracy and a confusion matrix" {
    train_digits
    run "$CDL" eval digits.cdl
    [ "$status" -eq 0 ]
    [[ "$output" == *"359 samples"* ]]
    [[ "$output" == *"loss "*"top-1 "*"top-5 "* ]]
    [[ "$output" == *"per-class accuracy:"* ]]
    [[ "$output" == *"confusion matrix (rows: true class, columns: predicted):"* ]]
}

@test "eval --json has accuracy, top5, loss, samples and a 10x10 confusion matrix" {
    train_digits
    run "$CDL" eval digits.cdl --json
    [ "$status" -eq 0 ]
    printf '%s' "$output" | /usr/bin/python3 -c '
import json, sys
r = json.load(sys.stdin)
assert r["samples"] == 359
assert 0 < r["accuracy"] <= r["top5"] <= 1 and r["loss"] > 0
m = r["confusion"]
assert len(m) == 10 and all(len(row) == 10 for row in m)
assert sum(map(sum, m)) == 359
assert abs(sum(m[i][i] for i in range(10)) / 359 - r["accuracy"]) < 1e-9
'
}

@test "predict prints the top-k classes of PNG and JPEG files" {
    train_digits
    label=$(gray_png digit.png digit 1796)
    /usr/bin/python3 -c 'from PIL import Image; Image.open("digit.png").save("digit.jpg", quality=100)'
    run "$CDL" predict digits.cdl digit.png digit.jpg --top 3
    [ "$status" -eq 0 ]
    [ "$(printf '%s\n' "$output" | grep -c '%')" -eq 6 ]
    [ "${lines[0]}" = "digit.png:" ]
    [[ "${lines[1]}" == *"% "*" $label" ]]
    [ "${lines[4]}" = "digit.jpg:" ]
}

@test "predict --json lists k classes with probabilities per file" {
    train_digits
    gray_png x.png 16 "40 * (x % 3)"
    run "$CDL" predict digits.cdl x.png --top 4 --json
    [ "$status" -eq 0 ]
    printf '%s' "$output" | /usr/bin/python3 -c '
import json, sys
r = json.load(sys.stdin)
assert len(r) == 1 and r[0]["file"] == "x.png" and len(r[0]["top"]) == 4
p = [t["probability"] for t in r[0]["top"]]
assert p == sorted(p, reverse=True) and 0 < sum(p) <= 1.0001
'
}

@test "predict uses weights/latest.cdl when no model is given" {
    "$CDL" train "$REPO/cfg/digits.cfg" --epochs 1 2>/dev/null
    gray_png z.png 8 "0"
    run "$CDL" predict z.png --top 1
    [ "$status" -eq 0 ]
    [ "${lines[0]}" = "z.png:" ]
}

@test "info prints the layer table with parameters and FLOPs" {
    run "$CDL" info "$REPO/cfg/fashion.cfg"
    [ "$status" -eq 0 ]
    [[ "${lines[1]}" == *"type"*"output CxHxW"*"params"*"MFLOPs"* ]]
    [[ "$output" == *"convolutional  32x28x28"* ]]
    [[ "$output" == *"total: 155626 parameters"* ]]
}

@test "info works on a checkpoint and --json is machine-readable" {
    train_digits 1
    run "$CDL" info digits.cdl --json
    [ "$status" -eq 0 ]
    printf '%s' "$output" | /usr/bin/python3 -c '
import json, sys
r = json.load(sys.stdin)
assert r["params"] == 9978 and len(r["layers"]) == 5
assert r["layers"][0]["output"] == [16, 8, 8]
assert sum(l["params"] for l in r["layers"]) == r["params"]
'
}

@test "help lists every command and every option" {
    run "$CDL" --help
    [ "$status" -eq 0 ]
    for c in train eval predict info; do [[ "$output" == *"$c"* ]]; done
    run "$CDL" train --help
    [ "$status" -eq 0 ]
    for o in --data --weights --resume --out --epochs --threads --seed --set --log; do
        [[ "$output" == *"$o"* ]]
    done
}
