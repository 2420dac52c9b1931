#!/usr/bin/env bats
# cdl train: accuracy on the bundled digits, checkpoints, latest link, logs, resume.
load helpers

@test "digits.cfg reaches at least 90% test accuracy" {
    run "$CDL" train "$REPO/cfg/digits.cfg" --out digits.cdl
    [ "$status" -eq 0 ]
    run "$CDL" eval digits.cdl --json
    [ "$status" -eq 0 ]
    accuracy=$(printf '%s' "$output" | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["accuracy"])')
    echo "accuracy $accuracy"
    /usr/bin/python3 -c "import sys; sys.exit(0 if $accuracy >= 0.90 else 1)"
}

@test "train writes weights/CFGNAME.cdl and points weights/latest.cdl at it" {
    run "$CDL" train "$REPO/cfg/digits.cfg" --epochs 1
    [ "$status" -eq 0 ]
    [ -f weights/digits.cdl ]
    [ "$(readlink weights/latest.cdl)" = digits.cdl ]
    run "$CDL" eval --json
    [ "$status" -eq 0 ]
    [[ "$output" == *'"model":"weights/latest.cdl"'* ]]
}

@test "train prints one plain line per logged step and an epoch summary when not a terminal" {
    run "$CDL" train "$REPO/cfg/digits.cfg" --epochs 1 --out d.cdl --log-every 10
    [ "$status" -eq 0 ]
    [[ "$output" == *"epoch 1/1 step 10/44 loss "*" img/s ETA "* ]]
    [[ "$output" == *"epoch 1/1: train loss "*", valid loss "*", accuracy "*"saved d.cdl"* ]]
}

@test "--log writes JSON Lines for steps and epochs" {
    run "$CDL" train "$REPO/cfg/digits.cfg" --epochs 2 --out d.cdl --log run.jsonl --log-every 11
    [ "$status" -eq 0 ]
    run /usr/bin/python3 - <<'PY'
import json
rows = [json.loads(l) for l in open("run.jsonl")]
steps = [r for r in rows if r["type"] == "step"]
epochs = [r for r in rows if r["type"] == "epoch"]
assert len(steps) == 8, len(steps)
assert [r["step"] for r in steps[:4]] == [11, 22, 33, 44]
assert all(k in steps[0] for k in ("step", "epoch", "loss", "lr", "images_per_s"))
assert [r["epoch"] for r in epochs] == [1, 2]
assert all(0 <= r["accuracy"] <= 1 and r["valid_loss"] > 0 for r in epochs)
PY
    [ "$status" -eq 0 ]
}

@test "same seed gives identical checkpoints" {
    "$CDL" train "$REPO/cfg/digits.cfg" --epochs 1 --out a.cdl --seed 7 2>/dev/null
    "$CDL" train "$REPO/cfg/digits.cfg" --epochs 1 --out b.cdl --seed 7 2>/dev/null
    "$CDL" train "$REPO/cfg/digits.cfg" --epochs 1 --out c.cdl --seed 8 2>/dev/null
    cmp a.cdl b.cdl
    ! cmp -s a.cdl c.cdl
}

@test "2 epochs straight equal 1 epoch plus a resumed epoch" {
    "$CDL" train "$REPO/cfg/digits.cfg" --epochs 2 --out straight.cdl 2>/dev/null
    "$CDL" train "$REPO/cfg/digits.cfg" --epochs 1 --out resumed.cdl 2>/dev/null
    run "$CDL" train --resume resumed.cdl --epochs 2
    [ "$status" -eq 0 ]
    [[ "$output" == *"epoch 2/2: "* ]]
    cmp straight.cdl resumed.cdl
}

@test "resume with subdivisions and a steps policy is identical too" {
    sets=(--set net.subdivisions=4 --set net.policy=steps --set net.steps=50 --set net.scales=0.1)
    "$CDL" train "$REPO/cfg/digits.cfg" "${sets[@]}" --epochs 2 --out straight.cdl 2>/dev/null
    "$CDL" train "$REPO/cfg/digits.cfg" "${sets[@]}" --epochs 1 --out resumed.cdl 2>/dev/null
    "$CDL" train --resume resumed.cdl --epochs 2 2>/dev/null
    cmp straight.cdl resumed.cdl
}

@test "--set overrides reach the net" {
    run "$CDL" info "$REPO/cfg/digits.cfg" --set 0.filters=7 --set net.batch=16
    [ "$status" -eq 0 ]
    [[ "$output" == *"batch 16"* ]]
    [[ "$output" == *"7x8x8"* ]]
}

@test "--weights initialises from a checkpoint of the same architecture" {
    train_digits 1
    run "$CDL" train "$REPO/cfg/digits.cfg" --weights digits.cdl --epochs 1 --out ft.cdl
    [ "$status" -eq 0 ]
    run "$CDL" train "$REPO/cfg/fashion.cfg" --weights digits.cdl --epochs 1 --out x.cdl
    [ "$status" -eq 2 ]
    [[ "$output" == *"digits.cdl: its architecture differs from the cfg"* ]]
}
