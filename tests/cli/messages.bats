#!/usr/bin/env bats
# Messages a user meets (issue 43, item 8): one line that names the file (and line) and the
# reason, exit 2 for usage and config, 1 for runtime; check lists every problem at once; the
# documented link line links.
load helpers

@test "train BAD.cfg without a .data beside it names the cfg's error first, exit 2" {
    printf '[net]\nbatch=abc\nwidth=8\nheight=8\nchannels=1\n[connected]\noutput=3\n[softmax]\n' > bad.cfg
    run "$CDL" train bad.cfg
    echo "$output"
    [ "$status" -eq 2 ]
    [ "${#lines[@]}" -eq 1 ]
    [ "$output" = "cdl: bad.cfg:2: bad value 'abc' for key 'batch' in [net]: expected an integer in -16777216..16777216 (and bad.data: cannot open data file: No such file or directory)" ]
}

@test "check lists every bad value of the cfg, not only the first" {
    printf '[net]\nbatch=abc\nwidth=8\nheight=8\nchannels=1\nmomentum=x\n[connected]\noutput=10\nbogus=2\n[softmax]\n' > bad.cfg
    run "$CDL" check bad.cfg --data "$REPO/cfg/digits.data"
    echo "$output"
    [ "$status" -eq 2 ]
    [[ "$output" == *"cdl: bad.cfg:2: bad value 'abc' for key 'batch' in [net]"* ]]
    [[ "$output" == *"cdl: bad.cfg:6: bad value 'x' for key 'momentum' in [net]"* ]]
    [[ "$output" == *"cdl: bad.cfg:9: unknown key 'bogus' in [connected]"* ]]
    [[ "$output" == *"3 problems: train would refuse this"* ]]
}

@test "check goes on past a names= file it cannot read, listing the .data's other problems" {
    printf 'classes=10\ntrain=missing.csv\nnames=missing.names\n' > d.data
    run "$CDL" check "$REPO/cfg/digits.cfg" --data d.data
    echo "$output"
    [ "$status" -eq 2 ]
    [[ "$output" == *"d.data:3: cannot open names file 'missing.names'"* ]]
    [[ "$output" == *"d.data: train=missing.csv: cannot read"* ]]
    [[ "$output" == *"2 problems"* ]]
    # without classes= the names give the count: nothing more can be checked
    printf 'train=missing.csv\nnames=missing.names\n' > n.data
    run "$CDL" check "$REPO/cfg/digits.cfg" --data n.data
    [ "$status" -eq 2 ]
    [[ "$output" == *"n.data:2: cannot open names file 'missing.names'"* ]]
}

@test "a long path's message keeps its reason" {
    long=$(printf 'directory%.0s/' $(seq 200))
    run "$CDL" train "${long}x.cfg"
    [ "$status" -eq 1 ]
    [ "${#lines[@]}" -eq 1 ]
    [[ "$output" == "cdl: directory/directory/"*" [...] "*"/directory/x.cfg: cannot open config: No such file or directory" ]]
}

@test "predict DIR IMG says DIR is a directory, exit 2" {
    mkdir runs
    gray_png one.png 8 'x * 30' >/dev/null
    run "$CDL" predict runs one.png
    echo "$output"
    [ "$status" -eq 2 ]
    [ "$output" = "cdl: runs: a directory, not a model or an image: name the checkpoint in it (runs/latest.cdl is the last one train wrote there)" ]
}

@test "a text the .data's comment says a script writes: the message names the script" {
    mkdir cfg
    cp "$REPO/cfg/kjv.data" cfg/
    run "$CDL" train "$REPO/cfg/gpt_tiny.cfg" --data cfg/kjv.data
    echo "$output"
    [ "$status" -eq 1 ]
    [[ "$output" == "cdl: "*"kjv.txt: cannot open text: No such file or directory; cfg/kjv.data says to write it first with scripts/text-data.sh" ]]
}

@test "train cfg/resnet.cfg names the zoo's nearest cfgs" {
    cd "$REPO"
    run "$CDL" train cfg/resnet.cfg
    [ "$status" -eq 1 ]
    [ "$output" = "cdl: cfg/resnet.cfg: cannot open config: No such file or directory; the nearest are cfg/resnet18.cfg, cfg/resnet34.cfg, cfg/resnet50.cfg, cfg/resnet18_cifar.cfg" ]
}

@test "info names oneDNN for the convolutions that run on it in bf16" {
    grep -qE 'avx512_bf16|amx_bf16' /proc/cpuinfo || skip "no bf16 instructions: bf16 runs on the reference"
    run "$CDL" info "$REPO/cfg/resnet18_cifar.cfg" --set net.precision=bf16
    [ "$status" -eq 0 ]
    [ "$(grep -c 'convolutional.*engine dnnl$' <<< "$output")" -eq 20 ]
    [[ "$output" != *"engine ref"* && "$output" != *"engine wino"* ]]
}

@test "the link line docs/library.md writes out links a program against libcdl.a" {
    [ -f "$REPO/libcdl.a" ] || skip "libcdl.a is not built (make)"
    line=$(sed -n '/^    cc prog.c -Isrc/,/-fopenmp$/p' "$REPO/docs/library.md" | tr -d '\\\n')
    [ -n "$line" ]
    cd "$REPO"
    eval "${line/prog.c/tests/public/link_check.c} -o $WORK/link_check"
    run "$WORK/link_check" cfg/digits.cfg
    [ "$status" -eq 0 ]
}
