#!/usr/bin/env bats
# The data loader seen from the command line: image-folder datasets read by worker threads,
# --skip-bad, and predict batching photos through the model's eval preprocessing.
load helpers

# Writes an image folder DIR/{across,down}/NN.png of N 12x12 gray stripe images per class
# (horizontal stripes for "across", vertical for "down", at a varying phase).
stripes_folder() {
    /usr/bin/python3 - "$1" "$2" <<'PY'
import os, sys
from PIL import Image
root, n = sys.argv[1], int(sys.argv[2])
for cls in ("across", "down"):
    os.makedirs(os.path.join(root, cls), exist_ok=True)
    for k in range(n):
        img = Image.new("L", (12, 12))
        for y in range(12):
            for x in range(12):
                t = y if cls == "across" else x
                img.putpixel((x, y), 230 if (t + k) % 4 < 2 else 20)
        img.save(os.path.join(root, cls, "%02d.png" % k))
PY
}

# A small conv net on 12x12 gray images with flips, so the loader augments.
stripes_cfg() {
    cat > stripes.cfg <<'EOF'
[net]
batch=8
width=12
height=12
channels=1
learning_rate=0.1
flip=1
[convolutional]
filters=4
size=3
pad=1
activation=relu
[maxpool]
size=2
stride=2
[connected]
output=2
activation=linear
[softmax]
EOF
}

@test "train reads an image folder with worker threads; the worker count changes nothing" {
    stripes_folder train 20
    stripes_folder valid 6
    stripes_cfg
    printf 'train=train\nvalid=valid\n' > stripes.data
    run "$CDL" train stripes.cfg --data stripes.data --epochs 2 --workers 2 --out w2.cdl
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == *"epoch 2/2: train loss "*", valid loss "*"saved w2.cdl"* ]]
    "$CDL" train stripes.cfg --data stripes.data --epochs 2 --workers 0 --out w0.cdl 2>/dev/null
    cmp w2.cdl w0.cdl
    run "$CDL" eval w2.cdl --json --workers 2
    [ "$status" -eq 0 ]
    [[ "$output" == *'"samples":12'* ]]
    [[ "$output" == *'"across"'*'"down"'* ]]
}

@test "an unreadable image fails training with its name; --skip-bad replaces and counts it" {
    stripes_folder train 20
    stripes_cfg
    printf 'not a png' > train/down/07.png
    printf 'train=train\n' > stripes.data
    run "$CDL" train stripes.cfg --data stripes.data --epochs 1 --workers 2
    echo "$output"
    [ "$status" -eq 1 ]
    [[ "${lines[-1]}" == "cdl: "*"train/down/07.png"* ]]
    run "$CDL" train stripes.cfg --data stripes.data --epochs 2 --workers 2 --skip-bad \
        --log run.jsonl
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(printf '%s\n' "$output" | grep -c 'skipped 1 unreadable samples')" -eq 2 ]
    /usr/bin/python3 -c '
import json
epochs = [r for r in map(json.loads, open("run.jsonl")) if r["type"] == "epoch"]
assert [r["skipped"] for r in epochs] == [1, 1], epochs
'
}

# A 3-channel classifier cfg for photos, with eval preprocessing (center crop, normalise).
photo_cfg() {
    cat > photo.cfg <<'EOF'
[net]
batch=1
width=32
height=32
channels=3
center_crop=1
mean=0.485,0.456,0.406
std=0.229,0.224,0.225
[convolutional]
filters=8
size=3
stride=2
pad=1
batch_normalize=1
activation=leaky
[avgpool]
[connected]
output=5
activation=linear
[softmax]
EOF
}

@test "predict batches the darknet photos, in argument order, with the same results as one by one" {
    photo_cfg
    photos=(/usr/share/darknet/data/*.jpg)
    run "$CDL" predict photo.cfg "${photos[@]}" --top 3 --batch 4
    [ "$status" -eq 0 ]
    [ "$(printf '%s\n' "$output" | grep -c '%')" -eq $((3 * ${#photos[@]})) ]
    [ "$(printf '%s\n' "$output" | grep -v '%' | tr -d ':' | tr '\n' ' ')" = "${photos[*]} " ]
    "$CDL" predict photo.cfg "${photos[@]}" --top 5 --batch 4 --json > batched.json
    "$CDL" predict photo.cfg "${photos[@]}" --top 5 --batch 1 --json > single.json
    /usr/bin/python3 -c '
import json
a, b = json.load(open("batched.json")), json.load(open("single.json"))
assert [r["file"] for r in a] == [r["file"] for r in b]
for x, y in zip(a, b):
    p = {t["index"]: t["probability"] for t in x["top"]}
    q = {t["index"]: t["probability"] for t in y["top"]}
    assert p.keys() == q.keys() and all(abs(p[k] - q[k]) < 1e-5 for k in p), (x, y)
'
}

@test "predict reports a bad photo and still classifies the others of its batch" {
    photo_cfg
    printf 'junk' > bad.jpg
    run "$CDL" predict photo.cfg /usr/share/darknet/data/dog.jpg bad.jpg \
        /usr/share/darknet/data/kite.jpg --top 2 --batch 3
    echo "$output"
    [ "$status" -eq 1 ]
    [[ "$output" == *"cdl: bad.jpg: "* ]]
    [ "$(printf '%s\n' "$output" | grep -c '%')" -eq 4 ]
    [[ "$output" == *"dog.jpg:"*"kite.jpg:"* ]]
}

@test "fashion.cfg from PNG files reaches exactly the accuracy it reaches from IDX (first 2000 images of each split, same order)" {
    run env CDL_BIN="$CDL" "$REPO/scripts/fashion-png-check.sh" --limit 2000 --epochs 2
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == *"IDX (in memory):"*"PNG folder (2 workers):"*"difference "* ]]
}
