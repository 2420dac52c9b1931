#!/usr/bin/env bats
# [net] engine=ref|dnnl: the convolutions' kernels. The reference (im2col + OpenBLAS) and oneDNN
# train to the same losses; a bad value is refused with its place named; info says which engine
# each convolution runs on.
load helpers

# Loss of every logged step and the epoch's train and validation loss, one per line.
losses() {
    jq -r 'if .type == "epoch" then .loss, .valid_loss else .loss end' "$1"
}

@test "engine=ref and the default engine train digits to the same losses" {
    for engine in default ref; do
        set_engine=()
        [ "$engine" = default ] || set_engine=(--set net.engine=ref)
        run "$CDL" train "$REPO/cfg/digits.cfg" --epochs 1 --threads 1 --log-every 4 \
            --log "$engine.jsonl" --out "$engine.cdl" "${set_engine[@]}"
        [ "$status" -eq 0 ]
    done
    paste <(losses default.jsonl) <(losses ref.jsonl) > both
    [ "$(wc -l < both)" -ge 10 ]
    # within 1e-5 relative, every line
    awk '{ d = $1 - $2; if (d < 0) d = -d; if (d > 1e-5 * ($2 < 0 ? -$2 : $2) + 1e-7) bad++ }
         END { exit bad }' both
}

@test "a bad engine is refused with the cfg line or the --set naming it" {
    write_cfg bad.cfg <<'CFG'
[net]
batch=4
width=8
height=8
channels=1
engine=mkl
[convolutional]
filters=2
size=3
[softmax]
CFG
    run "$CDL" info bad.cfg
    [ "$status" -eq 2 ]
    [[ "$output" == *"bad.cfg:6: bad value 'mkl' for key 'engine' in [net]: expected one of ref, dnnl"* ]]
    run "$CDL" train "$REPO/cfg/digits.cfg" --set net.engine=MKL
    [ "$status" -eq 2 ]
    [[ "$output" == *"--set net.engine=MKL: bad value 'MKL' for key 'engine'"* ]]
}

@test "cdl info and profile name each convolution's engine" {
    run "$CDL" info "$REPO/cfg/digits.cfg" --set net.engine=ref
    [ "$status" -eq 0 ]
    [[ "$output" == *"convolutional"*"engine ref"* ]]
    [[ "$output" != *"engine dnnl"* ]]
    run "$CDL" info "$REPO/cfg/digits.cfg" --json
    [ "$status" -eq 0 ]
    engine=$(printf '%s\n' "$output" | jq -r '.layers[0].engine')
    if [[ "$("$CDL" --version)" == *DNNL=1* ]]; then
        [ "$engine" = dnnl ]
    else
        [ "$engine" = ref ]
    fi
    run "$CDL" profile "$REPO/cfg/digits.cfg" --iters 1 --warmup 0 --threads 1 --json
    [ "$status" -eq 0 ]
    [ "$(printf '%s\n' "$output" | jq -r '.layers[0].engine')" = "$engine" ]
}
