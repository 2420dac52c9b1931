#!/usr/bin/env bats
# The GPU backend, run on the CUDA simulator (./cdl-gpusim, make GPU=sim; skipped where the CUDA
# toolkit is not): training as on the CPU, step by step within float32's round-off; checkpoints
# that move between the two; eval, predict, generation, bench and profile with --gpu giving the
# CPU's results, in float32 and in bf16, tf32 and fp16; a sequence-to-sequence net trained and
# decoded (cached, greedy and beam) as on the CPU; int8 refused.
load helpers

GPU_CDL="${CDL_GPUSIM_BIN:-$REPO/cdl-gpusim}"

setup() {
    [ -x "$GPU_CDL" ] || skip "no GPU=sim build (needs the CUDA toolkit's headers)"
    WORK="$(mktemp -d)"
    cd "$WORK"
    write_digits_mlp
}

# The step losses of a --log file, one per line.
step_losses() {
    python3 -c 'import json,sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    if r["type"] == "step": print(r["loss"])' "$1"
}

# The step losses of two --log files ($1, $2): $3 of each, agreeing within LOSS_BOUND (default
# 1e-4) relative.
losses_agree() {
    paste <(step_losses "$1") <(step_losses "$2") > both
    [ "$(wc -l < both)" -eq "$3" ]
    python3 -c 'import sys
for l in open("both"):
    c, g = map(float, l.split())
    assert abs(c - g) <= float(sys.argv[1]) * abs(c), (c, g)' "${LOSS_BOUND:-1e-4}"
}

# cpu.jsonl's and gpu.jsonl's step losses: n of each, agreeing within LOSS_BOUND.
cpu_gpu_losses_agree() {
    losses_agree cpu.jsonl gpu.jsonl "$1"
}

# Trains mlp.cfg one epoch on the CPU (cpu.cdl, cpu.jsonl) and on the GPU (gpu.cdl, gpu.jsonl)
# with the extra options given, and compares their 44 step losses: float32 round-off of the
# products and of libdevice's exp grows over 44 steps of SGD, so the curves agree to 1e-4
# relative, far below a step's change. In bf16, tf32 and fp16 both round the same float32
# operands to nearest even (test_backend_ops): they differ as in float32, but for the GPU's two
# [connected] outputs stored in bf16 or fp16 (docs/gpu.md): LOSS_BOUND (default 1e-4) is then
# gpu_storage.bats' 2uS with S = 2, which the 44 steps stay within (about 1e-4 here).
same_losses_as_cpu() {
    rm -f cpu.jsonl gpu.jsonl # --log appends
    "$CDL" train mlp.cfg --data digits.data --epochs 1 --log-every 1 --log cpu.jsonl --out cpu.cdl \
        --threads 1 "$@"
    run "$GPU_CDL" train mlp.cfg --data digits.data --epochs 1 --log-every 1 --log gpu.jsonl \
        --out gpu.cdl --threads 1 --gpu 0 "$@"
    echo "$output"
    [ "$status" -eq 0 ]
    cpu_gpu_losses_agree 44
}

@test "a net trains on the GPU with the CPU's losses" {
    same_losses_as_cpu
    # AdamW's decoupled decay on the weights but not the biases: one update over the slab's runs
    same_losses_as_cpu --set net.optimizer=adamw --set net.learning_rate=0.003 \
        --set net.decay=0.01
}

