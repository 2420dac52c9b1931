#!/usr/bin/env bats
# [net] engine=ref|dnnl|auto: the convolutions' kernels. The reference (im2col + OpenBLAS) and
# oneDNN train to the same losses, oneDNN to the same checkpoint bytes twice; ref is the default, auto
# picks per layer by a fixed shape rule; a bad value is refused with its place named; info says
# which engine each convolution runs on; dnnl_train_blocked=1 keeps nChw8c between layers in
# training.
load helpers

# Loss of every logged step and the epoch's train and validation loss, one per line.
losses() {
    jq -r 'if .type == "epoch" then .loss, .valid_loss else .loss end' "$1"
}

# Whether the two columns of file $1 (two runs' losses, line by line) agree: within 1e-5 relative
# on the first 6 lines, 2e-3 after them. The float sums of oneDNN's kernels go in another order
# than the reference's, and SGD compounds those roundings from step to step: with AVX-512 (its
# avx512_core kernels) the losses of digits' epoch part by 1e-7 at first, by 1e-5 to 7e-4 from
# the 8th logged step on.
close_losses() {
    awk '{ d = $1 - $2; if (d < 0) d = -d; if (d > (NR <= 6 ? 1e-5 : 2e-3) * ($2 < 0 ? -$2 : $2) + 1e-7) bad++ }
         END { exit bad }' "$1"
}

@test "engine=dnnl and engine=ref train digits to the same losses" {
    for engine in ref dnnl; do
        run "$CDL" train "$REPO/cfg/digits.cfg" --epochs 1 --threads 1 --log-every 4 \
            --log "$engine.jsonl" --out "$engine.cdl" --set net.engine=$engine
        [ "$status" -eq 0 ]
    done
    paste <(losses ref.jsonl) <(losses dnnl.jsonl) > both
    [ "$(wc -l < both)" -ge 10 ]
    close_losses both
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
    [[ "$output" == *"bad.cfg:6: bad value 'mkl' for key 'engine' in [net]: expected one of ref, dnnl, auto"* ]]
    run "$CDL" train "$REPO/cfg/digits.cfg" --set net.engine=MKL
    [ "$status" -eq 2 ]
    [[ "$output" == *"--set net.engine=MKL: bad value 'MKL' for key 'engine'"* ]]
}

@test "cdl info and profile name each convolution's engine" {
    run "$CDL" info "$REPO/cfg/digits.cfg" --set net.engine=ref
    [ "$status" -eq 0 ]
    [[ "$output" == *"convolutional"*"engine ref"* ]]
    [[ "$output" != *"engine dnnl"* ]]
    # the default is auto in an inference net (info opens the model for inference), ref in a
    # training one (profile's steps)
    [ "$("$CDL" info "$REPO/cfg/digits.cfg" --json | jq -c '[.layers[].engine]')" = \
        "$("$CDL" info "$REPO/cfg/digits.cfg" --json --set net.engine=auto |
            jq -c '[.layers[].engine]')" ]
    profile_engines() {
        "$CDL" profile "$REPO/cfg/digits.cfg" --iters 1 --warmup 0 --threads 1 --json "$@" |
            jq -c '[.layers[].engine]'
    }
    [ "$(profile_engines)" = "$(profile_engines --set net.engine=ref)" ]
    [ "$(profile_engines)" != "$(profile_engines --set net.engine=dnnl)" ] ||
        [[ "$("$CDL" --version)" != *DNNL=1* ]]
    run "$CDL" info "$REPO/cfg/digits.cfg" --json --set net.engine=dnnl
    [ "$status" -eq 0 ]
    engine=$(printf '%s\n' "$output" | jq -r '.layers[0].engine')
    if [[ "$("$CDL" --version)" == *DNNL=1* ]]; then
        [ "$engine" = dnnl ]
    else
        [ "$engine" = ref ]
    fi
    run "$CDL" profile "$REPO/cfg/digits.cfg" --iters 1 --warmup 0 --threads 1 --json \
        --set net.engine=dnnl
    [ "$status" -eq 0 ]
    [ "$(printf '%s\n' "$output" | jq -r '.layers[0].engine')" = "$engine" ]
}

@test "engine=dnnl trains digits to the same checkpoint bytes twice at 2 threads" {
    for k in 1 2; do
        run "$CDL" train "$REPO/cfg/digits.cfg" --epochs 1 --threads 2 --out "$k.cdl" \
            --set net.engine=dnnl
        [ "$status" -eq 0 ]
    done
    cmp 1.cdl 2.cdl
}

