#!/usr/bin/env bats
# 16-bit activations on the GPU under bf16 and fp16 (docs/gpu.md, core/net_storage.h), run on the
# CUDA simulator (./cdl-gpusim, make GPU=sim; skipped where the CUDA toolkit is not): whole
# training runs of convolution nets and transformers against the CPU's rounding reference in the
# same precision, fp16's loss scaling with gradients stored in 16 bits, and decoding from 16-bit
# key/value caches.
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

# The losses of three --log files, GPU, CPU and float32 (the steps', then each epoch's validation
# loss): three of each, the GPU's within SAME of the CPU's and within TO_FP32 of float32's,
# relative.
losses_close() {
    python3 -c 'import json,sys
def losses(f):
    r = [json.loads(l) for l in open(f)]
    return [x["loss"] for x in r if x["type"] == "step"] + [x["valid_loss"] for x in r if x["type"] == "epoch" and "valid_loss" in x]
gpu, cpu, fp32 = losses(sys.argv[1]), losses(sys.argv[2]), losses(sys.argv[3])
same, to_fp32 = float(sys.argv[4]), float(sys.argv[5])
assert len(gpu) == len(cpu) == len(fp32) == 3, (gpu, cpu, fp32)
for g, c, f in zip(gpu, cpu, fp32):
    assert abs(g - c) <= same * abs(c), (gpu, cpu)
    assert abs(g - f) <= to_fp32 * abs(f), (gpu, fp32)' "$@"
}

# info and check figure the slab the GPU's plan allocates: digits.cfg at batch 32 with
# memory_plan=0 (every buffer its own, 64-byte aligned: the layers' element counts times 32 are
# multiples of 32) keeps every layer's output but the last (the softmax, the net's output) in 16
# bits under bf16 and fp16, and in training its gradient too: 2 bytes an element less than
# float32's, counted here from info's output shapes. The CPU stores float32: a GPU build without
# --gpu figures the plain build's bytes.
@test "info and check --gpu figure the 16-bit slots the GPU's plan allocates in bf16 and fp16" {
    local set=(--set net.batch=32 --set net.subdivisions=1 --set net.memory_plan=0)
    "$GPU_CDL" info "$REPO/cfg/digits.cfg" "${set[@]}" --gpu 0 --json > fp32.json
    local halves
    halves=$(jq '[.layers[:-1][] | .output | .[0] * .[1] * .[2]] | add * 32 * 2' fp32.json)
    [ "$halves" -eq 115328 ] # (1024 + 256 + 512 + 10) x 32 elements, 2 bytes each
    "$GPU_CDL" check "$REPO/cfg/digits.cfg" "${set[@]}" --data digits.data --gpu 0 --json \
        > fp32_check.json
    for p in bf16 fp16; do
        "$GPU_CDL" info "$REPO/cfg/digits.cfg" "${set[@]}" --gpu 0 --precision $p --json > $p.json
        [ $(($(jq .inference_activation_bytes fp32.json) - $(jq .inference_activation_bytes $p.json))) -eq "$halves" ]
        [ $(($(jq .train_activation_bytes fp32.json) - $(jq .train_activation_bytes $p.json))) -eq $((2 * halves)) ]
        # check's activations hold the slab, the scratch (larger with rounded operands), the input
        # and the labels
        "$GPU_CDL" check "$REPO/cfg/digits.cfg" "${set[@]}" --data digits.data --gpu 0 \
            --precision $p --json > ${p}_check.json
        local slab='.memory_bytes.activations - .memory_bytes.scratch'
        [ $(($(jq "$slab" fp32_check.json) - $(jq "$slab" ${p}_check.json))) -eq $((2 * halves)) ]
    done
    "$GPU_CDL" info "$REPO/cfg/digits.cfg" "${set[@]}" --precision bf16 --json > gpu_build_cpu.json
    "$CDL" info "$REPO/cfg/digits.cfg" "${set[@]}" --precision bf16 --json > cpu.json
    diff <(jq -c 'del(.layers)' gpu_build_cpu.json) <(jq -c 'del(.layers)' cpu.json)
}

# gpt_tiny.cfg at batch 4 with memory_plan=0: besides every layer's output but the last (and in
# training its gradient) in 16 bits, each of the 4 [attention]s keeps qkv [4][128][384], the heads
# [4][128][128] and P [4][4][128][128] in 16 bits, 2 bytes an element less; in inference its
# float32 scores, work of P's size, take what P saves.
@test "info --gpu figures gpt_tiny's 16-bit attention state in bf16 and fp16" {
    local set=(--set net.batch=4 --set net.subdivisions=1 --set net.memory_plan=0)
    "$GPU_CDL" info "$REPO/cfg/gpt_tiny.cfg" "${set[@]}" --gpu 0 --json > fp32.json
    local halves attention
    halves=$(jq '[.layers[:-1][] | .output | .[0] * .[1] * .[2]] | add * 4 * 2' fp32.json)
    attention=$((4 * (4 * 128 * 384 + 4 * 128 * 128 + 4 * 4 * 128 * 128) * 2))
    [ "$attention" -eq 4194304 ]
    for p in bf16 fp16; do
        "$GPU_CDL" info "$REPO/cfg/gpt_tiny.cfg" "${set[@]}" --gpu 0 --precision $p --json > $p.json
        [ $(($(jq .inference_activation_bytes fp32.json) - $(jq .inference_activation_bytes $p.json))) -eq "$halves" ]
        [ $(($(jq .train_activation_bytes fp32.json) - $(jq .train_activation_bytes $p.json))) -eq $((2 * halves + attention)) ]
    done
}