# The step replayed as a CUDA graph must take each step's lr and Adam's bias corrections (a
# warmup and a cosine schedule change them every step) and dropout's draw id from the device,
# compute the clipping coefficient there (clip_grad_norm=0.05 is below the gradient's norm) and
# leave the loss there for the trainer: a graph holding the first step's values, or a step that
# also ran while it was being captured, would change the curve.
@test "--cuda-graph replays the step with the eager run's losses and weights, bit for bit" {
    sed '/^\[softmax\]/i [dropout]\nprobability=0.2' mlp.cfg > dropout.cfg
    # random crops (their windows keyed on the device) and the weights' EMA
    sed '0,/^\[connected\]/s//[crop]\ncrop_height=6\ncrop_width=6\nflip=1\n[connected]/' mlp.cfg > crop.cfg
    local adamw=(--set net.optimizer=adamw --set net.learning_rate=0.003 --set net.policy=cosine
        --set net.warmup=5 --set net.decay=0.01 --set net.clip_grad_norm=0.05)
    for run in eager graph; do
        local graph=()
        [ "$run" = graph ] && graph=(--cuda-graph)
        local common=(--data digits.data --epochs 2 --log-every 1 --threads 1 --gpu 0 "${graph[@]}")
        "$GPU_CDL" train mlp.cfg "${common[@]}" --log sgd_$run.jsonl --out sgd_$run.cdl
        "$GPU_CDL" train dropout.cfg "${adamw[@]}" "${common[@]}" --log adamw_$run.jsonl \
            --out adamw_$run.cdl
        "$GPU_CDL" train crop.cfg --set net.ema=0.9 "${common[@]}" --log crop_$run.jsonl \
            --out crop_$run.cdl
    done
    # the simulator runs the same kernels in the same order either way: equal, not close
    [ "$(step_losses sgd_eager.jsonl | wc -l)" -eq 88 ]
    diff <(step_losses sgd_eager.jsonl) <(step_losses sgd_graph.jsonl)
    diff <(step_losses adamw_eager.jsonl) <(step_losses adamw_graph.jsonl)
    diff <(step_losses crop_eager.jsonl) <(step_losses crop_graph.jsonl)
    cmp sgd_eager.cdl sgd_graph.cdl
    cmp adamw_eager.cdl adamw_graph.cdl
    cmp crop_eager.cdl crop_graph.cdl
}

@test "--cuda-graph replays a transformer's step, attention dropout keyed on the device, bit for bit" {
    write_text_data
    write_tiny_gpt 16 16 64 1
    sed 's/^heads=2$/heads=2\ndropout=0.2/' tiny.cfg > drop.cfg
    grep -q "dropout=0.2" drop.cfg
    for run in eager graph; do
        local graph=()
        [ "$run" = graph ] && graph=(--cuda-graph)
        "$GPU_CDL" train drop.cfg --data corpus.data --log-every 1 --threads 1 --gpu 0 \
            "${graph[@]}" --log $run.jsonl --out $run.cdl
    done
    [ "$(step_losses eager.jsonl | wc -l)" -ge 4 ]
    diff <(step_losses eager.jsonl) <(step_losses graph.jsonl)
    cmp eager.cdl graph.cdl
}

# A step of two passes is two graphs, each replayed after its pass's batch is uploaded, with its
# own draw id (dropout); fp16's unscaling decides on the device whether the update runs: a layer
# scale of 300 before the softmax overflows fp16's gradient operands at the scale of 2^16, so
# steps are skipped and the scale halves (the graphs captured again with it).
@test "--cuda-graph replays steps of several passes and fp16's skipped steps, bit for bit" {
    sed '/^\[softmax\]/i [dropout]\nprobability=0.2\n[layer_scale]\ninit=300' mlp.cfg > big.cfg
    for run in eager graph; do
        local graph=()
        [ "$run" = graph ] && graph=(--cuda-graph)
        "$GPU_CDL" train big.cfg --data digits.data --epochs 2 --log-every 1 --threads 1 --gpu 0 \
            --set net.subdivisions=2 --set net.learning_rate=0.001 --precision fp16 \
            "${graph[@]}" --log $run.jsonl --out $run.cdl
    done
    [ "$(step_losses eager.jsonl | wc -l)" -eq 88 ]
    diff <(step_losses eager.jsonl) <(step_losses graph.jsonl)
    diff <(jq -c '[.loss_scale, .skipped_steps]' eager.jsonl) \
        <(jq -c '[.loss_scale, .skipped_steps]' graph.jsonl)
    [ "$(jq -s 'map(select(.type == "step")) | last | .skipped_steps' graph.jsonl)" -ge 1 ]
    cmp eager.cdl graph.cdl
}

# A profiled step under --cuda-graph replays its graphs as the others do: each pass's replay is one
# "graph" event of the trace (the device's clock before its launch and after it; a graph's layers
# cannot be timed apart), the run's first step, eager, has its layers' events. Profiling changes
# nothing of the run. [cost] after [softmax] passes the probabilities through: the net captures.
@test "--cuda-graph with --profile-steps traces each pass's replay as one event, and [cost] captures" {
    sed '$a [cost]' mlp.cfg > cost.cfg
    local common=(--data digits.data --epochs 2 --log-every 1 --threads 1 --gpu 0
        --set net.subdivisions=2)
    "$GPU_CDL" train cost.cfg "${common[@]}" --log eager.jsonl --out eager.cdl
    run "$GPU_CDL" train cost.cfg "${common[@]}" --cuda-graph --profile-steps 1-3,44-45 \
        --log graph.jsonl --out graph.cdl
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == *"cdl: wrote graph.trace.json"* ]]
    diff <(step_losses eager.jsonl) <(step_losses graph.jsonl)
    cmp eager.cdl graph.cdl
    /usr/bin/python3 - <<'PY'
