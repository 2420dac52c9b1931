#!/usr/bin/env bats
# Config text (issue 14 items 2 and 6): a sequence net's [net] shape, darknet .weights headers,
# the UTF-8 byte order mark in every text file cdl reads, duplicate keys, and --set errors.
load helpers

BOM=$'\xef\xbb\xbf'

# A tiny image cfg for 8x8 gray images with N classes (default 2).
write_small_cfg() {
    printf '%s[net]\nbatch=2\nwidth=8\nheight=8\nchannels=1\n\n[connected]\noutput=%d\n\n[softmax]\n' \
        "${2:-}" "${3:-2}" > "$1"
}

# Two 8x8 gray PNGs, cat/a.png and dog/b.png.
write_two_images() {
    mkdir -p cat dog
    gray_png cat/a.png 8 'x * 30'
    gray_png dog/b.png 8 'y * 30'
}

@test "a sequence net whose height contradicts seq is refused naming the line (info, bench, profile)" {
    printf '[net]\nbatch=2\nseq=8\nheight=16\n\n[linear]\noutput=256\n\n[softmax]\n' > seq.cfg
    for cmd in info bench profile check; do
        run "$CDL" $cmd seq.cfg
        [ "$status" -eq 2 ]
        [[ "$output" == *"cdl: seq.cfg:4: bad value '16' for key 'height' in [net]: contradicts seq=8: a sequence net's input is 1 x seq x inputs (here 1x8x1, CxHxW); leave width, height and channels out"* ]]
    done
    run "$CDL" info seq.cfg --set net.height=8 --set net.width=1 --set net.channels=1
    [ "$status" -eq 0 ]
    [ "${lines[0]}" = "seq.cfg: input 1x8x1 (CxHxW), batch 2, subdivisions 1" ]
    run "$CDL" info seq.cfg --set net.height=8 --set net.width=4
    [ "$status" -eq 2 ]
    [[ "$output" == "cdl: --set net.width=4: bad value '4' for key 'width' in [net]: contradicts seq=8"* ]]
    printf '[net]\ntime_steps=4\nchannels=3\n\n[linear]\noutput=8\n\n[softmax]\n' > ts.cfg
    run "$CDL" info ts.cfg
    [ "$status" -eq 2 ]
    [[ "$output" == "cdl: ts.cfg:3: bad value '3' for key 'channels' in [net]: contradicts time_steps=4"* ]]
}

