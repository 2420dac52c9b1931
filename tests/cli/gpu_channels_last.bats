#!/usr/bin/env bats
# Channels-last (NHWC) activations on the GPU ([net] channels_last=1, train --channels-last;
# docs/gpu.md, core/net_channels_last.h), run on the CUDA simulator (./cdl-gpusim, make GPU=sim;
# skipped where the CUDA toolkit is not): a residual net trains with the losses of the NCHW run,
# its checkpoint predicts on the CPU as the GPU's, --cuda-graph replays its bf16 steps, and cdl
# info names the NHWC layers; a mobilenetv2-like net (depthwise, grouped, squeeze-excitation)
# trains with the NCHW run's losses, and the mobile zoo cfgs' NHWC counts are those of a planner
# of this file's own.
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

# The first steps two --log files both made, up to 4: the first step's loss within 1e-6 relative,
# the next ones within 1e-4 (the bounds the tests below derive).
same_first_losses() {
    python3 -c 'import sys
a = [float(x) for x in open(sys.argv[1]).read().split()]
b = [float(x) for x in open(sys.argv[2]).read().split()]
n = min(len(a), len(b), 4)
assert n >= 2, (a, b)
assert abs(a[0] - b[0]) <= 1e-6 * abs(a[0]), (a, b)
for x, y in zip(a[:n], b[:n]):
    assert abs(x - y) <= 1e-4 * abs(x), (a, b)' <(step_losses "$1") <(step_losses "$2")
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
    same_first_losses nchw.jsonl nhwc.jsonl
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

# A mobilenetv2-like net on the digits' 8x8 images: an inverted residual (depthwise 3x3, pointwise
# 1x1, shortcut), a stride-2 depthwise, a squeeze-excitation ([avgpool], two 1x1 convolutions,
# [scale_channels]) and a grouped 3x3.
write_mobile_cfg() {
    local conv='[convolutional]\nfilters=%s\nsize=%s\nstride=%s\npad=1\ngroups=%s\nbatch_normalize=%s\nactivation=%s\n'
    {
        printf '[net]\nbatch=16\nwidth=8\nheight=8\nchannels=1\nlearning_rate=0.05\nmomentum=0.9\n'
        printf "$conv" 8 3 1 1 1 relu
        printf "$conv" 8 3 1 8 1 relu
        printf "$conv" 8 1 1 1 1 linear
        printf '[shortcut]\nfrom=-3\n'
        printf "$conv" 16 1 1 1 1 relu
        printf "$conv" 16 3 2 16 1 relu
        printf '[avgpool]\n'
        printf "$conv" 4 1 1 1 0 relu
        printf "$conv" 16 1 1 1 0 logistic
        printf '[scale_channels]\nfrom=-4\n'
        printf "$conv" 12 1 1 1 1 linear
        printf "$conv" 12 3 1 3 1 relu
        printf '[avgpool]\n[connected]\noutput=10\nactivation=linear\n[softmax]\n'
    } >"$1"
}

# The number of layer outputs a cfg keeps NHWC under the rule of core/net_channels_last.h, worked
# out here from the cfg alone for the families of the mobile zoo cfgs, with the families that take
# NHWC today (after) or before grouped convolutions, the windowed [avgpool] and [scale_channels]
# did (before).
nhwc_count() {
    python3 - "$1" "$2" <<'PY'
import sys
sections = []
for line in open(sys.argv[1]):
    line = line.split('#')[0].strip()
    if line.startswith('['):
        sections.append((line.strip('[]'), {}))
    elif '=' in line:
        k, v = line.split('=', 1)
        sections[-1][1][k.strip()] = v.strip()
layers, before = sections[1:], sys.argv[2] == 'before'
n = len(layers)
# each layer's inputs, and its output's channels and total stride ('pooled' after a global pool)
inputs, chans, strides = [], [], []
for i, (name, keys) in enumerate(layers):
    c, s = (chans[i - 1], strides[i - 1]) if i else (None, 1)
    ins = [i - 1]
    if name == 'convolutional':
        c = int(keys['filters'])
        s = s if s == 'pooled' else s * int(keys.get('stride', 1))
    elif name == 'avgpool':
        s = s if 'size' in keys else 'pooled'
    elif name in ('shortcut', 'scale_channels'):
        f = int(keys['from'])
        f = i + f if f < 0 else f
        ins = [i - 1, f]
        if name == 'scale_channels':
            c, s = chans[f], strides[f]
    elif name not in ('connected', 'dropout', 'softmax'):
        sys.exit('no rule here for [%s]' % name)
    inputs.append(ins)
    chans.append(c)
    strides.append(s)

def use(i):
    name, keys = layers[i]
    if name == 'convolutional':
        return 'never' if before and keys.get('groups', '1') != '1' else 'either'
    if name == 'avgpool':
        return 'never' if before and 'size' in keys else 'either'
    if name == 'scale_channels':
        return 'never' if before else 'same'
    if name == 'shortcut':
        f = inputs[i][1]
        return 'same' if (chans[f], strides[f]) == (chans[i - 1], strides[i - 1]) else 'never'
    return 'never'

nhwc = [use(i) != 'never' and i != n - 1 for i in range(n)]
changed = True
while changed:
    changed = False
    for i in range(n):
        readers = [j for j in range(i + 1, n) if i in inputs[j]]
        keep = all(use(j) == 'either' or (use(j) == 'same' and nhwc[j]) for j in readers) and (
            use(i) != 'same' or all(k >= 0 and nhwc[k] for k in inputs[i]))
        if nhwc[i] and not keep:
            nhwc[i], changed = False, True
print(sum(nhwc))
PY
}

@test "--channels-last trains a mobilenetv2-like net (depthwise, grouped, squeeze-excitation) with the NCHW run's losses" {
    write_mobile_cfg mobile.cfg
    for layout in nchw nhwc; do
        local flag=()
        [ "$layout" = nhwc ] && flag=(--channels-last)
        run "$GPU_CDL" train mobile.cfg --data digits.data --log-every 1 --log $layout.jsonl \
            --out $layout.cdl --threads 1 --gpu 0 --epochs 1 --time-limit 3 "${flag[@]}"
        echo "$output"
        [ "$status" -eq 0 ]
    done
    # layers 0-11 NHWC, all but the head ([avgpool] read by [connected], [connected], [softmax])
    run "$GPU_CDL" info mobile.cfg --set net.channels_last=1 --gpu 0
    [[ "$output" == *"channels_last=1: 12 layer outputs NHWC"* ]]
    # the same products summed in other orders (pixel rows against per-group KRSC weights, the
    # SE's planes over strided NHWC rows): the bounds of the residual test above, float32
    # round-off in the first step's loss, grown over SGD steps after (the simulator's products
    # happen to agree to the bit here; a GPU's cuBLAS picks kernels, and orders, by shape)
    same_first_losses nchw.jsonl nhwc.jsonl
}

@test "cdl info --gpu: the mobile zoo cfgs keep their depthwise, grouped and SE layers NHWC" {
    for cfg in mobilenetv2 mobilenet_v3_small; do
        local after before
        after=$(nhwc_count "$REPO/cfg/$cfg.cfg" after)
        before=$(nhwc_count "$REPO/cfg/$cfg.cfg" before)
        [ "$after" -gt "$before" ]
        run "$GPU_CDL" info "$REPO/cfg/$cfg.cfg" --set net.channels_last=1 --gpu 0
        echo "$cfg: $before before, $after now"
        [ "$status" -eq 0 ]
        [[ "$output" == *"channels_last=1: $after layer outputs NHWC"* ]]
    done
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