import json
events = json.load(open("graph.trace.json"))["traceEvents"]
steps = {e["args"]["step"]: e for e in events if e["cat"] == "step"}
assert sorted(steps) == [1, 2, 3, 44, 45], sorted(steps)
for s in steps:
    cats = sorted(e["cat"] for e in events if e["args"]["step"] == s and e["cat"] != "step")
    if s == 1:  # eager: every layer's forward and backward, two passes
        assert set(cats) == {"forward", "backward"} and len(cats) == 2 * 2 * 4, cats
        continue
    graphs = [e for e in events if e["args"]["step"] == s and e["cat"] == "graph"]
    assert cats == ["graph", "graph"], (s, cats)
    assert [g["name"] for g in graphs] == ["graph replay, pass 1", "graph replay, pass 2"]
    st = steps[s]
    for g in graphs:
        assert g["dur"] >= 0 and "layer" not in g["args"]
        assert st["ts"] <= g["ts"] and g["ts"] + g["dur"] <= st["ts"] + st["dur"] + 1, (st, g)
PY
}

@test "a checkpoint trained on the GPU evaluates on the CPU as the GPU did, and resumes on either" {
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
    assert abs(c - g) <= float(sys.argv[1]) * abs(c), (c, g)' "${LOSS_BOUND:-1e-4}"
}

@test "bf16, tf32 and fp16 train on the GPU with the CPU's losses in the same precision" {
    LOSS_BOUND=0.015625 same_losses_as_cpu --precision bf16 # 2uS = 2 * 2^-8 * 2
    same_losses_as_cpu --precision tf32
    LOSS_BOUND=0.001953125 same_losses_as_cpu --precision fp16 # 2 * 2^-11 * 2
    # fp16's loss scale is logged, and the run's checkpoint resumes with it on the CPU
    grep -q '"loss_scale":65536' gpu.jsonl
    "$CDL" train --resume gpu.cdl --epochs 2 --threads 1 --log-every 1 2>&1 | grep -q "loss scale 65536"
}

# A digits checkpoint of mlp.cfg trained on the CPU, at cpu.cdl.
train_cpu_checkpoint() {
    "$CDL" train mlp.cfg --data digits.data --epochs 2 --out cpu.cdl --threads 1 2>/dev/null
}

@test "eval --gpu of a checkpoint gives the CPU's accuracy and loss" {
    train_cpu_checkpoint
    cpu=$("$GPU_CDL" eval cpu.cdl --data digits.data --json --threads 1)
    run "$GPU_CDL" eval cpu.cdl --data digits.data --json --threads 1 --gpu 0
    echo "$output"
    [ "$status" -eq 0 ]
    # the same weights: at most a sample whose two best classes round apart, and the mean loss
    # within float32's round-off of the products and of exp
    python3 -c 'import json,sys
cpu, gpu = json.loads(sys.argv[1]), json.loads(sys.argv[2])
assert cpu["samples"] == gpu["samples"] == 359, (cpu, gpu)
assert abs(gpu["accuracy"] - cpu["accuracy"]) <= 1.0 / cpu["samples"], (gpu, cpu)
assert abs(gpu["loss"] - cpu["loss"]) <= 1e-5 * cpu["loss"], (gpu, cpu)' "$cpu" "$output"
}

