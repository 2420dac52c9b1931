# Optimizers, schedules, clipping, label smoothing and the EMA from the command line: exact
# resume, the cosine schedule over the run, the EMA that eval measures, and the [net] key errors.
load helpers

py() {
    /usr/bin/python3 -c "$@"
}

@test "2 epochs straight equal 1 + 1 resumed with adam, cosine, warmup, clipping, smoothing and EMA" {
    # digits: 1437 training images, batch 32: 44 steps per epoch; the cosine spans max_batches.
    sets=(--set net.optimizer=adam --set net.learning_rate=0.003 --set net.policy=cosine
          --set net.max_batches=88 --set net.warmup=10 --set net.clip_grad_norm=2
          --set net.ema=0.9 --set 4.label_smoothing=0.1)
    "$CDL" train "$REPO/cfg/digits.cfg" "${sets[@]}" --epochs 2 --out straight.cdl --threads 1 2>/dev/null
    "$CDL" train "$REPO/cfg/digits.cfg" "${sets[@]}" --epochs 1 --out resumed.cdl --threads 1 2>/dev/null
    run "$CDL" train --resume resumed.cdl --epochs 2 --threads 1
    [ "$status" -eq 0 ]
    [[ "$output" == *"epoch 2/2: "* ]]
    cmp straight.cdl resumed.cdl
}

@test "policy=cosine without max_batches decays over the run's steps to lr_min" {
    run "$CDL" train "$REPO/cfg/digits.cfg" --set net.policy=cosine --set net.lr_min=0.001 \
        --epochs 2 --out d.cdl --log run.jsonl --log-every 1
    [ "$status" -eq 0 ]
    # 88 steps: step t (0-based) runs at 0.001 + (0.05 - 0.001) (1 + cos(pi t / 88)) / 2.
    py '
import json, math
steps = [r for r in map(json.loads, open("run.jsonl")) if r["type"] == "step"]
assert len(steps) == 88, len(steps)
for r in steps:
    t = r["step"] - 1
    want = 0.001 + (0.05 - 0.001) * (1 + math.cos(math.pi * t / 88)) / 2
    assert abs(r["lr"] - want) <= 1e-6 * want, (t, r["lr"], want)
'
}

@test "warmup scales the first steps' rate by (t+1)/warmup" {
    run "$CDL" train "$REPO/cfg/digits.cfg" --set net.warmup=4 --epochs 1 --out d.cdl \
        --log run.jsonl --log-every 1
    [ "$status" -eq 0 ]
    py '
import json
lrs = [r["lr"] for r in map(json.loads, open("run.jsonl")) if r["type"] == "step"][:6]
want = [0.0125, 0.025, 0.0375, 0.05, 0.05, 0.05]
assert all(abs(a - b) <= 1e-7 for a, b in zip(lrs, want)), lrs
'
}

@test "eval of a checkpoint with an EMA measures what the validation of training measured" {
    run "$CDL" train "$REPO/cfg/digits.cfg" --set net.ema=0.95 --epochs 2 --out ema.cdl \
        --log run.jsonl
    [ "$status" -eq 0 ]
    run "$CDL" eval ema.cdl --json
    [ "$status" -eq 0 ]
    printf '%s' "$output" > eval.json
    py '
import json
epochs = [r for r in map(json.loads, open("run.jsonl")) if r["type"] == "epoch"]
got = json.load(open("eval.json"))
# eval opens an inference net, whose convolutions run on oneDNN (engine=auto) where training
# validated on its own engine: the same weights agree to float32 round-off, far below what
# measuring the raw weights instead of the EMA'"'"'s would change
assert abs(got["loss"] - epochs[-1]["valid_loss"]) <= 1e-6 * epochs[-1]["valid_loss"], (got["loss"], epochs[-1])
assert got["accuracy"] == epochs[-1]["accuracy"]
'
}

@test "an unknown optimizer is a config error listing the choices" {
    run "$CDL" train "$REPO/cfg/digits.cfg" --set net.optimizer=adagrad --epochs 1
    [ "$status" -eq 2 ]
    [[ "$output" == *"bad value 'adagrad' for key 'optimizer' in [net]: expected one of sgd, adam, adamw"* ]]
}

@test "nesterov=1 needs SGD with momentum" {
    run "$CDL" train "$REPO/cfg/digits.cfg" --set net.nesterov=1 --set net.momentum=0 --epochs 1
    [ "$status" -eq 2 ]
    [[ "$output" == *"nesterov=1 needs optimizer=sgd and momentum > 0"* ]]
}

@test "out-of-range optimizer settings are config errors" {
    run "$CDL" train "$REPO/cfg/digits.cfg" --set net.beta2=1 --epochs 1
    [ "$status" -eq 2 ]
    [[ "$output" == *"bad value '1' for key 'beta2' in [net]: must be < 1"* ]]
    run "$CDL" train "$REPO/cfg/digits.cfg" --set net.ema=-0.5 --epochs 1
    [ "$status" -eq 2 ]
    [[ "$output" == *"bad value '-0.5' for key 'ema' in [net]: must be >= 0"* ]]
    run "$CDL" train "$REPO/cfg/digits.cfg" --set 4.label_smoothing=1.5 --epochs 1
    [ "$status" -eq 2 ]
    [[ "$output" == *"bad value '1.5' for key 'label_smoothing' in [softmax]: expected a value in [0, 1]"* ]]
}
