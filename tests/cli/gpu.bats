#!/usr/bin/env bats
# Training on the GPU backend, run on the CUDA simulator (./cdl-gpusim, make GPU=sim; skipped
# where the CUDA toolkit is not): the same run as on the CPU, step by step within float32's
# round-off, and checkpoints that move between the two.
load helpers

GPU_CDL="${CDL_GPUSIM_BIN:-$REPO/cdl-gpusim}"

setup() {
    [ -x "$GPU_CDL" ] || skip "no GPU=sim build (needs the CUDA toolkit's headers)"
    WORK="$(mktemp -d)"
    cd "$WORK"
    # a digits net of the families the GPU runs (connected, softmax)
    write_cfg mlp.cfg <<'CFG'
[net]
batch=32
width=8
height=8
channels=1
learning_rate=0.05
momentum=0.9
decay=0.0005
[connected]
output=32
activation=leaky
[connected]
output=10
[softmax]
CFG
}

# The step losses of a --log file, one per line.
step_losses() {
    python3 -c 'import json,sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    if r["type"] == "step": print(r["loss"])' "$1"
}

@test "a net trains on the GPU with the CPU's losses" {
    cp "$REPO/cfg/digits.data" . && sed -i "s#\.\./data#$REPO/data#" digits.data
    "$CDL" train mlp.cfg --data digits.data --epochs 1 --log-every 1 --log cpu.jsonl --out cpu.cdl \
        --threads 1
    run "$GPU_CDL" train mlp.cfg --data digits.data --epochs 1 --log-every 1 --log gpu.jsonl \
        --out gpu.cdl --threads 1 --gpu 0
    echo "$output"
    [ "$status" -eq 0 ]
    paste <(step_losses cpu.jsonl) <(step_losses gpu.jsonl) > both
    [ "$(wc -l < both)" -eq 44 ]
    # float32 round-off of the products and of libdevice's exp grows over 44 steps of SGD:
    # the curves agree to 1e-4 relative, far below a step's change
    python3 -c 'import sys
for l in open("both"):
    c, g = map(float, l.split())
    assert abs(c - g) <= 1e-4 * abs(c), (c, g)'
}

@test "a checkpoint trained on the GPU evaluates on the CPU as the GPU did, and resumes on either" {
    cp "$REPO/cfg/digits.data" . && sed -i "s#\.\./data#$REPO/data#" digits.data
    "$GPU_CDL" train mlp.cfg --data digits.data --epochs 1 --out gpu.cdl --threads 1 --gpu 0 \
        --log gpu.jsonl
    run "$CDL" eval gpu.cdl --data digits.data --json
    echo "$output"
    [ "$status" -eq 0 ]
    # the validation the GPU ran at the epoch's end, against the CPU's eval of what it saved:
    # the same weights, so at most a sample whose two best classes round apart
    python3 -c 'import json,sys
gpu = [json.loads(l) for l in open("gpu.jsonl") if json.loads(l)["type"] == "epoch"][-1]
cpu = json.loads(sys.argv[1])
assert abs(gpu["accuracy"] - cpu["accuracy"]) <= 1.0 / cpu["samples"], (gpu, cpu)
assert abs(gpu["valid_loss"] - cpu["loss"]) <= 1e-5 * cpu["loss"], (gpu, cpu)' "$output"
    "$GPU_CDL" train --resume gpu.cdl --epochs 2 --out resumed_gpu.cdl --threads 1 --gpu 0 \
        --log resumed_gpu.jsonl
    "$CDL" train --resume gpu.cdl --epochs 2 --out resumed_cpu.cdl --threads 1 \
        --log resumed_cpu.jsonl
    # the second epoch resumed on either backend: the same curve within round-off
    paste <(step_losses resumed_cpu.jsonl) <(step_losses resumed_gpu.jsonl) > both
    [ "$(wc -l < both)" -ge 1 ]
    python3 -c 'import sys
for l in open("both"):
    c, g = map(float, l.split())
    assert abs(c - g) <= 1e-4 * abs(c), (c, g)'
}

@test "what the GPU has no kernels for is refused, naming the layer, never run elsewhere" {
    cp "$REPO/cfg/digits.data" . && sed -i "s#\.\./data#$REPO/data#" digits.data
    run "$GPU_CDL" train mlp.cfg --data digits.data --epochs 1 --gpu 0 --precision bf16
    echo "$output"
    [ "$status" -eq 2 ]
    [[ "$output" == *"layer 0 [connected] with bf16 has no GPU implementation"* ]]
}
