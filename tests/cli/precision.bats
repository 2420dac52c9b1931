#!/usr/bin/env bats
# --precision fp32|bf16|tf32|fp16 and [net] precision=: rounded products in train, eval, predict,
# bench and profile; fp16's loss scaling; a bad value is refused naming the option or key.
load helpers

@test "train --precision bf16 trains digits as well as fp32; the checkpoint keeps the precision" {
    run "$CDL" train "$REPO/cfg/digits.cfg" --precision bf16 --epochs 2 --out bf16.cdl \
        --threads 1 --log-every 1000
    [ "$status" -eq 0 ]
    train_digits
    fp=$("$CDL" eval digits.cdl --json | jq .accuracy)
    bf=$("$CDL" eval bf16.cdl --json | jq .accuracy)
    jq -n --argjson a "$fp" --argjson b "$bf" '($a - $b) | fabs <= 0.02' | grep -qx true
    # the checkpoint's cfg keeps precision=bf16: eval runs in it unless told otherwise
    loss=$("$CDL" eval bf16.cdl --json | jq .loss)
    [ "$loss" = "$("$CDL" eval bf16.cdl --precision bf16 --json | jq .loss)" ]
    [ "$loss" != "$("$CDL" eval bf16.cdl --precision fp32 --json | jq .loss)" ]
}

@test "eval, predict, bench and profile take --precision bf16" {
    train_digits
    "$CDL" eval digits.cdl --precision bf16 --json | jq -e '.accuracy > 0.8'
    gray_png digit.png digit 5 > /dev/null
    run "$CDL" predict digits.cdl digit.png --precision bf16 --top 1
    [ "$status" -eq 0 ]
    run "$CDL" bench "$REPO/cfg/digits.cfg" --precision bf16 --steps 2 --warmup 1 --json
    [ "$status" -eq 0 ]
    [ "$(echo "$output" | jq '.images_per_s > 0')" = true ]
    run "$CDL" profile digits.cdl --precision bf16 --iters 2
    [ "$status" -eq 0 ]
    run "$CDL" bench "$REPO/cfg/digits.cfg" --set net.precision=bf16 --steps 1 --warmup 0
    [ "$status" -eq 0 ]
}

@test "a bad --precision is refused naming the option, exit 2" {
    for cmd in train eval predict bench profile; do
        run "$CDL" $cmd "$REPO/cfg/digits.cfg" --precision half
        [ "$status" -eq 2 ]
        [[ "$output" == *"--precision: unknown precision 'half' (expected fp32, bf16, tf32, fp16)"* ]]
    done
}

@test "a bad [net] precision= is refused naming the file, line and key, exit 2" {
    sed 's/^\[net\]$/[net]\nprecision=half/' "$REPO/cfg/digits.cfg" > bad.cfg
    run "$CDL" train bad.cfg --data "$REPO/cfg/digits.data" --epochs 1
    [ "$status" -eq 2 ]
    [[ "$output" == *"bad.cfg:"*"bad value 'half' for key 'precision' in [net]: expected one of fp32, bf16, tf32, fp16"* ]]
    run "$CDL" bench "$REPO/cfg/digits.cfg" --set net.precision=half
    [ "$status" -eq 2 ]
    [[ "$output" == *"--set net.precision=half"*"expected one of fp32, bf16, tf32, fp16"* ]]
}

@test "--resume takes no --precision" {
    train_digits 1
    run "$CDL" train --resume digits.cdl --precision bf16
    [ "$status" -eq 2 ]
    [[ "$output" == *"--resume continues a run in its precision"* ]]
}

# The step records of a --log file: "loss_scale skipped_steps" per line.
loss_scales() {
    python3 -c 'import json,sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    if r["type"] == "step": print(r["loss_scale"], r["skipped_steps"])' "$1"
}

@test "fp16 training logs its loss scale and skipped steps; other precisions have none" {
    # (test_loss_scale: a step with gradients that are not finite is skipped, the scale halves)
    run "$CDL" train "$REPO/cfg/digits.cfg" --precision fp16 --epochs 1 --log-every 1 \
        --log fp16.jsonl --out f.cdl --threads 1
    echo "$output"
    [ "$status" -eq 0 ]
    loss_scales fp16.jsonl > scales
    [ "$(head -n 1 scales)" = "65536 0" ]
    [[ "$output" == *"loss scale 65536 (0 skipped)"* ]]
    "$CDL" eval f.cdl --json | jq -e '.accuracy > 0.8'
    "$CDL" train "$REPO/cfg/digits.cfg" --precision bf16 --epochs 1 --log-every 1 --log bf16.jsonl \
        --out b.cdl --threads 1
    ! grep -q loss_scale bf16.jsonl
}

@test "fp16: a resumed run keeps the loss scale and ends where an uninterrupted one does" {
    # batch 1 at a tenth of digits.cfg's rate (at its own it diverges, in fp32 too): some steps
    # skipped, and the 2000 finite steps that double the scale span the resume
    "$CDL" train "$REPO/cfg/digits.cfg" --precision fp16 --set net.batch=1 \
        --set net.subdivisions=1 --set net.learning_rate=0.005 --epochs 2 --out whole.cdl \
        --threads 1 --log-every 100000
    "$CDL" train "$REPO/cfg/digits.cfg" --precision fp16 --set net.batch=1 \
        --set net.subdivisions=1 --set net.learning_rate=0.005 --epochs 1 --out half.cdl \
        --threads 1 --log-every 100000
    "$CDL" train --resume half.cdl --epochs 2 --threads 1 --log-every 100000
    [ "$("$CDL" eval whole.cdl --json | jq .loss)" = "$("$CDL" eval half.cdl --json | jq .loss)" ]
}