@test "engine=auto runs every convolution on oneDNN with AVX-512, else in inference all but the stride-1 3x3 ones from 14x14 (Winograd), in training resnet18_cifar's stride-1 3x3 ones from 64 channels, 8x8" {
    # info opens the model for inference, profile's steps train
    conv_engines() {
        "$@" --json --set net.engine=auto |
            jq -r '[.layers[] | select(.type == "convolutional") | .engine] | join(" ")'
    }
    inference=$(conv_engines "$CDL" info "$REPO/cfg/resnet18_cifar.cfg")
    inference_plain=$(conv_engines "$CDL" info "$REPO/cfg/resnet18_cifar.cfg" --set net.winograd=0)
    training() {
        conv_engines "$CDL" profile "$REPO/cfg/resnet18_cifar.cfg" --batch 2 --iters 1 --warmup 0 \
            --threads 1 "$@"
    }
    plain=$(training --set net.winograd=0)
    wino=$(training)
    all="dnnl dnnl dnnl dnnl dnnl dnnl dnnl dnnl dnnl dnnl dnnl dnnl dnnl dnnl dnnl dnnl dnnl dnnl dnnl dnnl"
    if [[ "$("$CDL" doctor)" == *"ISA avx512"* ]]; then
        # -march=native builds for this CPU: oneDNN's avx512_core kernels on nChw16c
        [ "$inference" = "$all" ]
        [ "$inference_plain" = "$all" ]
        [ "$plain" = "$all" ]
        [ "$wino" = "$all" ]
    elif [[ "$("$CDL" --version)" == *DNNL=1* ]]; then
        # inference: the stride-1 3x3 layers on the 32x32 and 16x16 maps go to Winograd (oneDNN
        # 2.6 has no AVX2 Winograd), those on 8x8 and 4x4 stay on oneDNN's direct kernels
        [ "$inference" = "dnnl wino wino wino wino dnnl wino dnnl wino wino dnnl dnnl dnnl dnnl dnnl dnnl dnnl dnnl dnnl dnnl" ]
        [ "$inference_plain" = "$all" ]
        # training: the first layer, stride 2, 1x1 projections and the 4x4 maps stay on the
        # reference, or the 4x4 maps' 3x3 layers go to Winograd when it is on (the default)
        [ "$plain" = "ref dnnl dnnl dnnl dnnl ref dnnl ref dnnl dnnl ref dnnl ref dnnl dnnl ref ref ref ref ref" ]
        [ "$wino" = "ref dnnl dnnl dnnl dnnl ref dnnl ref dnnl dnnl ref dnnl ref dnnl dnnl ref wino ref wino wino" ]
    else
        [[ "$inference $inference_plain $plain $wino" != *dnnl* ]]
    fi
}

@test "cdl predict with engine=dnnl (batch norm folded, convolutions chained) gives the reference's probabilities" {
    for engine in ref dnnl; do
        run "$CDL" predict "$REPO/cfg/resnet18_cifar.cfg" "$REPO/data/bf16_fashion.png" --json \
            --top 3 --threads 1 --set net.engine=$engine
        [ "$status" -eq 0 ]
        printf '%s\n' "$output" | jq -r '.[0].top[] | "\(.index) \(.probability)"' > $engine.txt
    done
    paste ref.txt dnnl.txt > both
    [ "$(wc -l < both)" -eq 3 ]
    # the same classes, probabilities within 1e-5 of the largest
    awk '{ d = $2 - $4; if (d < 0) d = -d; if ($1 != $3 || d > 1e-5) bad++ } END { exit bad }' both
}

@test "cdl predict on Winograd (batch norm folded, shortcuts fused) gives the reference's probabilities" {
    for wino in 0 1; do
        run "$CDL" predict "$REPO/cfg/resnet18_cifar.cfg" "$REPO/data/bf16_fashion.png" --json \
            --top 3 --threads 2 --set net.engine=ref --set net.winograd=$wino
        [ "$status" -eq 0 ]
        printf '%s\n' "$output" | jq -r '.[0].top[] | "\(.index) \(.probability)"' > $wino.txt
    done
    paste 0.txt 1.txt > both
    [ "$(wc -l < both)" -eq 3 ]
    # the same classes, probabilities within 1e-5 of the largest
    awk '{ d = $2 - $4; if (d < 0) d = -d; if ($1 != $3 || d > 1e-5) bad++ } END { exit bad }' both
}

@test "dnnl_train_blocked=1 (nChw8c through the max pooling) trains digits to the reference's losses, twice to the same bytes" {
    run "$CDL" train "$REPO/cfg/digits.cfg" --epochs 1 --threads 1 --log-every 4 \
        --log ref.jsonl --out ref.cdl --set net.engine=ref
    [ "$status" -eq 0 ]
    for k in 1 2; do
        run "$CDL" train "$REPO/cfg/digits.cfg" --epochs 1 --threads 2 --log-every 4 \
            --log "$k.jsonl" --out "$k.cdl" --set net.engine=dnnl --set net.dnnl_train_blocked=1
        [ "$status" -eq 0 ]
    done
    cmp 1.cdl 2.cdl
    paste <(losses ref.jsonl) <(losses 1.jsonl) > both
    [ "$(wc -l < both)" -ge 10 ]
    close_losses both
}
