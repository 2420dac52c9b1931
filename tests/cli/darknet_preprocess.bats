#!/usr/bin/env bats
# Loading darknet .weights makes cdl compute as darknet does unless the cfg chose otherwise
# (issue 14 item 9): batch norm (bn_darknet=1) and darknet predict's framing (letterbox=1), so
# darknet's own cfgs give darknet's numbers without editing; predict, eval and export take --set.
load helpers
load darknet_helpers

@test "darknet's tiny.cfg, unedited, with .weights predicts the photo as darknet does" {
    cp /usr/share/darknet/cfg/tiny.cfg tiny.cfg
    write_darknet_data 1000
    random_weights tiny.cfg tiny.weights --seed 3 --variances 0.5,2
    darknet classifier predict darknet.data tiny.cfg tiny.weights "$PHOTO" 2>/dev/null |
        head -5 > darknet.txt
    run "$CDL" predict tiny.cfg --weights tiny.weights "$PHOTO" --top 5
    [ "$status" -eq 0 ]
    [[ "${lines[0]}" == "cdl: --weights tiny.weights: darknet 0.2.0 weights (seen 0 images); as darknet computes, bn_darknet=1, letterbox=1 (not set by the cfg; --set net.KEY=0 keeps cdl's)" ]]
    printf '%s\n' "${lines[@]:1}" > cdl.txt
    run compare_top darknet.txt cdl.txt
    echo "$output"
    [ "$status" -eq 0 ]
}

@test "--set net.letterbox=0 keeps cdl's plain resize, says so, and misses darknet's numbers" {
    cp /usr/share/darknet/cfg/tiny.cfg tiny.cfg
    write_darknet_data 1000
    random_weights tiny.cfg tiny.weights --seed 3 --variances 0.5,2
    darknet classifier predict darknet.data tiny.cfg tiny.weights "$PHOTO" 2>/dev/null |
        head -5 > darknet.txt
    run "$CDL" predict tiny.cfg --weights tiny.weights --set net.letterbox=0 "$PHOTO" --top 5
    [ "$status" -eq 0 ]
    [[ "${lines[0]}" == *"weights (seen 0 images); as darknet computes, bn_darknet=1 (not set by the cfg; --set net.KEY=0 keeps cdl's)" ]]
    printf '%s\n' "${lines[@]:1}" > cdl.txt
    run compare_top darknet.txt cdl.txt
    [ "$status" -ne 0 ]
}

@test "a cfg that sets its framing (center_crop) and bn_darknet keeps them" {
    sed 's/^\[net\]$/[net]\ncenter_crop=1\nbn_darknet=0/' /usr/share/darknet/cfg/tiny.cfg > tiny.cfg
    random_weights tiny.cfg tiny.weights --seed 3 --variances 0.5,2
    run "$CDL" predict tiny.cfg --weights tiny.weights "$PHOTO" --top 1
    [ "$status" -eq 0 ]
    [[ "${lines[0]}" == "cdl: --weights tiny.weights: darknet 0.2.0 weights (seen 0 images)" ]]
}

@test "the switch is kept in the checkpoint a run from darknet .weights writes" {
    "$CDL" export darknet "$REPO/cfg/digits.cfg" -o d.weights >/dev/null
    "$CDL" train "$REPO/cfg/digits.cfg" --weights d.weights --epochs 1 --out from_darknet.cdl \
        --log-every 1000 2>/dev/null
    train_digits 1
    # A wide image: letterboxed (kept aspect, 0.5 above and below) or stretched to 8x8.
    /usr/bin/python3 -c "
from PIL import Image
Image.frombytes('L', (16, 8), bytes((x * 16 + y * 7) % 256 for y in range(8) for x in range(16))).save('wide.png')"
    for model in from_darknet digits; do
        "$CDL" predict $model.cdl wide.png --json --top 10 > $model.framed.json
        "$CDL" predict $model.cdl wide.png --json --top 10 --no-crop > $model.plain.json
    done
    run cmp from_darknet.framed.json from_darknet.plain.json
    [ "$status" -eq 1 ]
    cmp digits.framed.json digits.plain.json
}

@test "predict and export take --set with a CFG, and name the option in its errors" {
    run "$CDL" predict "$REPO/cfg/digits.cfg" --set net.batch=abc x.png
    [ "$status" -eq 2 ]
    [ "$output" = "cdl: --set net.batch=abc: bad value 'abc' for key 'batch' in [net]: expected an integer in -16777216..16777216" ]
    run "$CDL" export onnx "$REPO/cfg/digits.cfg" --set 0.filters=0 -o x.onnx
    [ "$status" -eq 2 ]
    [ "$output" = "cdl: --set 0.filters=0: layer 0: [convolutional] filters=0: expected at least 1" ]
    "$CDL" export darknet "$REPO/cfg/digits.cfg" -o base.weights >/dev/null
    run "$CDL" export darknet "$REPO/cfg/digits.cfg" --set 0.filters=8 -o narrow.weights
    [ "$status" -eq 0 ]
    [ "$(stat -c %s narrow.weights)" -lt "$(stat -c %s base.weights)" ]
    run "$CDL" export npy "$REPO/cfg/digits.cfg" --set 0.filters=8 npy
    [ "$status" -eq 0 ]
    gray_png seven.png digit 7 >/dev/null
    run "$CDL" predict "$REPO/cfg/digits.cfg" --set 3.output=3 seven.png --top 10 --json
    [ "$status" -eq 0 ]
    [ "$(echo "$output" | /usr/bin/python3 -c 'import json,sys; print(len(json.load(sys.stdin)[0]["top"]))')" -eq 3 ]
}

@test "--set with a checkpoint is refused by predict and export" {
    train_digits 1
    gray_png seven.png digit 7 >/dev/null
    run "$CDL" predict digits.cdl --set net.letterbox=1 seven.png
    [ "$status" -eq 2 ]
    [ "$output" = "cdl: --set applies to cfg files, not checkpoints" ]
    run "$CDL" export onnx digits.cdl --set net.letterbox=1
    [ "$status" -eq 2 ]
    [ "$output" = "cdl: --set applies to cfg files, not checkpoints" ]
}
