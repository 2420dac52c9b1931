#!/usr/bin/env bats
# Channels-last (NHWC) activations on the GPU ([net] channels_last=1, train --channels-last;
# docs/gpu.md, core/net_channels_last.h), run on the CUDA simulator (./cdl-gpusim, make GPU=sim;
# skipped where the CUDA toolkit is not): a residual net trains with the losses of the NCHW run,
# its checkpoint predicts on the CPU as the GPU's, --cuda-graph replays its bf16 steps, and cdl
# info names the NHWC layers.
load helpers

GPU_CDL="${CDL_GPUSIM_BIN:-$REPO/cdl-gpusim}"

setup() {
    [ -x "$GPU_CDL" ] || skip "no GPU=sim build (needs the CUDA toolkit's headers)"
    WORK="$(mktemp -d)"
    cd "$WORK"
    cp "$REPO/cfg/digits.data" . && sed -i "s#\.\./data#$REPO/data#" digits.data
    write_residual_cfg res.cfg
}

teardown() {
    rm -rf "$WORK"
}

# The step losses of a --log file, one per line.
step_losses() {
    jq -r 'select(.type == "step") | .loss' "$1"
}

@test "--channels-last trains a residual net on the GPU with the NCHW run's losses, and its checkpoint predicts on the CPU as on the GPU" {
    run "$GPU_CDL" train res.cfg --data digits.data --log-every 1 --log nchw.jsonl --out nchw.cdl \
        --threads 1 --gpu 0 --epochs 1 --time-limit 3
    echo "$output"
    [ "$status" -eq 0 ]
    run "$GPU_CDL" train res.cfg --data digits.data --log-every 1 --log nhwc.jsonl --out nhwc.cdl \
        --threads 1 --gpu 0 --channels-last --epochs 1 --time-limit 3
    echo "$output"
    [ "$status" -eq 0 ]
    # the first steps both made, up to 4 (a few seconds of each on the simulator; later steps
    # part further as relus and max pools flip on last-bit differences): the same products over
    # other shapes (pixel rows against KRSC weights), summed in other orders. The first step's
    # loss, a forward of the same weights, within float32 round-off (1e-6); the steps after
    # within gpu.bats' bound for float32 round-off grown over SGD steps, 1e-4 relative (this
    # net's batch norm over 16 samples and relus carry a last-bit difference in a gradient to
    # 1.3e-5 in the second step's loss: the NCHW GPU run differs so from the CPU's there too)
    python3 -c 'import sys
a = [float(x) for x in open(sys.argv[1]).read().split()]
b = [float(x) for x in open(sys.argv[2]).read().split()]
n = min(len(a), len(b), 4)
assert n >= 2, (a, b)
assert abs(a[0] - b[0]) <= 1e-6 * abs(a[0]), (a, b)
for x, y in zip(a[:n], b[:n]):
    assert abs(x - y) <= 1e-4 * abs(x), (a, b)' <(step_losses nchw.jsonl) <(step_losses nhwc.jsonl)
    # the checkpoint keeps OIHW weights and per-channel statistics: the CPU predicts with it
    # what the GPU (NHWC again, from the checkpoint's cfg) does
    for row in 1790 1791 1792; do gray_png "d$row.png" digit "$row" >/dev/null; done
    "$CDL" predict nhwc.cdl d*.png --top 3 --json >cpu.json
    run "$GPU_CDL" predict nhwc.cdl d*.png --top 3 --json --gpu 0
    echo "$output"
    [ "$status" -eq 0 ]
    python3 -c 'import json,sys
cpu, gpu = json.load(open("cpu.json")), json.loads(sys.argv[1])
assert len(cpu) == len(gpu) == 3
for c, g in zip(cpu, gpu):
    assert [t["index"] for t in c["top"]] == [t["index"] for t in g["top"]], (c, g)
    for a, b in zip(c["top"], g["top"]):
        assert abs(a["probability"] - b["probability"]) <= 1e-5, (c, g)' "$output"
}

@test "--channels-last with bf16 storage: --cuda-graph replays the eager steps bit for bit" {
    for run in eager graph; do
        local graph=()
        [ "$run" = graph ] && graph=(--cuda-graph)
        "$GPU_CDL" train res.cfg --data digits.data --log-every 1 --log $run.jsonl --out $run.cdl \
            --threads 1 --gpu 0 --channels-last --precision bf16 --epochs 1 --time-limit 2 \
            "${graph[@]}"
    done
    # the steps both made: the simulator runs the same kernels in the same order either way
    local n
    n=$(($(step_losses eager.jsonl | wc -l) < $(step_losses graph.jsonl | wc -l) ? $(step_losses eager.jsonl | wc -l) : $(step_losses graph.jsonl | wc -l)))
    [ "$n" -ge 2 ]
    diff <(step_losses eager.jsonl | head -"$n") <(step_losses graph.jsonl | head -"$n")
}

@test "cdl info --gpu names the layers whose outputs are channels-last; the CPU keeps none" {
    run "$GPU_CDL" info res.cfg --set net.channels_last=1 --gpu 0
    echo "$output"
    [ "$status" -eq 0 ]
    # every layer up to the second shortcut (read by the global avgpool, whose [batch][c] output
    # is the same in both layouts); the route (the projection's input) is NHWC as its input is
    [[ "$output" == *"channels_last=1: 9 layer outputs NHWC"* ]]
    [ "$(grep -c ' nhwc$' <<<"$output")" -eq 9 ]
    for layer in 0 1 2 3 4 5 6 7 8; do grep -qE "^ +$layer .* nhwc$" <<<"$output"; done
    run "$CDL" info res.cfg --set net.channels_last=1
    [ "$status" -eq 0 ]
    [[ "$output" == *"channels_last=1: 0 layer outputs NHWC"* ]]
}

@test "--channels-last on the CPU computes as without it; --resume takes none" {
    "$CDL" train res.cfg --data digits.data --log-every 1 --log a.jsonl --out a.cdl --threads 1 \
        --epochs 1 --time-limit 1
    "$CDL" train res.cfg --data digits.data --log-every 1 --log b.jsonl --out b.cdl --threads 1 \
        --epochs 1 --time-limit 1 --channels-last
    # bit for bit over the steps both made
    n=$(($(step_losses a.jsonl | wc -l) < $(step_losses b.jsonl | wc -l) ? $(step_losses a.jsonl | wc -l) : $(step_losses b.jsonl | wc -l)))
    [ "$n" -ge 2 ]
    [ "$(step_losses a.jsonl | head -"$n")" = "$(step_losses b.jsonl | head -"$n")" ]
    run "$CDL" train --resume a.cdl --channels-last
    [ "$status" -eq 2 ]
    [[ "$output" == *"takes no --channels-last"* ]]
}