@test "digits.cfg trains in bf16 with 16-bit activations as the CPU's bf16: step 1, an epoch's accuracy" {
    # both convolutions, the max pool and [connected] (read by the softmax, which takes 16 bits
    # and computes the loss from them in float) keep their outputs in bf16: S = 4, 2 u S = 4 * 2^-7
    train_both "$REPO/cfg/digits.cfg" --epochs 1 --precision bf16
    first_losses_agree 0.03125
    python3 -c 'import sys
cpu, gpu = float(sys.argv[1]), float(sys.argv[2])
assert abs(cpu - gpu) <= 0.02, (cpu, gpu)' \
        "$(log_values cpu.jsonl epoch accuracy)" "$(log_values gpu.jsonl epoch accuracy)"
}

@test "a residual net's first steps in bf16 and fp16 on the GPU follow the CPU's" {
    write_residual_cfg res.cfg
    # every output but the softmax's (the net's output) in 16 bits: S = 11.
    # A second of training is a few steps on the simulator.
    for p in bf16 fp16; do
        train_both res.cfg --precision $p --epochs 1 --time-limit 1
        [ "$(log_values gpu.jsonl step loss | wc -l)" -ge 1 ]
        if [ $p = bf16 ]; then first_losses_agree 0.0859375; else first_losses_agree 0.0107421875; fi
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

# cfg/yolo_fashion.cfg (a yolov3-tiny: two [yolo] heads, the second after a [route], an
# [upsample] and a [route] of two layers) at batch 4 on fashion-det: every layer's output but the
# two heads' in 16 bits (the heads read 16 bits and keep their outputs float32 for their losses:
# test_net_storage), S = 18, so the first step's loss follows the CPU's bf16 within 2uS = 36 * 2^-8
# relative. The heads' ignore_thresh is set to 1 so that their matching decides from the anchors
# and truths alone (test_backend_ops' matching_reads_predictions), as the bound assumes.
@test "yolo_fashion.cfg's first step in bf16 with 16-bit tensors through upsample, route and yolo" {
    /usr/bin/python3 "$REPO/scripts/detection_data.py" fdet --train 8 --valid 4 --seed 3
    printf 'classes=10\ntrain=fdet/train.txt\nvalid=fdet/valid.txt\nnames=%s\n' \
        "$REPO/cfg/fashion.names" > fdet.data
    local opts=(--data fdet.data --set net.batch=4 --set 12.ignore_thresh=1
        --set 19.ignore_thresh=1 --epochs 1 --threads 1 --workers 0 --log-every 1
        --precision bf16)
    "$CDL" train "$REPO/cfg/yolo_fashion.cfg" "${opts[@]}" --log cpu.jsonl --out cpu.cdl
    run "$GPU_CDL" train "$REPO/cfg/yolo_fashion.cfg" "${opts[@]}" --log gpu.jsonl --out gpu.cdl \
        --gpu 0
    echo "$output"
    [ "$status" -eq 0 ]
    first_losses_agree 0.140625
}

# The tiny transformer keeps every layer's output but the softmax's (the net's output) in 16 bits:
# the embedding, positions, layernorms, attention, shortcuts and linears, and its attention's qkv,
# P and heads (test_backend_ops counts them so), S = 14. Evaluation's loss follows the CPU's in
# bf16 within 2uS = 14 * 2^-7 relative. Greedy generation with the cache
# (forward_at) fills the 16-row window after the 7-character prompt; its probabilities are the
# net's output, within 2uS of the largest one (test_backend_ops' inference bound), so a token the
# GPU picks has, in the CPU's distribution for the same prefix, at least the largest probability
# less 4uS of it (2uS on each side of a tie). A flip at a near tie is allowed; nothing else is.
# (Texts are not compared whole: with 14 stored tensors the two part at near ties.)
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
assert abs(gpu["loss"] - cpu["loss"]) <= 14 * 2 ** -7 * cpu["loss"], (cpu, gpu)' "$cpu_eval" "$output"
    run "$GPU_CDL" predict tiny.cdl --prompt "the cat" --tokens 9 --temperature 0 --gpu 0 \
        --precision bf16
    echo "$output"
    [ "$status" -eq 0 ]
    [ "${#output}" -eq 16 ]
    gpu_text="$output"
    for i in $(seq 7 15); do
        probs=$("$CDL" predict tiny.cdl --prompt "${gpu_text:0:i}" --json --probs --precision bf16)
        next=$("$CDL" predict tiny.cdl --prompt "${gpu_text:0:i+1}" --json --probs --precision bf16)
        python3 -c 'import json,sys
p, chosen = json.loads(sys.argv[1])["probs"], json.loads(sys.argv[2])["ids"][-1]
assert p[chosen] >= (1 - 4 * 14 * 2 ** -8) * max(p), (sys.argv[3], chosen, p)' \
            "$probs" "$next" "$i"
    done
}