@test "every cfg regression input of the fuzzers is refused naming its file and line, or runs" {
    n=0
    for f in "$REPO"/tests/fuzz/regressions/cfg/*; do
        for cmd in info bench profile; do
            run "$CDL" $cmd "$f"
            echo "$cmd $f: $output"
            # a valid input that once tripped a sanitizer runs; the others are refused
            [ "$status" -eq 0 ] || [[ "$status" -eq 2 && "$output" == "cdl: $f:"[0-9]* ]]
        done
        n=$((n + 1))
    done
    [ "$n" -ge 1 ]
}

@test "every darknet_weights regression input of the fuzzers is refused naming its file" {
    n=0
    for f in "$REPO"/tests/fuzz/regressions/darknet_weights/*; do
        run "$CDL" export npy "$REPO/cfg/digits.cfg" --weights "$f" out
        echo "$f: $output"
        [ "$status" -eq 2 ]
        [[ "$output" == "cdl: $f: "* ]]
        n=$((n + 1))
    done
    [ "$n" -ge 1 ]
}

@test "a --weights file whose header is no darknet version is refused naming the file" {
    printf '\xff\xff\xff\x7f\x05\x00\x00\x00\x00\x00\x00\x00' > big.weights
    run "$CDL" predict "$REPO/cfg/digits.cfg" --weights big.weights x.png
    [ "$status" -eq 2 ]
    [ "$output" = "cdl: big.weights: not darknet .weights (its header says version 2147483647.5.0; each part of darknet's is in 0..65535)" ]
    printf '\x00\x00\x00\x00\xfe\xff\xff\xff\x00\x00\x00\x00\x00\x00\x00\x00' > negative.weights
    run "$CDL" predict "$REPO/cfg/digits.cfg" --weights negative.weights x.png
    [ "$status" -eq 2 ]
    [ "$output" = "cdl: negative.weights: not darknet .weights (its header says version 0.-2.0; each part of darknet's is in 0..65535)" ]
    gray_png photo.png 8 'x'
    run "$CDL" train "$REPO/cfg/digits.cfg" --weights photo.png --epochs 1
    [ "$status" -eq 2 ]
    [[ "$output" == *"cdl: photo.png: not darknet .weights (its header says version "* ]]
}

@test "a UTF-8 BOM is accepted in a cfg, a .data file, a names file and a darknet list" {
    write_two_images
    write_small_cfg bom.cfg "$BOM"
    printf '%scat\ndog\n' "$BOM" > names.txt
    printf '%scat/a.png\ndog/b.png\n' "$BOM" > list.txt
    printf '%sclasses=2\nnames=names.txt\ntrain=list.txt\n' "$BOM" > bom.data
    run "$CDL" augment bom.cfg --data bom.data -o grid.png --n 2
    echo "$output"
    [ "$status" -eq 0 ]
    run "$CDL" check bom.cfg --data bom.data
    [ "$status" -eq 0 ]
}

@test "a UTF-8 BOM is accepted in an image CSV and a digits CSV" {
    write_two_images
    write_small_cfg small.cfg
    printf '%scat/a.png,0\ndog/b.png,1\n' "$BOM" > images.csv
    printf 'classes=2\ntrain=images.csv\n' > csv.data
    run "$CDL" augment small.cfg --data csv.data -o grid.png --n 2
    echo "$output"
    [ "$status" -eq 0 ]
    zcat "$REPO/data/digits.csv.gz" | head -40 > plain.csv
    { printf '%s' "$BOM"; cat plain.csv; } > digits.csv
    printf 'classes=10\ntrain=digits.csv\n' > digits.data
    run "$CDL" augment "$REPO/cfg/digits.cfg" --data digits.data -o grid.png --n 4
    echo "$output"
    [ "$status" -eq 0 ]
}

@test "a UTF-8 BOM at the start of a text corpus is not a token" {
    printf '[net]\nbatch=2\nseq=4\n\n[embedding]\noutput=8\n\n[linear]\noutput=3\n\n[softmax]\n' > text.cfg
    { printf '%s' "$BOM"; for i in $(seq 50); do printf 'abc'; done; } > corpus.txt
    printf 'type=text\ntrain=corpus.txt\nvalid_split=0.1\n' > text.data
    run "$CDL" check text.cfg --data text.data --json
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == *'"data_classes":3'* ]]
}

@test "a key given twice with two values is refused naming both lines; one value is a warning" {
    printf '[net]\nbatch=2\nwidth=8\nheight=8\nchannels=1\n\n[connected]\noutput=2\noutput=3\n\n[softmax]\n' > dup.cfg
    run "$CDL" info dup.cfg
    [ "$status" -eq 2 ]
    [ "$output" = "cdl: dup.cfg:9: duplicate key 'output' in [connected]: '3' here, '2' at line 8 (give it once)" ]
    printf '[net]\nbatch=2\nbatch=2\nwidth=8\nheight=8\nchannels=1\n\n[connected]\noutput=2\n\n[softmax]\n' > same.cfg
    run "$CDL" info same.cfg
    [ "$status" -eq 0 ]
    [ "${lines[0]}" = "cdl: same.cfg:3: warning: key 'batch' in [net] repeats line 2 with the same value" ]
}

@test "errors from --set name the option, not the cfg's line, in train, info and augment" {
    run "$CDL" train "$REPO/cfg/digits.cfg" --set net.batch=abc
    [ "$status" -eq 2 ]
    [ "$output" = "cdl: --set net.batch=abc: bad value 'abc' for key 'batch' in [net]: expected an integer in -16777216..16777216" ]
    run "$CDL" info "$REPO/cfg/digits.cfg" --set 0.filtres=3
    [ "$status" -eq 2 ]
    [[ "$output" == "cdl: --set 0.filtres=3: unknown key 'filtres' in [convolutional] (valid keys: "* ]]
    run "$CDL" info "$REPO/cfg/digits.cfg" --set 0.size=0
    [ "$status" -eq 2 ]
    [ "$output" = "cdl: --set 0.size=0: layer 0: [convolutional] size=0: expected at least 1" ]
    run "$CDL" augment "$REPO/cfg/digits.cfg" --data "$REPO/cfg/digits.data" -o g.png \
        --set net.flip=2
    [ "$status" -eq 2 ]
    [ "$output" = "cdl: --set net.flip=2: bad value '2' for key 'flip' in [net]: expected 0 or 1" ]
}

@test "a UTF-8 BOM is accepted at the start of a --log file given to plot (cJSON skips it)" {
    "$CDL" train "$REPO/cfg/digits.cfg" --epochs 1 --out d.cdl --threads 1 --log run.jsonl \
        --log-every 4 2>/dev/null
    { printf '%s' "$BOM"; cat run.jsonl; } > bom.jsonl
    run "$CDL" plot bom.jsonl -o curves.png
    echo "$output"
    [ "$status" -eq 0 ]
    [ -s curves.png ]
}
