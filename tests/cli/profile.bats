#!/usr/bin/env bats
# cdl profile, train --profile-steps, cdl graph, and the ResNet-18 cfg.
load helpers

# Layer list of a cfg as JSON, from `cdl info --json`.
info_json() {
    "$CDL" info "$1" --json
}

@test "profile lists every layer with its type and output shape, then the step" {
    info_json "$REPO/cfg/digits.cfg" > info.json
    run "$CDL" profile "$REPO/cfg/digits.cfg" --iters 3 --threads 1
    [ "$status" -eq 0 ]
    printf '%s\n' "$output" > table.txt
    /usr/bin/python3 - <<'PY'
import json, re
layers = json.load(open("info.json"))["layers"]
rows = [l.split() for l in open("table.txt") if re.match(r"\s*\d+\s", l)]
assert len(rows) == len(layers), (len(rows), len(layers))
for row, l in zip(rows, layers):
    assert row[:3] == [str(l["index"]), l["type"], "x".join(map(str, l["output"]))], row
PY
    [[ "$output" == *"step: "*" ms "*" images/s"* ]]
    [[ "$output" == *"layers: "*" ms of the step ("*"%)"* ]]
    [[ "$output" == *"peak memory: "*" MiB"* ]]
}

@test "profile --json: per-layer times sum to within 10% of the step, FLOPs 3x forward for GEMM layers" {
    info_json "$REPO/cfg/digits.cfg" > info.json
    run "$CDL" profile "$REPO/cfg/digits.cfg" --batch 16 --iters 5 --threads 1 --json
    [ "$status" -eq 0 ]
    printf '%s' "$output" > profile.json
    /usr/bin/python3 - <<'PY'
import json
info = json.load(open("info.json"))["layers"]
p = json.load(open("profile.json"))
layers = p["layers"]
assert [l["type"] for l in layers] == [l["type"] for l in info]
passes = p["passes_per_step"]
assert p["batch"] == 16 and passes == 1 and p["iters"] == 5
total = sum((l["forward_ms"]["mean"] + l["backward_ms"]["mean"]) * passes for l in layers)
step = p["step_ms"]["mean"]
print("layers %.3f ms, step %.3f ms" % (total, step))
assert abs(total - step) <= 0.10 * step
assert abs(p["layers_ms"] - total) <= 1e-9 * step
assert abs(p["images_per_s"] - 16 / (step / 1e3)) <= 1e-6 * p["images_per_s"]
for l, i in zip(layers, info):
    for phase in ("forward_ms", "backward_ms"):
        t = l[phase]
        assert 0 <= t["min"] <= t["mean"] <= t["max"] and t["std"] >= 0
    # The first layer computes no gradient for the net input: one GEMM fewer.
    gemm = i["type"] in ("convolutional", "connected")
    factor = (2 if i["index"] == 0 else 3) if gemm else 2
    assert abs(l["flops"] - factor * i["flops"] * 16) <= 1e-6 * l["flops"], (l, i)
    assert l["params"] == i["params"]
    # output, delta, and pre-activations where the activation does not run in place
    planes = 2 + (i["activation"] in ("elu", "relu6", "gelu", "swish", "mish"))
    c, h, w = i["output"]
    assert l["activation_bytes"] == planes * 16 * c * h * w * 4
assert p["peak_rss_bytes"] > 0
PY
}

@test "profile --inference times forwards only: no backward, forward FLOPs, layers within 10% of the forward" {
    info_json "$REPO/cfg/digits.cfg" > info.json
    run "$CDL" profile "$REPO/cfg/digits.cfg" --inference --batch 4 --iters 5 --threads 1 --json
    [ "$status" -eq 0 ]
    printf '%s' "$output" > profile.json
    /usr/bin/python3 - <<'PY'
import json
info = json.load(open("info.json"))["layers"]
p = json.load(open("profile.json"))
assert p["inference"] is True and p["batch"] == 4 and p["passes_per_step"] == 1
layers = p["layers"]
total = sum(l["forward_ms"]["mean"] for l in layers)
step = p["step_ms"]["mean"]
assert abs(total - step) <= 0.10 * step, (total, step)
for l, i in zip(layers, info):
    assert l["backward_ms"]["max"] == 0
    assert abs(l["flops"] - i["flops"] * 4) <= 1e-6 * max(l["flops"], 1), (l, i)
PY
    run "$CDL" profile "$REPO/cfg/digits.cfg" --inference --batch 2 --iters 2 --threads 1
    [ "$status" -eq 0 ]
    [[ "$output" == *"2 timed inference forwards after 2 untimed"* ]]
    [[ "$output" == *"layers: "*" ms of the forward ("*"%)"* ]]
}