@test "predict --gpu of a checkpoint trained on the GPU picks the CPU's classes" {
    "$GPU_CDL" train mlp.cfg --data digits.data --epochs 2 --out gpu.cdl --threads 1 --gpu 0 \
        2>/dev/null
    for row in 1790 1791 1792 1793 1794 1795; do gray_png "d$row.png" digit "$row" > /dev/null; done
    # on the CPU of a plain build, and on the GPU: the top class of every image, with
    # probabilities within float32's round-off
    "$CDL" predict gpu.cdl d*.png --top 1 --json > cpu.json
    run "$GPU_CDL" predict gpu.cdl d*.png --top 1 --json --gpu 0
    echo "$output"
    [ "$status" -eq 0 ]
    python3 -c 'import json,sys
cpu, gpu = json.load(open("cpu.json")), json.loads(sys.argv[1])
assert len(cpu) == len(gpu) == 6
for c, g in zip(cpu, gpu):
    assert c["file"] == g["file"] and c["top"][0]["index"] == g["top"][0]["index"], (c, g)
    assert abs(c["top"][0]["probability"] - g["top"][0]["probability"]) <= 1e-5, (c, g)' "$output"
}

@test "a text model generates the CPU's greedy text on the GPU, with and without the cache" {
    write_text_data
    write_tiny_gpt 16 16 64 1
    "$CDL" train tiny.cfg --data corpus.data --out tiny.cdl --threads 1 2>/dev/null
    cpu=$("$CDL" predict tiny.cdl --prompt "the cat" --tokens 60 --temperature 0)
    [ "${#cpu}" -eq 67 ]
    # greedy: each token is the arg-max of a distribution the GPU computes within round-off; a
    # trained model's best two tokens are far apart, so the texts are the same
    run "$GPU_CDL" predict tiny.cdl --prompt "the cat" --tokens 60 --temperature 0 --gpu 0
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$output" = "$cpu" ]
    run "$GPU_CDL" predict tiny.cdl --prompt "the cat" --tokens 60 --temperature 0 --gpu 0 \
        --no-cache
    [ "$output" = "$cpu" ]
    # and its validation text evaluates as on the CPU
    cpu_eval=$("$CDL" eval tiny.cdl --data corpus.data --json)
    run "$GPU_CDL" eval tiny.cdl --data corpus.data --json --gpu 0
    [ "$status" -eq 0 ]
    python3 -c 'import json,sys
cpu, gpu = json.loads(sys.argv[1]), json.loads(sys.argv[2])
assert cpu["tokens"] == gpu["tokens"] and abs(cpu["accuracy"] - gpu["accuracy"]) <= 1 / cpu["tokens"]
assert abs(gpu["loss"] - cpu["loss"]) <= 1e-5 * cpu["loss"], (cpu, gpu)' "$cpu_eval" "$output"
}

@test "bench --gpu times training steps and forwards on the GPU" {
    run "$GPU_CDL" bench mlp.cfg --steps 2 --warmup 1 --gpu 0 --json
    echo "$output"
    [ "$status" -eq 0 ]
    python3 -c 'import json,sys
r = json.loads(sys.argv[1])
assert r["batch"] == 32 and r["images_per_s"] > 0 and r["ms_per_step"] > 0, r' "$output"
    run "$GPU_CDL" bench mlp.cfg --steps 2 --inference --gpu 0
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == "mlp.cfg: batch 32, threads "*" images/s ("*" ms/step)"* ]]
}

# The steps bench times as CUDA graphs are the eager ones: after the same steps on the same
# random batch, the last loss is the eager run's, bit for bit.
@test "bench --gpu --cuda-graph times replayed steps with the eager steps' losses" {
    eager=$("$GPU_CDL" bench mlp.cfg --steps 3 --warmup 2 --gpu 0 --json)
    run "$GPU_CDL" bench mlp.cfg --steps 3 --warmup 2 --gpu 0 --json --cuda-graph
    echo "$eager"
    echo "$output"
    [ "$status" -eq 0 ]
    python3 -c 'import json,sys
eager, graph = json.loads(sys.argv[1]), json.loads(sys.argv[2])
assert graph["cuda_graph"] is True and eager["cuda_graph"] is False, (eager, graph)
assert graph["loss"] == eager["loss"] and graph["images_per_s"] > 0, (eager, graph)' "$eager" "$output"
    run "$GPU_CDL" bench mlp.cfg --steps 1 --gpu 0 --cuda-graph --inference
    [ "$status" -eq 2 ]
    [ "$output" = "cdl: --cuda-graph captures a GPU's training steps: it needs --gpu N and no --inference" ]
}

