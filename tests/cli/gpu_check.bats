#!/usr/bin/env bats
# scripts/gpu-check.sh, the check a machine with a GPU runs (docs/gpu.md), run here in its
# --sim mode against the CUDA simulator's build (./cdl-gpusim, make GPU=sim; skipped where it
# is not built): every step that needs no real GPU runs, and the output ends as on a GPU.
load helpers

setup() {
    [ -x "$REPO/cdl-gpusim" ] || skip "no GPU=sim build (needs the CUDA toolkit's headers)"
    WORK="$(mktemp -d)"
    cd "$WORK"
}

@test "gpu-check --sim passes its steps, ends with the tally and writes its summary" {
    run "$REPO/scripts/gpu-check.sh" --sim --out "$WORK/out"
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "${lines[-1]}" =~ ^[0-9]+\ passed,\ 0\ failed$ ]]
    [ -f out/gpu-check.log ] && [ -f out/logs.tar.gz ]
    [ "$(head -c 4 out/curves.png | tail -c 3)" = PNG ]
    # the summary: every step in order; what needs a GPU (or a compiler of PyTorch's) is
    # skipped (cuDNN's channels-last marks too: cuDNN is in GPU=1 builds only), the rest passed,
    # and the curves compared 2 epochs of 44 steps
    python3 - out/summary.json "${lines[-1]}" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
names = [x["name"] for x in s["steps"]]
assert names == ["libraries", "gpu", "doctor", "test_gpu_forward_at", "test_backend_ops",
                 "info_channels_last", "curves", "precisions", "graphs", "time_resnet18_cifar",
                 "time_gpt_tiny", "time_resnet50", "memcheck", "racecheck", "torch_compile"], names
status = {x["name"]: x["status"] for x in s["steps"]}
for name in ("gpu", "info_channels_last", "time_resnet18_cifar", "time_gpt_tiny",
             "time_resnet50", "memcheck", "racecheck", "torch_compile"):
    assert status[name] == "skip", (name, status[name])
for name in ("libraries", "doctor", "curves", "precisions", "graphs"):
    assert status[name] == "ok", (name, status[name])
assert s["mode"] == "sim" and s["failed"] == 0
assert sys.argv[2] == f"{s['passed']} passed, {s['failed']} failed"
assert s["passed"] + s["skipped"] == len(names)
assert s["figures"]["curves.steps"] == 88
assert s["figures"]["curves.step1_relative"] <= 1e-4
assert s["figures"]["precisions.fp16.step1_relative"] <= 1e-3
EOF
}

@test "gpu-check --skip leaves a step out and says so; an unknown argument is refused" {
    run "$REPO/scripts/gpu-check.sh" --sim --out "$WORK/out" --skip test_backend_ops,curves
    [ "$status" -eq 0 ]
    [[ "$output" == *"skip test_backend_ops        0s  left out (--skip)"* ]]
    [[ "$output" == *"skip curves                  0s  left out (--skip)"* ]]
    run "$REPO/scripts/gpu-check.sh" --simulate
    [ "$status" -eq 2 ]
    [[ "$output" == *"unknown argument --simulate"* ]]
}
