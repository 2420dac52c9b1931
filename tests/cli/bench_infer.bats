#!/usr/bin/env bats
# scripts/bench-infer.sh: its nets' PyTorch peers have cdl's parameters, bad arguments are usage
# errors, and (where scripts/torch-venv.sh made its venv) a quick run prints a row against ONNX
# Runtime and PyTorch. (Timings are not tested here.)
load helpers

@test "bench-infer nets: the PyTorch peer of each has cdl info's parameter count" {
    for net in resnet18 resnet50 mobilenetv2 densenet121 inception_v3; do
        cdl_params=$("$CDL" info "$REPO/cfg/$net.cfg" --json | jq .params)
        torch_params=$(cd "$REPO" && /usr/bin/python3 scripts/bench_torch.py \
            --cfg "cfg/$net.cfg" --params)
        echo "$net: cdl $cdl_params, PyTorch $torch_params"
        [ -n "$cdl_params" ] && [ "$cdl_params" = "$torch_params" ]
    done
}

@test "bench-infer: unknown nets, precisions and arguments exit 2" {
    run "$REPO/scripts/bench-infer.sh" --nets resnet18,nope
    [ "$status" -eq 2 ]
    [[ "$output" == *"unknown net 'nope'"* ]]
    run "$REPO/scripts/bench-infer.sh" --precisions fp32,fp8
    [ "$status" -eq 2 ]
    [[ "$output" == *"unknown precision 'fp8'"* ]]
    run "$REPO/scripts/bench-infer.sh" --frobnicate
    [ "$status" -eq 2 ]
    run "$REPO/scripts/bench-infer.sh" --help
    [ "$status" -eq 0 ]
    [[ "$output" == *"--quick"* ]]
}

@test "bench-infer --quick: one resnet18 row against ONNX Runtime and PyTorch, no file written" {
    venv=${TORCH_VENV:-$REPO/build/torch-venv}
    [ -x "$venv/bin/python" ] && "$venv/bin/python" -c 'import torch, onnxruntime, onnx' ||
        skip "no venv with torch, onnxruntime and onnx (scripts/torch-venv.sh)"
    run env TORCH_VENV="$venv" CDL_SPEED_DIR="$WORK/speed" "$REPO/scripts/bench-infer.sh" \
        --quick --no-compile
    [ "$status" -eq 0 ]
    row=$(printf '%s\n' "$output" | grep '^resnet18 ')
    read -r net prec thr batch unit cdl ort torch compile cdl_ort cdl_pt <<<"$row"
    [ "$prec $thr $batch $unit $compile" = "fp32 1 1 ms -" ]
    awk -v a="$cdl" -v b="$ort" -v c="$torch" 'BEGIN { exit !(a > 0 && b > 0 && c > 0) }'
    [ ! -e "$WORK/speed" ]
}

@test "bench-startup --quick: cdl predict's process and ONNX Runtime's give one answer and a row" {
    python3 -c 'import onnxruntime, PIL, numpy' 2>/dev/null ||
        skip "python3 has no onnxruntime, PIL or numpy"
    run env CDL_SPEED_DIR="$WORK/speed" "$REPO/scripts/bench-startup.sh" --quick
    [ "$status" -eq 0 ]
    row=$(printf '%s\n' "$output" | grep '^digits ')
    read -r net cdl_ms ort_ms ratio cdl_b1 ort_b1 ratio_b1 <<<"$row"
    awk -v a="$cdl_ms" -v b="$ort_ms" -v c="$cdl_b1" 'BEGIN { exit !(a > 0 && b > 0 && c > 0) }'
    [ ! -e "$WORK/speed" ]
    run "$REPO/scripts/bench-startup.sh" --frobnicate
    [ "$status" -eq 2 ]
}
