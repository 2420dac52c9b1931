#!/usr/bin/env bats
# 16-bit activations on the GPU under bf16 and fp16 (docs/gpu.md, core/net_storage.h), run on the
# CUDA simulator (./cdl-gpusim, make GPU=sim; skipped where the CUDA toolkit is not): whole
# training runs of convolution nets against the CPU's rounding reference in the same precision,
# and fp16's loss scaling with gradients stored in 16 bits.
load helpers

GPU_CDL="${CDL_GPUSIM_BIN:-$REPO/cdl-gpusim}"

setup() {
    [ -x "$GPU_CDL" ] || skip "no GPU=sim build (needs the CUDA toolkit's headers)"
    WORK="$(mktemp -d)"
    cd "$WORK"
    cp "$REPO/cfg/digits.data" . && sed -i "s#\.\./data#$REPO/data#" digits.data
}

# The value of key in the records of type in a --log file, one per line.
log_values() {
    jq -r "select(.type == \"$2\") | .$3" "$1"
}

# Trains CFG with the options given on the CPU (cpu.jsonl) and the GPU (gpu.jsonl).
train_both() {
    local cfg="$1"
    shift
    rm -f cpu.jsonl gpu.jsonl # --log appends
    "$CDL" train "$cfg" --data digits.data --log-every 1 --log cpu.jsonl --out cpu.cdl \
        --threads 1 "$@"
    run "$GPU_CDL" train "$cfg" --data digits.data --log-every 1 --log gpu.jsonl --out gpu.cdl \
        --threads 1 --gpu 0 "$@"
    echo "$output"
    [ "$status" -eq 0 ]
}

# The first step's losses of cpu.jsonl and gpu.jsonl agree within 2 u S relative: the GPU stores
# S layer outputs in 16 bits (u = 2^-8 bf16, 2^-11 fp16), each moving the values after it by at
# most u of their size, and a product that rounds a stored value again by at most another u
# (test_backend_ops' 16-bit term). The products' rounding is the CPU's.
first_losses_agree() {
    python3 -c 'import sys
cpu, gpu, bound = float(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
assert abs(cpu - gpu) <= bound * abs(cpu), (cpu, gpu, bound)' \
        "$(log_values cpu.jsonl step loss | head -1)" "$(log_values gpu.jsonl step loss | head -1)" "$1"
}

@test "digits.cfg trains in bf16 with 16-bit activations as the CPU's bf16: step 1, an epoch's accuracy" {
    # both convolutions and the max pool keep their outputs in bf16 (their readers take them);
    # [connected]'s goes to the loss, which does not: S = 3, 2 u S = 3 * 2^-7
    train_both "$REPO/cfg/digits.cfg" --epochs 1 --precision bf16
    first_losses_agree 0.0234375
    python3 -c 'import sys
cpu, gpu = float(sys.argv[1]), float(sys.argv[2])
assert abs(cpu - gpu) <= 0.02, (cpu, gpu)' \
        "$(log_values cpu.jsonl epoch accuracy)" "$(log_values gpu.jsonl epoch accuracy)"
}

@test "a residual net's first steps in bf16 and fp16 on the GPU follow the CPU's" {
    write_cfg res.cfg <<'CFG'
[net]
batch=16
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
activation=relu
[convolutional]
filters=8
size=3
pad=1
batch_normalize=1
activation=relu
[convolutional]
filters=8
size=3
pad=1
batch_normalize=1
activation=linear
[shortcut]
from=-3
activation=relu
[convolutional]
filters=16
size=3
stride=2
pad=1
batch_normalize=1
activation=relu
[convolutional]
filters=16
size=3
pad=1
batch_normalize=1
activation=linear
[route]
layers=-3
[convolutional]
filters=16
size=1
stride=2
batch_normalize=1
activation=linear
[shortcut]
from=-3
activation=relu
[avgpool]
[connected]
output=10
activation=linear
[softmax]
CFG
    # every output but [connected]'s (read by the loss, which takes float32) in 16 bits: S = 10.
    # A second of training is a few steps on the simulator.
    for p in bf16 fp16; do
        train_both res.cfg --precision $p --epochs 1 --time-limit 1
        [ "$(log_values gpu.jsonl step loss | wc -l)" -ge 1 ]
        if [ $p = bf16 ]; then first_losses_agree 0.078125; else first_losses_agree 0.009765625; fi
    done
}

# fp16's loss scale of 2^16 on a net whose layer scale of 300 before the softmax makes the
# gradients overflow: the convolutions' output gradients, stored in fp16, become infinite, the
# step is skipped and the scale halves, until the gradients fit; training then goes on.
@test "fp16 with 16-bit activations skips the steps whose stored gradients overflow" {
    sed '/^\[softmax\]/i [layer_scale]\ninit=300' "$REPO/cfg/digits.cfg" > big.cfg
    run "$GPU_CDL" train big.cfg --data digits.data --epochs 1 --log-every 1 --log gpu.jsonl \
        --out gpu.cdl --threads 1 --gpu 0 --precision fp16 --set net.learning_rate=0.001
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(jq -s 'map(select(.type == "step")) | last | .skipped_steps' gpu.jsonl)" -ge 1 ]
    [ "$(jq -s 'map(select(.type == "step")) | last | .loss_scale' gpu.jsonl)" -lt 65536 ]
    log_values gpu.jsonl step loss | python3 -c 'import math,sys
assert all(math.isfinite(float(l)) for l in sys.stdin)'
}

# A transformer block's MLP keeps both [linear]s' outputs in 16 bits (the next [linear] and the
# [shortcut] read them): S = 2. The cached step (forward_at) writes its rows there as the whole
# forward does. Evaluation's loss follows the CPU's in bf16 within 2uS = 2^-6 relative, and greedy
# generation with the cache gives the CPU's text. (Without the cache the rows' products sum in
# another order, and a sum that rounds to the neighbouring bf16 value can tip a near tie: its text
# is not compared.)
@test "a text model evaluates and generates in bf16 with 16-bit activations as the CPU" {
    write_text_data
    write_tiny_gpt 16 16 64 4
    "$CDL" train tiny.cfg --data corpus.data --out tiny.cdl --threads 1 2>/dev/null
    cpu_eval=$("$CDL" eval tiny.cdl --data corpus.data --json --precision bf16)
    run "$GPU_CDL" eval tiny.cdl --data corpus.data --json --gpu 0 --precision bf16
    echo "$output"
    [ "$status" -eq 0 ]
    python3 -c 'import json,sys
cpu, gpu = json.loads(sys.argv[1]), json.loads(sys.argv[2])
assert cpu["tokens"] == gpu["tokens"]
assert abs(gpu["loss"] - cpu["loss"]) <= 2 ** -6 * cpu["loss"], (cpu, gpu)' "$cpu_eval" "$output"
    cpu=$("$CDL" predict tiny.cdl --prompt "the cat" --tokens 60 --temperature 0 --precision bf16)
    [ "${#cpu}" -eq 67 ]
    run "$GPU_CDL" predict tiny.cdl --prompt "the cat" --tokens 60 --temperature 0 --gpu 0 \
        --precision bf16
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$output" = "$cpu" ]
}