# cfg/gpt_tiny.cfg (4 blocks, width 128) at batch 4 and 16 tokens, two training steps and the
# validation pass: every layer's output but the softmax's in 16 bits and the 4 attentions' qkv, P
# and heads, S = 32 + 12 = 44. The step losses (the second after an update from the first's
# gradients) and the validation loss follow the CPU's in the same precision within 2uS (bf16
# 0.34375, fp16 0.04296875) and the CPU's float32 within that plus the products' rounding,
# 4u sqrt(P) over the P = 18 weight matrices (test_backend_ops' bound): bf16 0.410, fp16 0.0513.
# (On the simulator they agree within 6e-4: bf16 1.2e-4, 1.3e-4, 5.9e-4; fp16 4.5e-5 to 7e-5.)
@test "gpt_tiny trains in bf16 and fp16 with 16-bit activations close to the CPU's and to fp32" {
    write_text_data
    head -8 corpus.txt > small.txt
    printf 'type=text\ntrain=small.txt\nvalid_split=0.2\n' > small.data
    local size=(--set net.batch=4 --set net.seq=16 --set net.max_batches=2)
    "$CDL" train "$REPO/cfg/gpt_tiny.cfg" --data small.data "${size[@]}" --log-every 1 \
        --log fp32.jsonl --out fp32.cdl --threads 1
    for p in bf16 fp16; do
        "$CDL" train "$REPO/cfg/gpt_tiny.cfg" --data small.data "${size[@]}" --precision $p \
            --log-every 1 --log cpu_$p.jsonl --out cpu_$p.cdl --threads 1
        run "$GPU_CDL" train "$REPO/cfg/gpt_tiny.cfg" --data small.data "${size[@]}" \
            --precision $p --log-every 1 --log gpu_$p.jsonl --out gpu_$p.cdl --threads 1 --gpu 0
        echo "$output"
        [ "$status" -eq 0 ]
        if [ $p = bf16 ]; then bounds="0.34375 0.410"; else bounds="0.04296875 0.0513"; fi
        losses_close gpu_$p.jsonl cpu_$p.jsonl fp32.jsonl $bounds
    done
}

# cfg/translate.cfg (key-padded self-attention, cross-attention) in bf16 and fp16 on the GPU, 3
# steps of batch 4 on 12 toy pairs: each step's loss within 2 u S of the CPU's in the same
# precision (its S <= 41 layers stored in 16 bits and its 6 attentions' qkv, P and heads, S <= 59:
# test_backend_ops' term, 0.461 bf16, 0.0577 fp16)
# and, warmup=200 keeping the updates small, within the products' 4 u sqrt(P) of float32's besides
# (P = 23 weight matrices: 0.075 bf16, 0.0094 fp16).
@test "cfg/translate.cfg trains in bf16 and fp16 on the GPU close to the CPU's and to fp32" {
    translate_fp32_steps
    for p in bf16 fp16; do
        "$CDL" train "$REPO/cfg/translate.cfg" "${TRANSLATE_STEPS[@]}" --precision $p \
            --log cpu_$p.jsonl --out cpu_$p.cdl
        run "$GPU_CDL" train "$REPO/cfg/translate.cfg" "${TRANSLATE_STEPS[@]}" --precision $p \
            --log gpu_$p.jsonl --out gpu_$p.cdl --gpu 0
        echo "$output"
        [ "$status" -eq 0 ]
        if [ $p = bf16 ]; then bounds="0.461 0.075"; else bounds="0.0577 0.0094"; fi
        losses_close gpu_$p.jsonl cpu_$p.jsonl fp32.jsonl $bounds
    done
}

# cfg/reverse.cfg's cached decoder in bf16 and fp16: its attentions' key/value caches are 16-bit
# (q, k and v rounded as the whole forward rounds them, a row's weights rounded before they
# multiply v as the forward's P), and beam search moves those 16-bit rows between hypotheses. On
# the simulator a cached row is the uncached forward's row bit for bit (test_gpu_forward_at), so
# greedy and beam decoding give --no-cache's targets and log-probabilities.
@test "the GPU's 16-bit key/value caches decode as --no-cache in bf16 and fp16, greedy and beam" {
    train_reverse_early
    for p in bf16 fp16; do
        for how in "--batch 16" "--beam 3"; do
            "$GPU_CDL" predict early.cdl --sources new.src $how --json --gpu 0 --precision $p \
                > cached.json
            "$GPU_CDL" predict early.cdl --sources new.src $how --json --gpu 0 --precision $p \
                --no-cache > uncached.json
            /usr/bin/python3 - cached.json uncached.json <<'PY'
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
assert len(a) == len(b) == 12
for x, y in zip(a, b):
    assert x["target"] == y["target"] and x["ids"] == y["ids"], (x, y)
    assert abs(x["log_prob"] - y["log_prob"]) < 1e-5, (x, y)
PY
        done
    done
}