@test "profile --gpu times every layer with CUDA events, in the table, the JSON and the trace" {
    run "$GPU_CDL" profile mlp.cfg --iters 2 --gpu 0 --trace trace.json
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == *"on the GPU: each layer timed by CUDA events on the net's stream"* ]]
    [[ "$output" =~ "   0  connected      32x1x1 " ]]
    [[ "$output" =~ "   1  connected      10x1x1 " ]]
    [[ "$output" =~ "   2  softmax        10x1x1 " ]]
    # every layer's forward and backward of both timed steps, and the steps
    python3 -c 'import json
ev = json.load(open("trace.json"))
ev = ev["traceEvents"] if isinstance(ev, dict) else ev
named = [e for e in ev if e.get("ph") == "X"]
assert sum(e.get("cat") == "forward" for e in named) == 6, named
assert sum(e.get("cat") == "backward" for e in named) == 6, named
assert all(e["dur"] >= 0 for e in named), named'
    run "$GPU_CDL" profile mlp.cfg --iters 2 --gpu 0 --json
    [ "$status" -eq 0 ]
    python3 -c 'import json,sys
r = json.loads(sys.argv[1])
assert r["device"] == "gpu" and r["clock"] == "cuda_events", r
assert [l["type"] for l in r["layers"]] == ["connected", "connected", "softmax"], r
assert all(l["forward_ms"]["mean"] > 0 and l["backward_ms"]["mean"] > 0 for l in r["layers"]), r' "$output"
}

@test "train --profile-steps on the GPU traces the chosen steps on the device's clock" {
    run "$GPU_CDL" train mlp.cfg --data digits.data --epochs 1 --threads 1 --gpu 0 \
        --profile-steps 2-3 --out p.cdl
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == *"wrote p.trace.json (14 events)"* ]]
    # 2 steps: each of the 3 layers' forward and backward, and the step, which holds them
    python3 -c 'import json
ev = json.load(open("p.trace.json"))["traceEvents"]
steps = [e for e in ev if e["name"] == "step"]
assert len(steps) == 2, steps
for s in steps:
    inner = [e for e in ev if e["name"] != "step" and s["ts"] <= e["ts"] <= s["ts"] + s["dur"]]
    assert len(inner) == 6, inner'
}

@test "a checkpoint profiles on the GPU with its optimizer state" {
    train_cpu_checkpoint
    run "$GPU_CDL" profile cpu.cdl --iters 1 --gpu 0
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" =~ "   2  softmax        10x1x1 " ]]
}

@test "int8 runs on the CPU only: --gpu on an int8 model and quantize --gpu are refused" {
    train_cpu_checkpoint
    run "$GPU_CDL" quantize cpu.cdl -o q.cdl --gpu 0
    [ "$status" -eq 2 ]
    [ "$output" = "cdl: quantize --gpu: int8 runs on the CPU only (quantize and run int8 models without --gpu)" ]
    "$GPU_CDL" quantize cpu.cdl -o q.cdl > /dev/null
    gray_png x.png 8 "16 * x"
    run "$GPU_CDL" predict q.cdl x.png --gpu 0
    echo "$output"
    [ "$status" -eq 2 ]
    [ "${#lines[@]}" -eq 1 ]
    [[ "$output" == "cdl: q.cdl: int8 runs on the CPU only"* ]]
    run "$GPU_CDL" eval q.cdl --data digits.data --gpu 0
    [ "$status" -eq 2 ]
    [[ "$output" == "cdl: q.cdl: int8 runs on the CPU only"* ]]
}

@test "--gpu names a device the machine has" {
    run "$GPU_CDL" bench mlp.cfg --steps 1 --gpu 3
    echo "$output"
    [ "$status" -eq 2 ]
    [ "$output" = "cdl: --gpu 3: this machine has 1 CUDA device (0 to 0)" ]
    # a list gives each rank under mpirun its device (dist_gpu.bats): one process takes one
    run "$GPU_CDL" train mlp.cfg --data digits.data --gpu 0,1
    [ "$status" -eq 2 ]
    [ "$output" = "cdl: --gpu 0,1 names a device for each rank: start the run with mpirun -np 2 (a make MPI=1 build), or give one device" ]
    run "$GPU_CDL" train mlp.cfg --data digits.data --gpu 0,
    [ "$status" -eq 2 ]
    [[ "$output" == "cdl: bad value '0,' for --gpu: expected a device number"* ]]
}

