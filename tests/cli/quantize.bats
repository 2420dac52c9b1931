#!/usr/bin/env bats
# cdl quantize: int8 checkpoints, their use by eval/predict/info/bench, and what they refuse.
load helpers

@test "quantize writes an int8 model that evaluates within a point of the float one" {
    train_digits
    run "$CDL" quantize digits.cdl -o digits.int8.cdl
    [ "$status" -eq 0 ]
    [[ "$output" == *"digits.int8.cdl: 3 layers int8"* ]]
    fp=$("$CDL" eval digits.cdl --json | jq .accuracy)
    q=$("$CDL" eval digits.int8.cdl --json | jq .accuracy)
    jq -n --argjson a "$fp" --argjson b "$q" '($a - $b) | fabs <= 0.01' | grep -qx true
}

@test "quantize --calibrate fixes the convolutions' input grids; info shows the int8 layers" {
    train_digits
    run "$CDL" quantize digits.cdl -o q.cdl --calibrate "$REPO/cfg/digits.data" --batches 2
    [ "$status" -eq 0 ]
    [[ "$output" == *"2 convolution input grids calibrated on"* ]]
    run "$CDL" info q.cdl
    [ "$status" -eq 0 ]
    [[ "$output" == *"int8 (static input)"* ]]
    [[ "$output" == *"connected"*"int8 (dynamic input)"* ]]
    [[ "$output" == *"int8: 3 quantized layers"* ]]
    run "$CDL" info q.cdl --json
    [ "$(echo "$output" | jq -r '.layers[0].weights')" = "int8 static" ]
    [ "$(echo "$output" | jq -r '.layers[1].weights')" = "null" ]
    run "$CDL" info digits.cdl
    [[ "$output" != *"int8"* ]]
}

@test "an int8 model predicts and benches inference" {
    train_digits
    "$CDL" quantize digits.cdl -o q.cdl
    label=$(gray_png digit.png digit 5)
    run "$CDL" predict q.cdl digit.png --top 1 --json
    [ "$status" -eq 0 ]
    run "$CDL" bench q.cdl --inference --batch 8 --steps 2 --warmup 1 --json
    [ "$status" -eq 0 ]
    [ "$(echo "$output" | jq '.images_per_s > 0')" = true ]
}

@test "quantizing an int8 model, training it or fine-tuning from it is refused" {
    train_digits
    "$CDL" quantize digits.cdl -o q.cdl
    run "$CDL" quantize q.cdl -o qq.cdl
    [ "$status" -eq 2 ]
    [[ "$output" == *"q.cdl: the model is already int8"* ]]
    [ ! -e qq.cdl ]
    run "$CDL" train --resume q.cdl --epochs 1
    [ "$status" -eq 2 ]
    [[ "$output" == *"q.cdl is an int8 model (cdl quantize)"*"not training"* ]]
    run "$CDL" train "$REPO/cfg/digits.cfg" --weights q.cdl --epochs 1
    [ "$status" -eq 2 ]
    [[ "$output" == *"q.cdl is an int8 model"* ]]
}

@test "quantize refuses bad arguments with one clear line" {
    train_digits
    run "$CDL" quantize digits.cdl
    [ "$status" -eq 2 ]
    [[ "$output" == *"needs -o OUT.cdl"* ]]
    run "$CDL" quantize "$REPO/cfg/digits.cfg" -o x.cdl
    [ "$status" -eq 2 ]
    [[ "$output" == *"not a cdl checkpoint"* ]]
    run "$CDL" quantize digits.cdl -o x.cdl --calibrate missing.data
    [ "$status" -ne 0 ]
    [[ "$output" == *"missing.data"* ]]
    [ ! -e x.cdl ]
}

@test "a truncated int8 checkpoint is reported, not loaded" {
    train_digits
    "$CDL" quantize digits.cdl -o q.cdl
    head -c 3000 q.cdl > cut.cdl
    run "$CDL" eval cut.cdl
    [ "$status" -eq 1 ]
    [[ "$output" == *"cut.cdl"* ]]
}

@test "a calibrated int8 fashion model evaluates within half a point of float, on oneDNN with AVX2" {
    [ -r /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ] ||
        skip "Fashion-MNIST (Debian's dataset-fashion-mnist) is not installed"
    "$CDL" train "$REPO/cfg/fashion.cfg" --epochs 1 --out fashion.cdl --threads 2 \
        --log-every 100000 2>/dev/null
    run "$CDL" quantize fashion.cdl -o q.cdl --calibrate "$REPO/cfg/fashion.data" --threads 2
    [ "$status" -eq 0 ]
    [[ "$output" == *"3 convolution input grids calibrated"* ]]
    # engine=auto runs calibrated int8 convolutions on oneDNN where the CPU has AVX2
    if "$CDL" doctor | grep -q "DNNL=1" && grep -qw avx2 /proc/cpuinfo; then
        [ "$("$CDL" info q.cdl | grep -c 'int8 (static input)  engine dnnl')" -eq 3 ]
    fi
    fp=$("$CDL" eval fashion.cdl --threads 2 --json | jq .accuracy)
    q=$("$CDL" eval q.cdl --threads 2 --json | jq .accuracy)
    jq -n --argjson a "$fp" --argjson b "$q" '($a - $b) | fabs <= 0.005' | grep -qx true
}

@test "a calibrated int8 resnet_fashion evaluates within half a point of float, chained on oneDNN with AVX2" {
    [ -r /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ] ||
        skip "Fashion-MNIST (Debian's dataset-fashion-mnist) is not installed"
    # the rate decays to 0 over 150 steps (about 40 s on 2 cores), so the weights are those of a
    # finished schedule whatever the machine's speed: a model stopped mid-schedule by the time
    # limit alone (70-75%) has enough near ties for int8 to move its accuracy by a point
    "$CDL" train "$REPO/cfg/resnet_fashion.cfg" --data "$REPO/cfg/fashion.data" --time-limit 60 \
        --set net.max_batches=150 --out rf.cdl --threads 2 --log-every 100000 2>/dev/null
    run "$CDL" quantize rf.cdl -o q.cdl --calibrate "$REPO/cfg/fashion.data" --threads 2
    [ "$status" -eq 0 ]
    [[ "$output" == *"7 convolution input grids calibrated"* ]]
    # with AVX2 the seven convolutions run on oneDNN, three of them writing the next one's uint8
    # input codes (int8 chains: the stem and the two blocks' first convolutions)
    if "$CDL" doctor | grep -q "DNNL=1" && grep -qw avx2 /proc/cpuinfo; then
        [ "$("$CDL" info q.cdl | grep -c 'int8 (static input)  engine dnnl')" -eq 7 ]
    fi
    fp=$("$CDL" eval rf.cdl --data "$REPO/cfg/fashion.data" --threads 2 --json | jq .accuracy)
    q=$("$CDL" eval q.cdl --data "$REPO/cfg/fashion.data" --threads 2 --json | jq .accuracy)
    echo "float $fp int8 $q"
    jq -n --argjson a "$fp" --argjson b "$q" '($a - $b) | fabs <= 0.005' | grep -qx true
}
