#!/usr/bin/env bats
# Every bad input gets one line "cdl: ..." naming the file (and line), exit 2 for usage or
# config errors, 1 for runtime failures; never a crash.
load helpers

NET_HEAD=$'[net]\nbatch=2\nwidth=8\nheight=8\nchannels=1\n'

# expect_error STATUS MESSAGE_SUBSTRING cdl-args...
expect_error() {
    local want_status=$1 want_text=$2
    shift 2
    run "$CDL" "$@"
    echo "status $status, output: $output"
    [ "$status" -eq "$want_status" ]
    [ "${#lines[@]}" -eq 1 ]
    [[ "${lines[0]}" == "cdl: "* ]]
    [[ "$output" == *"$want_text"* ]]
}

@test "unknown section lists the valid ones" {
    printf '%s[convolution]\nfilters=2\n' "$NET_HEAD" > bad.cfg
    expect_error 2 "bad.cfg:6: unknown section [convolution] (valid: net, convolutional, connected" info bad.cfg
}

@test "unknown key lists the keys the section takes" {
    printf '%s[maxpool]\nsize=2\nstrid=2\n' "$NET_HEAD" > bad.cfg
    expect_error 2 "bad.cfg:8: unknown key 'strid' in [maxpool] (valid keys: " info bad.cfg
}

@test "bad value names key, value and what was expected" {
    printf '%s[convolutional]\nfilters=2\nsize=3x\n' "$NET_HEAD" > bad.cfg
    expect_error 2 "bad.cfg:8: bad value '3x' for key 'size' in [convolutional]: expected an integer" info bad.cfg
}

@test "bad activation lists the valid ones" {
    printf '%s[convolutional]\nactivation=leakyrelu\n' "$NET_HEAD" > bad.cfg
    expect_error 2 "bad.cfg:7: bad value 'leakyrelu' for key 'activation' in [convolutional]: expected one of " info bad.cfg
}

@test "missing [net] section" {
    printf '[convolutional]\nfilters=2\n' > bad.cfg
    expect_error 2 "bad.cfg:1: the first section must be [net], found [convolutional]" info bad.cfg
}

@test "shape mismatch names the layer and line" {
    printf '%s[convolutional]\n[convolutional]\nstride=2\n[route]\nlayers=-1,-2\n' "$NET_HEAD" > bad.cfg
    expect_error 2 "bad.cfg:10: layer 2 [route]: inputs must have the same height and width: layer 1 is 1x4x4, layer 0 is 1x8x8" info bad.cfg
}

@test "empty output names the layer" {
    printf '%s[convolutional]\nfilters=2\nsize=9\n' "$NET_HEAD" > bad.cfg
    expect_error 2 "bad.cfg:6: layer 0" info bad.cfg
}

@test "missing cfg file" {
    expect_error 1 "nope.cfg: cannot open config" train nope.cfg
}

@test "binary junk as cfg" {
    head -c 300 /dev/urandom > junk.cfg
    run "$CDL" info junk.cfg
    [ "$status" -eq 2 ]
    [[ "$output" == "cdl: junk.cfg"* ]]
}

@test "--set with a bad layer index or form" {
    expect_error 2 "--set '9.filters=3': no layer 9" info "$REPO/cfg/digits.cfg" --set 9.filters=3
    expect_error 2 "expected SECTION.key=value" info "$REPO/cfg/digits.cfg" --set filters=3
    expect_error 2 "unknown key 'filterz' in [convolutional]" info "$REPO/cfg/digits.cfg" --set 0.filterz=3
}

@test "unknown command and unknown option are usage errors" {
    run "$CDL" trian
    [ "$status" -eq 2 ]
    [[ "$output" == *"cdl: unknown command 'trian'"* ]]
    expect_error 2 "unknown option '--epoch'" train "$REPO/cfg/digits.cfg" --epoch 3
    expect_error 2 "bad value 'x' for --epochs" train "$REPO/cfg/digits.cfg" --epochs x
}

@test "missing .data file" {
    expect_error 1 "nope.data" train "$REPO/cfg/digits.cfg" --data nope.data
}

@test "bad .data key names file and line" {
    printf 'classes=10\ntrian=x\n' > bad.data
    expect_error 2 "bad.data:2: unknown key 'trian'" train "$REPO/cfg/digits.cfg" --data bad.data
}

@test "dataset file that does not exist is a runtime error naming it" {
    printf 'classes=10\ntrain=missing.csv\n' > d.data
    run "$CDL" train "$REPO/cfg/digits.cfg" --data d.data
    [ "$status" -eq 1 ]
    [[ "$output" == *"missing.csv"* ]]
}

@test "missing checkpoint" {
    expect_error 1 "none.cdl: cannot open" eval none.cdl
    expect_error 1 "weights/latest.cdl: cannot open" predict x.png
}

@test "truncated checkpoint is refused" {
    train_digits 1
    head -c 5000 digits.cdl > cut.cdl
    expect_error 1 "cut.cdl: truncated checkpoint" eval cut.cdl
    expect_error 1 "cut.cdl: truncated checkpoint" train --resume cut.cdl
}

@test "corrupted checkpoint is refused" {
    train_digits 1
    cp digits.cdl bad.cdl
    printf '\x55' | dd of=bad.cdl bs=1 seek=3000 conv=notrunc 2>/dev/null
    expect_error 1 "bad.cdl: checkpoint is corrupted" info bad.cdl
}

@test "predict on a missing, empty, non-image and truncated image names the file" {
    train_digits 1
    : > empty.png
    echo hello > text.jpg
    gray_png ok.png 64 "x * y"
    /usr/bin/python3 -c 'from PIL import Image; Image.open("ok.png").save("ok.jpg")'
    head -c 300 ok.jpg > cut.jpg
    expect_error 1 "missing.png" predict digits.cdl missing.png
    expect_error 1 "empty.png" predict digits.cdl empty.png
    expect_error 1 "text.jpg: not a PNG or JPEG" predict digits.cdl text.jpg
    expect_error 1 "cut.jpg" predict digits.cdl cut.jpg
}