@test "a run that diverges on the GPU names the first layer whose output is not finite" {
    run "$GPU_CDL" train mlp.cfg --data digits.data --set net.learning_rate=1e6 --out new.cdl \
        --threads 1 --log-every 1000 --gpu 0
    echo "$output"
    [ "$status" -eq 1 ]
    [[ "${lines[-1]}" =~ the\ loss\ is\ not\ finite\;\ layer\ [0-9]+\ \[[a-z]+\]\ produced\ the\ first\ non-finite\ output ]]
    [ ! -e new.cdl ]
}

@test "cfg/reverse.cfg trains on the GPU with the CPU's losses and decodes the CPU's targets" {
    "$REPO/scripts/toy-pairs.sh" reverse 200 1 pairs.tsv >/dev/null
    printf 'type=pairs\ntrain=pairs.tsv\n' > pairs.data
    "$CDL" train "$REPO/cfg/reverse.cfg" --data pairs.data --epochs 2 --log-every 1 \
        --log cpu.jsonl --out cpu.cdl --threads 1
    run "$GPU_CDL" train "$REPO/cfg/reverse.cfg" --data pairs.data --epochs 2 --log-every 1 \
        --log gpu.jsonl --out gpu.cdl --threads 1 --gpu 0
    echo "$output"
    [ "$status" -eq 0 ]
    # the source and target embeddings (part=, one table through share=0 and the tied head)
    cpu_gpu_losses_agree 12
    # greedy decoding, cached on the GPU as on the CPU and uncached (--no-cache): the same targets
    cut -f1 pairs.tsv | head -8 > few.src
    "$CDL" predict cpu.cdl --sources few.src > cpu.txt
    [ "$(wc -l < cpu.txt)" -eq 8 ]
    run "$GPU_CDL" predict gpu.cdl --sources few.src --gpu 0
    [ "$status" -eq 0 ]
    printf '%s\n' "$output" | diff - cpu.txt
    run "$GPU_CDL" predict gpu.cdl --sources few.src --gpu 0 --no-cache
    [ "$status" -eq 0 ]
    printf '%s\n' "$output" | diff - cpu.txt
}

# cfg/translate.cfg has no dropout: with dropout=0.1 set in its encoder's first self-attention
# (key_padding=source: the GPU's cross-attention kernels) and its decoder's two cross-attentions
# (layers 2, 22 and 32), 3 steps of batch 4 on 12 toy pairs on the GPU have the CPU's losses (its
# masks, drawn on the device at the CPU's indices), and the first differs from dropout=0's.
@test "cfg/translate.cfg with cross-attention dropout trains on the GPU with the CPU's losses" {
    "$REPO/scripts/toy-pairs.sh" reverse 12 1 pairs.tsv >/dev/null
    printf 'type=pairs\ntrain=pairs.tsv\n' > pairs.data
    local steps=(--data pairs.data --set net.batch=4 --epochs 1 --log-every 1 --threads 1)
    local drop=(--set 2.dropout=0.1 --set 22.dropout=0.1 --set 32.dropout=0.1)
    "$CDL" train "$REPO/cfg/translate.cfg" "${steps[@]}" --log plain.jsonl --out plain.cdl
    "$CDL" train "$REPO/cfg/translate.cfg" "${steps[@]}" "${drop[@]}" --log cpu.jsonl \
        --out cpu.cdl
    run "$GPU_CDL" train "$REPO/cfg/translate.cfg" "${steps[@]}" "${drop[@]}" --log gpu.jsonl \
        --out gpu.cdl --gpu 0
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(step_losses plain.jsonl | head -1)" != "$(step_losses cpu.jsonl | head -1)" ]
    cpu_gpu_losses_agree 3
}