@test "profile --trace writes a Chrome trace: each layer pass and one event per step" {
    n=$(info_json "$REPO/cfg/digits.cfg" | /usr/bin/python3 -c 'import json,sys; print(len(json.load(sys.stdin)["layers"]))')
    run "$CDL" profile "$REPO/cfg/digits.cfg" --iters 4 --threads 1 --trace trace.json
    [ "$status" -eq 0 ]
    [[ "$output" == *"trace: trace.json ($((4 * (2 * n + 1))) events)"* ]]
    /usr/bin/python3 - "$n" <<'PY'
import json, sys
n = int(sys.argv[1])
t = json.load(open("trace.json"))
events = t["traceEvents"]
assert isinstance(events, list) and t["displayTimeUnit"] == "ms"
for e in events:
    assert e["ph"] == "X" and isinstance(e["name"], str), e
    assert e["ts"] >= 0 and e["dur"] >= 0, e
steps = [e for e in events if e["cat"] == "step"]
assert len(steps) == 4
for phase in ("forward", "backward"):
    assert len([e for e in events if e["cat"] == phase]) == 4 * n
for s in steps:  # every layer event of a step lies inside it
    inside = [e for e in events if e["cat"] != "step" and e["args"]["step"] == s["args"]["step"]]
    assert len(inside) == 2 * n
    assert all(s["ts"] <= e["ts"] and e["ts"] + e["dur"] <= s["ts"] + s["dur"] + 1e-3 for e in inside)
    inside.sort(key=lambda e: e["ts"])  # layers run one after another: no overlap
    assert all(a["ts"] + a["dur"] <= b["ts"] + 1e-3 for a, b in zip(inside, inside[1:]))
PY
}

@test "profile takes a checkpoint as well as a cfg" {
    train_digits 1
    run "$CDL" profile digits.cdl --iters 2 --threads 1 --json
    [ "$status" -eq 0 ]
    [[ "$output" == *'"model":"digits.cdl"'* ]]
}

@test "profile without a model is a usage error" {
    run "$CDL" profile
    [ "$status" -eq 2 ]
    [[ "$output" == "cdl: profile takes one CFG or MODEL; see --help" ]]
}

@test "train --profile-steps writes a trace of exactly the listed steps" {
    run "$CDL" train "$REPO/cfg/digits.cfg" --epochs 2 --out d.cdl --threads 1 --profile-steps 2-3,44-45
    [ "$status" -eq 0 ]
    [[ "$output" == *"cdl: wrote d.trace.json"* ]]
    /usr/bin/python3 - <<'PY'
import json
events = json.load(open("d.trace.json"))["traceEvents"]
steps = sorted(e["args"]["step"] for e in events if e["cat"] == "step")
assert steps == [2, 3, 44, 45], steps  # 44 ends epoch 1, 45 begins epoch 2
assert all(e["dur"] >= 0 for e in events)
assert {e["cat"] for e in events} == {"step", "forward", "backward"}
PY
}

@test "train --trace names the --profile-steps file" {
    run "$CDL" train "$REPO/cfg/digits.cfg" --epochs 1 --out d.cdl --threads 1 --profile-steps 5 --trace t.json
    [ "$status" -eq 0 ]
    [ -f t.json ] && [ ! -e d.trace.json ]
}

@test "train --profile-steps rejects malformed lists and steps the run does not reach" {
    run "$CDL" train "$REPO/cfg/digits.cfg" --epochs 1 --out d.cdl --profile-steps 5-3
    [ "$status" -eq 2 ]
    [[ "$output" == *"cdl: --profile-steps: bad value '5-3'"* ]]
    run "$CDL" train "$REPO/cfg/digits.cfg" --epochs 1 --out d.cdl --profile-steps 100-200
    [ "$status" -eq 2 ]
    [[ "$output" == *"cdl: --profile-steps 100-200: none of these steps runs; this run trains steps 1-44"* ]]
    run "$CDL" train "$REPO/cfg/digits.cfg" --epochs 1 --out d.cdl --trace t.json
    [ "$status" -eq 2 ]
    [[ "$output" == *"cdl: --trace needs --profile-steps"* ]]
    [ ! -e t.json ]
}