@test "predict keeps going after a bad file and exits 1" {
    train_digits 1
    gray_png ok.png 8 "x * 30"
    run "$CDL" predict digits.cdl missing.png ok.png --top 2
    [ "$status" -eq 1 ]
    [[ "$output" == *"cdl: missing.png"* ]]
    [[ "$output" == *"ok.png:"* ]]
}

@test "a truncated JPEG from python3-skimage is refused" {
    f=/usr/lib/python3/dist-packages/skimage/data/truncated.jpg
    train_digits 1
    expect_error 1 "$f" predict digits.cdl "$f"
}

@test "--gpu on a CPU build is a usage error" {
    expect_error 2 "built without a GPU backend" train "$REPO/cfg/digits.cfg" --gpu 0
}

@test "--cuda-graph without --gpu is a usage error" {
    expect_error 2 "--cuda-graph captures a GPU's training step: it needs --gpu N" \
        train "$REPO/cfg/digits.cfg" --cuda-graph
}

@test "bench --cuda-graph without --gpu, or with fewer than 2 warm-up steps, is a usage error" {
    expect_error 2 "--cuda-graph captures a GPU's training steps: it needs --gpu N and no --inference" \
        bench "$REPO/cfg/digits.cfg" --cuda-graph
    expect_error 2 "--cuda-graph needs --warmup 2 or more" \
        bench "$REPO/cfg/digits.cfg" --cuda-graph --gpu 0 --warmup 1
}

@test "--gpu on a CPU build is the same one-line usage error in every command that runs a model" {
    train_digits 1
    gray_png x.png 8 "16 * x"
    local refusal="this cdl was built without a GPU backend (make GPU=1)"
    expect_error 2 "$refusal" eval digits.cdl --gpu 0
    expect_error 2 "$refusal" predict digits.cdl x.png --gpu 0
    expect_error 2 "$refusal" bench "$REPO/cfg/digits.cfg" --steps 1 --gpu 0
    expect_error 2 "$refusal" bench digits.cdl --inference --steps 1 --gpu 0
    expect_error 2 "$refusal" profile "$REPO/cfg/digits.cfg" --iters 1 --gpu 0
    write_text_data
    printf '[net]\nseq=8\nbatch=4\nepochs=1\n[embedding]\noutput=8\n[linear]\ntie=1\n[softmax]\n' \
        > words.cfg
    "$CDL" train words.cfg --data corpus.data --out words.cdl --threads 1 2>/dev/null
    expect_error 2 "$refusal" predict words.cdl --prompt "the" --tokens 4 --gpu 0
}

@test "int8 runs on the CPU only: quantize --gpu and an int8 model with --gpu are refused" {
    train_digits 1
    expect_error 2 "int8 runs on the CPU only" quantize digits.cdl -o q.cdl --gpu 0
    "$CDL" quantize digits.cdl -o q.cdl >/dev/null
    gray_png x.png 8 "16 * x"
    expect_error 2 "q.cdl: int8 runs on the CPU only" predict q.cdl x.png --gpu 0
    expect_error 2 "q.cdl: int8 runs on the CPU only" bench q.cdl --inference --gpu 0
}

@test "absurd sizes are refused before allocating" {
    expect_error 2 "bad value '2147483647' for key 'batch' in [net]: expected an integer in -16777216..16777216" train "$REPO/cfg/digits.cfg" --set net.batch=2147483647
    expect_error 2 "fewer than batch=16777216" train "$REPO/cfg/digits.cfg" --set net.batch=16777216
    expect_error 2 "layer 3 [connected]: the net would have more than 268435456 parameters" info "$REPO/cfg/digits.cfg" --set 3.output=16777216
    expect_error 2 "[convolutional] is too large: 4503599627370496 weights" info "$REPO/cfg/digits.cfg" --set 0.size=16777216
}

@test "resume with nothing to do into a new --out is a notice naming the checkpoint, not an error" {
    train_digits 1
    run "$CDL" train --resume digits.cdl --epochs 1 --out other.cdl
    echo "status $status, output: $output"
    [ "$status" -eq 0 ]
    [ "${#lines[@]}" -eq 1 ]
    [[ "${lines[0]}" == "cdl: digits.cdl already has 1 epochs; nothing to do"* ]]
}

@test "--out naming a directory fails before any training" {
    mkdir outdir
    run "$CDL" train "$REPO/cfg/digits.cfg" --out outdir
    [ "$status" -eq 2 ]
    [ "${#lines[@]}" -eq 1 ]
    [[ "$output" == "cdl: outdir: --out must name a checkpoint file, not a directory" ]]
}

@test "darknet list labels found twice in a path are reported" {
    mkdir -p img/cat_dog img/dog
    gray_png img/cat_dog/a.png 8 "x * 9"
    gray_png img/dog/b.png 8 "y * 9"
    printf 'img/cat_dog/a.png\nimg/dog/b.png\n' > train.list
    printf 'cat\ndog\n' > pets.names
    printf 'classes=2\ntrain=train.list\nnames=pets.names\n' > pets.data
    sed 's/^batch=32/batch=2/; s/^output=10/output=2/' "$REPO/cfg/digits.cfg" > pets.cfg
    run "$CDL" train pets.cfg --data pets.data --epochs 1 --out pets.cdl
    [ "$status" -eq 0 ]
    [[ "$output" == *"cdl: warning: 1 training image paths contain more than one class name (first: img/cat_dog/a.png)"* ]]
}
