#!/usr/bin/env bats
# --resume when the data changed since the checkpoint (issue 43, item 4): the run says what
# changed and continues after the epochs done, in the new data's steps; a checkpoint whose step
# its epochs do not account for is refused. Other rank counts are in dist.bats.
load helpers

# set_checkpoint_key CKPT KEY VALUE: rewrites one header value, the CRC made anew (a damaged or
# edited header that the checksum no longer catches).
set_checkpoint_key() {
    python3 - "$@" <<'PY'
import json, struct, sys, zlib
path, key, value = sys.argv[1:4]
b = open(path, "rb").read()
n = struct.unpack_from("<Q", b, 16)[0]
h = json.loads(b[24:24 + n])
h[key] = value
head = json.dumps(h, separators=(",", ":")).encode()
body = b[:16] + struct.pack("<Q", len(head)) + head + b[24 + n:-12]
open(path, "wb").write(body + struct.pack("<I", zlib.crc32(body)) + b[-8:])
PY
}

@test "a text halved since the checkpoint: the resumed run says so and trains epoch 2 of 2" {
    write_text_data
    write_text_cfg
    "$CDL" train text.cfg --data corpus.data --epochs 1 --out t.cdl --threads 1 2>/dev/null
    head -c "$(($(wc -c < corpus.txt) / 2))" corpus.txt > half.txt
    mv half.txt corpus.txt
    run "$CDL" train --resume t.cdl --epochs 2 --threads 1 --log-every 100000
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == *"warning: "*"corpus.data changed since t.cdl was written: "*" training tokens ("*" then), "*" validation tokens ("*" then); resuming continues after epoch 1 with "*" steps an epoch, and the validation split is drawn anew"* ]]
    [ "$(grep -c '^epoch 2/2: train loss' <<< "$output")" -eq 1 ]
    [[ "$output" != *"epoch 1/2"* && "$output" != *"nothing to do"* ]]
}

@test "a checkpoint whose step its epochs do not account for is refused, exit 2" {
    train_digits 1
    set_checkpoint_key digits.cdl step 200
    run "$CDL" train --resume digits.cdl --epochs 3
    echo "$output"
    [ "$status" -eq 2 ]
    [ "${#lines[@]}" -eq 1 ]
    [[ "$output" == "cdl: digits.cdl: its progress does not add up: step 200 is not 1 epochs of 44 steps and 0 samples of 32 a step; the header is damaged or was edited"* ]]
}

@test "an image folder that lost images: the resumed run names the change and the new validation split" {
    PER_CLASS=10 make_folder imgs cat dog fox
    write_small_cfg
    "$CDL" train small.cfg --data imgs/ --epochs 1 --out f.cdl --threads 1 2>/dev/null
    rm imgs/dog/[0-3].png
    run "$CDL" train --resume f.cdl --epochs 2 --threads 1
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == *"warning: "*"imgs"*" changed since f.cdl was written: 23 training samples (27 then); resuming continues after epoch 1 with 5 steps an epoch, and the validation split is drawn anew"* ]]
    [[ "$output" == *"epoch 2/2: train loss"* ]]
}

@test "the same data: no warning, and the resumed run ends as the straight one" {
    train_digits 1
    run "$CDL" train --resume digits.cdl --epochs 2 --threads 1 --log-every 1000
    [ "$status" -eq 0 ]
    [[ "$output" != *"warning"* ]]
    "$CDL" train "$REPO/cfg/digits.cfg" --epochs 2 --out straight.cdl --threads 1 2>/dev/null
    cmp straight.cdl digits.cdl
}
