#!/usr/bin/env bats
# scripts/bench-shapes.sh: its one-layer cfgs are the layers PyTorch's peers build (same
# parameter count), and bad arguments are usage errors. (Timing runs are not tested here.)
load helpers

@test "bench-shapes cfgs: cdl info's parameter count is the PyTorch peer's" {
    for shape in c1s2_512to1024x28 c3_512x4 lstm256 attention128; do
        CDL_BIN="$CDL" "$REPO/scripts/bench-shapes.sh" --cfg "$shape" > "$shape.cfg"
        case "$shape" in
        lstm* | attention*)
            cdl_params=$("$CDL" info "$shape.cfg" --set net.vocab=16 --json | jq .params)
            torch_params=$(cd "$REPO" && /usr/bin/python3 scripts/text_torch.py \
                --cfg "$WORK/$shape.cfg" --vocab 16 --params) ;;
        *)
            cdl_params=$("$CDL" info "$shape.cfg" --json | jq .params)
            torch_params=$(cd "$REPO" && /usr/bin/python3 scripts/bench_torch.py \
                --cfg "$WORK/$shape.cfg" --params) ;;
        esac
        echo "$shape: cdl $cdl_params, PyTorch $torch_params"
        [ -n "$cdl_params" ] && [ "$cdl_params" = "$torch_params" ]
    done
}

@test "bench-shapes: --list names every shape; unknown shapes and arguments exit 2" {
    run "$REPO/scripts/bench-shapes.sh" --list
    [ "$status" -eq 0 ]
    [ "$(echo "$output" | wc -l)" -ge 15 ]
    [[ "$output" == *"c3_512x7_b1 "*"conv 1 512 7 7 512 3 1"* ]]
    run "$REPO/scripts/bench-shapes.sh" --shapes c3_512x4,nope
    [ "$status" -eq 2 ]
    [[ "$output" == *"unknown shape 'nope'"* ]]
    run "$REPO/scripts/bench-shapes.sh" --modes backward
    [ "$status" -eq 2 ]
    run "$REPO/scripts/bench-shapes.sh" --frobnicate
    [ "$status" -eq 2 ]
}