# A graphed step of a sequence-to-sequence net runs its passes padded to the cfg's rows (source=
# 128, seq= 129), an eager one cut to the batch's: attention dropout draws weight (pair, i, j) at
# the cfg's strides, so both draw the same masks. With dropout=0.1 in an encoder self-attention
# (layer 2), a decoder causal self-attention (19) and both cross-attentions (22, 32), 3 steps of
# batch 4 have the eager run's losses within 1e-5 relative: the padded rows change the order of
# some float32 sums (without dropout the losses differ in the 7th digit, 2 units of float32's
# 6e-8 over 3 Adam steps), while drawing the masks at the cut strides moved step 2's loss by 5e-3.
@test "cfg/translate.cfg with attention dropout: --cuda-graph's losses are the eager step's" {
    "$REPO/scripts/toy-pairs.sh" reverse 12 1 pairs.tsv >/dev/null
    printf 'type=pairs\ntrain=pairs.tsv\n' > pairs.data
    local drop=(--set 2.dropout=0.1 --set 19.dropout=0.1 --set 22.dropout=0.1
        --set 32.dropout=0.1)
    for run in eager graph; do
        local graph=()
        [ "$run" = graph ] && graph=(--cuda-graph)
        run "$GPU_CDL" train "$REPO/cfg/translate.cfg" --data pairs.data --set net.batch=4 \
            --epochs 1 --log-every 1 --threads 1 --gpu 0 "${drop[@]}" "${graph[@]}" \
            --log $run.jsonl --out $run.cdl
        echo "$output"
        [ "$status" -eq 0 ]
    done
    LOSS_BOUND=1e-5 losses_agree eager.jsonl graph.jsonl 3
}

# The same for [dropout] layers in the decoder, after its positional encoding (its input, before
# the first residual) and after its final norm (before the head), probability 0.1: value (sample,
# row t, column j) draws at the cfg's rows as the stride (layers/dropout.h dropout_sample_draws),
# so the eager step's passes cut to the batch's rows draw the graphed step's padded masks; 3 steps
# of batch 4 within the 1e-5 relative of the test above, and the CPU's (cut too) within 1e-4.
@test "translate.cfg with [dropout] layers in the decoder: --cuda-graph's losses are the eager step's and the CPU's" {
    "$REPO/scripts/toy-pairs.sh" reverse 12 1 pairs.tsv >/dev/null
    printf 'type=pairs\ntrain=pairs.tsv\n' > pairs.data
    python3 - "$REPO/cfg/translate.cfg" > drop.cfg <<'PY'
import sys
cfg = open(sys.argv[1]).read()
for after in ("# 18\n[positional]\n", "# 39: the decoder's final norm\n[layernorm]\n"):
    assert cfg.count(after) == 1, after
    cfg = cfg.replace(after, after + "\n[dropout]\nprobability=0.1\n")
print(cfg, end="")
PY
    for run in eager graph; do
        local graph=()
        [ "$run" = graph ] && graph=(--cuda-graph)
        run "$GPU_CDL" train drop.cfg --data pairs.data --set net.batch=4 --epochs 1 \
            --log-every 1 --threads 1 --gpu 0 "${graph[@]}" --log $run.jsonl --out $run.cdl
        echo "$output"
        [ "$status" -eq 0 ]
    done
    LOSS_BOUND=1e-5 losses_agree eager.jsonl graph.jsonl 3
    "$CDL" train drop.cfg --data pairs.data --set net.batch=4 --epochs 1 --log-every 1 \
        --threads 1 --log cpu.jsonl --out cpu.cdl
    losses_agree cpu.jsonl eager.jsonl 3
}

# A model trained on the CPU long enough that its targets differ word to word (and beam search's
# from greedy's on some), decoded on the GPU: the cached decoder (cross-attention's query row
# against the memory's keys and values, computed once per source; beam search reordering the
# caches with gather_samples) gives --no-cache's targets and log-probabilities within 1e-5, and
# the CPU's targets.
@test "the GPU's cached decoder gives --no-cache's and the CPU's targets, greedy and beam" {
    train_reverse_early
    for how in "--batch 16" "--beam 3"; do
        "$CDL" predict early.cdl --sources new.src $how --json > cpu.json
        "$GPU_CDL" predict early.cdl --sources new.src $how --json --gpu 0 > cached.json
        "$GPU_CDL" predict early.cdl --sources new.src $how --json --gpu 0 --no-cache > uncached.json
        /usr/bin/python3 - cpu.json cached.json uncached.json <<'PY'
import json, sys
cpu, a, b = (json.load(open(f)) for f in sys.argv[1:4])
assert len(cpu) == len(a) == len(b) == 12
assert len({x["target"] for x in cpu}) > 6, cpu
for c, x, y in zip(cpu, a, b):
    assert c["target"] == x["target"] == y["target"] and x["ids"] == y["ids"], (c, x, y)
    assert abs(x["log_prob"] - y["log_prob"]) < 1e-5, (x, y)
PY
    done
}
