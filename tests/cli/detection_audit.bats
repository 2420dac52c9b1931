#!/usr/bin/env bats
# cdl eval --audit: a detector trained on 48 images of white and red squares (two per image)
# audits its first 12 after three labels were corrupted on purpose: a class swapped, a box
# deleted, a box shifted by 0.6 of its width. Those three rank first, with their kinds and label
# lines; the clean labels give no suspect at all.
load helpers

# Writes set/images/N.png, set/labels/N.txt, det.data (valid: the first 12 images) and tiny2.cfg,
# then trains det.cdl (150 epochs, a few seconds).
squares_detector() {
    /usr/bin/python3 - <<'PY'
import os, random
from PIL import Image
random.seed(5)
os.makedirs("set/images"); os.makedirs("set/labels")
colors = [(240, 240, 240), (230, 40, 40)]
for i in range(48):
    img = Image.new("RGB", (48, 48), (20, 20, 30))
    lines, boxes = [], []
    for k in range(2):
        for _ in range(50):
            s = random.randint(10, 16)
            x0, y0 = random.randint(0, 48 - s), random.randint(0, 48 - s)
            if all(x0 + s <= a or a + t <= x0 or y0 + s <= b or b + t <= y0 for a, b, t in boxes):
                break
        boxes.append((x0, y0, s))
        c = random.randint(0, 1)
        img.paste(colors[c], (x0, y0, x0 + s, y0 + s))
        lines.append(f"{c} {(x0 + s / 2) / 48:.6f} {(y0 + s / 2) / 48:.6f} {s / 48:.6f} {s / 48:.6f}\n")
    img.save(f"set/images/{i}.png")
    open(f"set/labels/{i}.txt", "w").write("".join(lines))
open("train.txt", "w").write("".join(f"set/images/{i}.png\n" for i in range(48)))
open("valid.txt", "w").write("".join(f"set/images/{i}.png\n" for i in range(12)))
open("det.names", "w").write("white\nred\n")
open("det.data", "w").write("classes=2\ntrain=train.txt\nvalid=valid.txt\nnames=det.names\n")
PY
    write_cfg tiny2.cfg <<'CFG'
[net]
batch=8
width=48
height=48
channels=3
learning_rate=0.003
optimizer=adam

[convolutional]
filters=16
size=3
pad=1
activation=leaky

[maxpool]
size=2
stride=2

[convolutional]
filters=32
size=3
pad=1
activation=leaky

[maxpool]
size=2
stride=2

[convolutional]
filters=32
size=3
pad=1
activation=leaky

[convolutional]
filters=7
size=1
activation=linear

[yolo]
mask=0
anchors=13,13
classes=2
num=1
max=4
CFG
    "$CDL" train tiny2.cfg --data det.data --epochs 150 --out det.cdl --threads 1 \
        --log-every 100000 > /dev/null 2>&1
}

# Image 1's first box gets the other class, image 4 loses its second box, image 7's first box
# moves right by 0.6 of its width (after a blank line, so that it is on line 2).
corrupt_labels() {
    /usr/bin/python3 - <<'PY'
def read(i): return open(f"set/labels/{i}.txt").read().splitlines()
def write(i, lines): open(f"set/labels/{i}.txt", "w").write("\n".join(lines) + "\n")
lines = read(1); f = lines[0].split(); f[0] = str(1 - int(f[0])); lines[0] = " ".join(f); write(1, lines)
lines = read(4); del lines[1]; write(4, lines)
lines = read(7); f = lines[0].split(); f[1] = f"{float(f[1]) + 0.6 * float(f[3]):.6f}"
lines[0] = " ".join(f); write(7, [""] + lines)
PY
}

@test "eval --audit ranks a swapped class, a deleted box and a shifted box first" {
    squares_detector
    run "$CDL" eval det.cdl --data det.data --audit --threads 1
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == *"labels most likely wrong (0;"* ]]
    corrupt_labels
    run "$CDL" eval det.cdl --data det.data --audit --audit-sheet sheet.png --threads 1
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == *"labels most likely wrong (3;"* ]]
    # the three, in any order, ranks 1 to 3: kind, label class, found class, file:line (image)
    top=$(grep -E '^ +[123] ' <<< "$output" | awk '{ print $2, $4, $5, $8, $9 }' | sort)
    expected=$(printf '%s\n' \
        "box white white set/labels/7.txt:2 (set/images/7.png)" \
        "class red white set/labels/1.txt:1 (set/images/1.png)" \
        "missing - red set/labels/4.txt (set/images/4.png)" | sort)
    [ "$top" = "$expected" ]
    [[ "$output" == *"sheet.png: 3 suspects drawn"* ]]
    # one row of three 160-pixel tiles with 4-pixel gaps and 14-pixel captions
    run /usr/bin/python3 -c 'from PIL import Image; print(Image.open("sheet.png").size)'
    [ "$output" = "(496, 182)" ]
}

@test "eval --audit --json lists the suspects under audit" {
    squares_detector
    corrupt_labels
    "$CDL" eval det.cdl --data det.data --audit --audit-top 2 --json --threads 1 > eval.json
    run /usr/bin/python3 -c '
import json
audit = json.load(open("eval.json"))["audit"]
print(len(audit), audit[0]["rank"], audit[0]["kind"], audit[0]["line"])'
    echo "$output"
    [ "$output" = "2 1 class 1" ]
}

@test "the audit options are refused without --audit, and on a classifier" {
    train_digits
    run "$CDL" eval digits.cdl --audit
    [ "$status" -eq 2 ]
    [ "$output" = "cdl: --audit: digits.cdl is not a detector (it has no [yolo] or [region] layer)" ]
    squares_detector
    run "$CDL" eval det.cdl --data det.data --audit-sheet s.png
    [ "$status" -eq 2 ]
    [ "$output" = "cdl: --audit-top and --audit-sheet go with --audit" ]
    [ ! -e s.png ]
}
