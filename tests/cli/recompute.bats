#!/usr/bin/env bats
# Gradient checkpointing ([net] recompute_every, checkpoint=1): cdl train gives the same
# weights and running statistics as without it; cdl info reports the smaller activation slab.
load helpers

# A digits net with batch norm, a shortcut and a route reaching across segments, and dropout.
write_net() {
    write_cfg net.cfg <<'CFG'
[net]
batch=32
subdivisions=2
width=8
height=8
channels=1
learning_rate=0.05
momentum=0.9
[convolutional]
filters=8
size=3
pad=1
batch_normalize=1
activation=leaky
[convolutional]
filters=8
size=3
pad=1
batch_normalize=1
activation=relu
checkpoint=1
[shortcut]
from=-2
[convolutional]
filters=4
size=1
batch_normalize=1
activation=leaky
[route]
layers=-1,-2
[maxpool]
size=2
stride=2
[dropout]
probability=0.2
[connected]
output=10
activation=linear
[softmax]
CFG
}

@test "train with recompute_every or checkpoint=1 gives the same weights as without" {
    write_net
    "$CDL" train net.cfg --data "$REPO/cfg/digits.data" --epochs 1 --out plain.cdl \
        --set 1.checkpoint=0 2>/dev/null
    "$CDL" train net.cfg --data "$REPO/cfg/digits.data" --epochs 1 --out every.cdl \
        --set 1.checkpoint=0 --set net.recompute_every=2 2>/dev/null
    "$CDL" train net.cfg --data "$REPO/cfg/digits.data" --epochs 1 --out marked.cdl 2>/dev/null
    "$CDL" train net.cfg --data "$REPO/cfg/digits.data" --epochs 1 --out unplanned.cdl \
        --set 1.checkpoint=0 --set net.memory_plan=0 2>/dev/null
    for m in plain every marked unplanned; do "$CDL" export npy $m.cdl $m > /dev/null; done
    ls plain/*.npy > /dev/null
    diff -r plain every
    diff -r plain marked
    diff -r plain unplanned
}

@test "info prints the planned training and inference activations, smaller than unplanned" {
    run "$CDL" info "$REPO/cfg/resnet18_cifar.cfg" --set net.batch=64 --json
    [ "$status" -eq 0 ]
    planned=$output
    run "$CDL" info "$REPO/cfg/resnet18_cifar.cfg" --set net.batch=64 --set net.memory_plan=0 --json
    [ "$status" -eq 0 ]
    printf '%s\n%s\n' "$planned" "$output" | /usr/bin/python3 -c '
import json, sys
p, u = (json.loads(line) for line in sys.stdin)
mib = 1 << 20
print(p["train_activation_bytes"] / mib, p["inference_activation_bytes"] / mib,
      u["train_activation_bytes"] / mib)
assert p["inference_activation_bytes"] < p["train_activation_bytes"]
assert p["train_activation_bytes"] < 0.5 * u["train_activation_bytes"]'
    run "$CDL" info "$REPO/cfg/resnet18_cifar.cfg" --set net.batch=64
    [[ "${lines[-2]}" == "training activations: "*" MiB for a pass of 64 samples" ]]
    [[ "${lines[-1]}" == "inference activations: "*" MiB for a pass of 64 samples" ]]
}

@test "info reports a smaller training activation slab with recompute_every" {
    run "$CDL" info "$REPO/cfg/resnet50.cfg" --set net.batch=16 --set net.subdivisions=1
    [ "$status" -eq 0 ]
    plain=$(printf '%s\n' "$output" | sed -n 's/^training activations: \([0-9.]*\) MiB for a pass of 16 samples$/\1/p')
    run "$CDL" info "$REPO/cfg/resnet50.cfg" --set net.batch=16 --set net.subdivisions=1 \
        --set net.recompute_every=8
    [ "$status" -eq 0 ]
    ckpt=$(printf '%s\n' "$output" | sed -n 's/^training activations: \([0-9.]*\) MiB for a pass of 16 samples$/\1/p')
    echo "plain $plain MiB, recompute_every=8 $ckpt MiB"
    /usr/bin/python3 -c "import sys; sys.exit(0 if 0 < $ckpt < 0.5 * $plain else 1)"
}

@test "check counts the smaller activation slab of recompute_every in a step's memory" {
    for every in 0 8; do
        run "$CDL" check "$REPO/cfg/resnet50.cfg" --data "$REPO/cfg/digits.data" --json \
            --set net.batch=16 --set net.subdivisions=1 --set net.recompute_every=$every
        [ "$status" -eq 0 ]
        printf '%s\n' "$output" > check$every.json
    done
    /usr/bin/python3 - <<'PY'
import json
plain, ckpt = (json.load(open(f"check{n}.json"))["memory_bytes"] for n in (0, 8))
print(plain["activations"] >> 20, ckpt["activations"] >> 20)
assert 0 < ckpt["activations"] < 0.5 * plain["activations"]
assert ckpt["total"] - ckpt["activations"] == plain["total"] - plain["activations"]
PY
}

@test "bad recompute keys name the key" {
    run "$CDL" info "$REPO/cfg/digits.cfg" --set net.recompute_every=-1
    [ "$status" -eq 2 ]
    [[ "$output" == *"recompute_every"* ]]
    run "$CDL" info "$REPO/cfg/digits.cfg" --set 1.checkpoint=2
    [ "$status" -eq 2 ]
    [[ "$output" == *"checkpoint"* ]]
}