@test "graph writes DOT: a node per layer and an edge from every input, route and shortcut included" {
    run "$CDL" graph "$REPO/cfg/resnet18.cfg" -o net.dot
    [ "$status" -eq 0 ]
    /usr/bin/python3 - "$REPO/cfg/resnet18.cfg" <<'PY'
import re, sys
# Expected inputs, from the cfg text: the previous layer, or route's layers= / shortcut's from=.
sections = []
for line in open(sys.argv[1]):
    line = line.split("#")[0].strip()
    if line.startswith("["):
        sections.append((line.strip("[]"), {}))
    elif "=" in line:
        k, v = line.split("=", 1)
        sections[-1][1][k.strip()] = v.strip()
layers = sections[1:]
expected = set()
for i, (name, keys) in enumerate(layers):
    ref = lambda v: i + int(v) if int(v) < 0 else int(v)
    if name == "route":
        expected |= {(ref(v), i) for v in keys["layers"].split(",")}
    else:
        if i > 0:
            expected.add((i - 1, i))
        if name == "shortcut":
            expected.add((ref(keys["from"]), i))
dot = open("net.dot").read()
nodes = re.findall(r"^\s*L(\d+) \[", dot, re.M)
edges = {(int(a), int(b)) for a, b in re.findall(r"L(\d+) -> L(\d+)", dot)}
assert sorted(map(int, nodes)) == list(range(len(layers))), nodes
assert edges == expected, (edges ^ expected)
assert any(layers[b][0] == "route" and a != b - 1 for a, b in edges)
assert any(layers[b][0] == "shortcut" and a != b - 1 for a, b in edges)
PY
    grep -q 'label="0 convolutional\\nfilters=64 size=7 stride=2' net.dot
}

@test "graph renders PNG and SVG with Graphviz dot" {
    run "$CDL" graph "$REPO/cfg/digits.cfg" -o net.png
    [ "$status" -eq 0 ]
    # Five layers stacked, each node at least dot's minimum height of 0.5 inch (36 px).
    /usr/bin/python3 -c 'from PIL import Image; im = Image.open("net.png"); assert im.format == "PNG" and im.size[1] >= 5 * 36, im.size'
    run "$CDL" graph "$REPO/cfg/digits.cfg" -o net.svg
    [ "$status" -eq 0 ]
    grep -q '<svg' net.svg
    [ -z "$(ls | grep tmp)" ]
}

@test "graph takes a checkpoint and draws the cfg it was trained with" {
    train_digits 1
    run "$CDL" graph digits.cdl
    [ "$status" -eq 0 ]
    [ "$(printf '%s\n' "$output" | grep -c '^  L[0-9]* \[')" -eq 5 ]
    [[ "$output" == *'label="3 connected\noutput=10 activation=linear\n10x1x1"'* ]]
}

@test "graph to PNG without dot on PATH fails with exit 1 and names the missing tool" {
    run env PATH=/nonexistent "$CDL" graph "$REPO/cfg/digits.cfg" -o net.png
    [ "$status" -eq 1 ]
    [[ "$output" == "cdl: net.png: rendering needs Graphviz's 'dot', which is not on PATH"* ]]
    [ -z "$(ls)" ]
}

@test "resnet18.cfg has torchvision's 11,689,512 trainable parameters and its stage shapes" {
    run "$CDL" info "$REPO/cfg/resnet18.cfg"
    [ "$status" -eq 0 ]
    [[ "$output" == *"total: 11689512 parameters"* ]]
    info_json "$REPO/cfg/resnet18.cfg" | /usr/bin/python3 -c '
import json, sys
layers = json.load(sys.stdin)["layers"]
shape = lambda t: [l["output"] for l in layers if l["type"] == t]
assert shape("maxpool") == [[64, 56, 56]]
stages = [s for s in shape("shortcut")]
assert stages == [[64, 56, 56]] * 2 + [[128, 28, 28]] * 2 + [[256, 14, 14]] * 2 + [[512, 7, 7]] * 2
assert shape("avgpool") == [[512, 1, 1]] and shape("connected") == [[1000, 1, 1]]
assert all(l["activation"] in ("relu", "linear") for l in layers)
'
}
