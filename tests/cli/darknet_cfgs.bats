#!/usr/bin/env bats
# Every cfg of Debian's darknet package (/usr/share/darknet/cfg): cdl either builds it and runs a
# forward pass on a photo, or refuses it with exit code 2 and a message naming the section or key
# it does not support. scripts/darknet-compat.sh tries them all once (cdl info, then cdl predict
# CFG PHOTO) and its table is what the tests read; docs/darknet.md shows the same table.
load helpers

DARKNET_CFGS=/usr/share/darknet/cfg

setup_file() {
    "$BATS_TEST_DIRNAME/../../scripts/darknet-compat.sh" > "$BATS_FILE_TMPDIR/table.md"
}

# The table row of one cfg, "| NAME | OUTCOME | DETAILS |".
row() {
    grep "^| $1 |" "$BATS_FILE_TMPDIR/table.md"
}

@test "each darknet cfg runs a forward pass, or is refused with exit 2 naming a section or key" {
    local n=0
    for cfg in "$DARKNET_CFGS"/*.cfg; do
        name=$(basename "$cfg")
        line=$(row "$name")
        echo "$line"
        n=$((n + 1))
        case "$line" in
        "| $name | runs | "*) ;;
        "| $name | refused (exit 2) | $name:"[0-9]*": "*\[[a-z]*\]*) ;;
        *) false ;;
        esac
    done
    [ "$n" -gt 40 ]
    [ "$(grep -c '^| [^-]' "$BATS_FILE_TMPDIR/table.md")" -eq $((n + 1)) ]
}

@test "darknet's classifiers run" {
    for name in alexnet cifar darknet darknet19 darknet19_448 darknet53 darknet53_448 \
        densenet201 extraction extraction.conv extraction22k jnet-conv resnet18 resnet34 resnet50 \
        resnet101 resnet152 resnext50 resnext101-32x4d resnext152-32x4d tiny vgg-16 vgg-conv; do
        run row "$name.cfg"
        echo "$output"
        [[ "$output" == "| $name.cfg | runs | "* ]]
    done
}

@test "darknet's YOLOv3 and YOLOv2 detectors run; the older ones are refused by their section" {
    for name in yolov3 yolov3-tiny yolov3-spp yolov3-voc; do
        run row "$name.cfg"
        echo "$output"
        [[ "$output" == "| $name.cfg | runs | "*" MFLOPs |" ]] # random=1 is read (multi-scale)
    done
    for name in yolov2 yolov2-tiny yolov2-voc yolov2-tiny-voc; do
        run row "$name.cfg"
        echo "$output"
        [[ "$output" == "| $name.cfg | runs | "*"; ignored: 'absolute' in [region] |" ]]
    done
    run row yolo9000.cfg
    [[ "$output" == *"'tree' in [region]: hierarchical (tree) softmax is not supported |" ]]
    for pair in yolov1:local yolov1-tiny:detection t1.test:detection; do
        run row "${pair%%:*}.cfg"
        echo "$output"
        [[ "$output" == *"unsupported section [${pair##*:}]: "* ]]
    done
}

@test "darknet's GRU net (adam=1) runs; its batch-normalised RNNs are refused by that key" {
    run row gru.cfg
    echo "$output"
    [[ "$output" == "| gru.cfg | runs | "* ]]
    for name in rnn rnn.train; do
        run row "$name.cfg"
        echo "$output"
        [[ "$output" == *"| $name.cfg:15: unsupported value '1' for key 'batch_normalize' in [rnn]: "* ]]
    done
}

@test "resnet101's [cost] after [softmax] is accepted and its sse type reported as ignored" {
    run row resnet101.cfg
    [[ "$output" == *"| runs | "*"; ignored: 'type' in [cost] |" ]]
}

@test "docs/darknet.md's table is scripts/darknet-compat.sh's output" {
    tail -n +3 "$BATS_FILE_TMPDIR/table.md" > rows.md
    grep -F -x -f rows.md "$REPO/docs/darknet.md" > in_docs.md
    diff rows.md in_docs.md
}
