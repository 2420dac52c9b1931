#!/usr/bin/env bats
# cdl augment: a PNG grid of training samples as the network sees them.
load helpers

# Prints "WIDTH HEIGHT MODE" of a PNG.
png_info() {
    /usr/bin/python3 -c 'import sys; from PIL import Image; i = Image.open(sys.argv[1]); print(i.size[0], i.size[1], i.mode)' "$1"
}

@test "augment writes a grid of n tiles: gap 2, zoomed tiles, ceil(n/cols) rows" {
    run "$CDL" augment "$REPO/cfg/digits.cfg" --data "$REPO/cfg/digits.data" -o grid.png \
        --n 5 --cols 3 --zoom 2 --set net.pad=1 --set net.flip=1 --set net.angle=10
    [ "$status" -eq 0 ]
    # 3 columns of 16-pixel tiles: 2 + 3 * (16 + 2) = 56; 2 rows: 2 + 2 * 18 = 38.
    [ "$(png_info grid.png)" = "56 38 L" ]
}

@test "augment defaults to 16 samples in a 4x4 grid" {
    run "$CDL" augment "$REPO/cfg/digits.cfg" --data "$REPO/cfg/digits.data" -o grid.png
    [ "$status" -eq 0 ]
    [ "$(png_info grid.png)" = "42 42 L" ]
}

@test "augment without augmentation keys draws the samples themselves" {
    run "$CDL" augment "$REPO/cfg/digits.cfg" --data "$REPO/cfg/digits.data" -o grid.png \
        --n 2 --cols 2
    [ "$status" -eq 0 ]
    /usr/bin/python3 - "$REPO" <<'PY'
import gzip, sys
import numpy as np
from PIL import Image
rows = gzip.open(sys.argv[1] + "/data/digits.csv.gz", "rt").read().split()
g = np.asarray(Image.open("grid.png"), dtype=int)
for i in range(2):
    want = np.rint(np.array([float(t) for t in rows[i].split(",")[:64]]).reshape(8, 8) / 16 * 255)
    tile = g[2:10, 2 + i * 10:10 + i * 10]
    assert (tile == want).all(), (i, tile, want)
assert (g[0] == 255).all() and (g[:, 10:12] == 255).all()  # white gaps
PY
}

@test "augment undoes mean/std normalisation for display" {
    "$CDL" augment "$REPO/cfg/digits.cfg" --data "$REPO/cfg/digits.data" -o plain.png --n 4
    run "$CDL" augment "$REPO/cfg/digits.cfg" --data "$REPO/cfg/digits.data" -o norm.png --n 4 \
        --set net.mean=0.5 --set net.std=0.25
    [ "$status" -eq 0 ]
    /usr/bin/python3 -c '
import numpy as np
from PIL import Image
a, b = (np.asarray(Image.open(f), dtype=int) for f in ("plain.png", "norm.png"))
assert a.shape == b.shape and np.abs(a - b).max() <= 1
'
}

@test "augment draws depend on the seed and the epoch only" {
    keys=(--set net.pad=2 --set net.flip=1 --set net.brightness=0.5 --set net.erasing=0.5)
    cfg="$REPO/cfg/digits.cfg"
    data="$REPO/cfg/digits.data"
    "$CDL" augment "$cfg" --data "$data" -o a.png --seed 7 "${keys[@]}"
    "$CDL" augment "$cfg" --data "$data" -o b.png --seed 7 "${keys[@]}"
    "$CDL" augment "$cfg" --data "$data" -o c.png --seed 8 "${keys[@]}"
    "$CDL" augment "$cfg" --data "$data" -o d.png --seed 7 --epoch 1 "${keys[@]}"
    cmp a.png b.png
    ! cmp -s a.png c.png
    ! cmp -s a.png d.png
}

@test "augment draws a 3-channel net's input in colour" {
    run "$CDL" augment "$REPO/cfg/digits.cfg" --data "$REPO/cfg/digits.data" -o rgb.png \
        --n 1 --set net.channels=3 --set net.hue=0.2
    [ "$status" -eq 0 ]
    [ "$(png_info rgb.png)" = "12 12 RGB" ]
}

@test "augment --eval shows the eval framing" {
    run "$CDL" augment "$REPO/cfg/digits.cfg" --data "$REPO/cfg/digits.data" -o eval.png \
        --n 1 --eval --set net.width=16 --set net.height=12 --set net.letterbox=1
    [ "$status" -eq 0 ]
    # The 8x8 digit fits as 12x12 centered in 16x12: two 0.5-gray columns each side.
    /usr/bin/python3 -c '
import numpy as np
from PIL import Image
g = np.asarray(Image.open("eval.png"), dtype=int)
assert g.shape == (16, 20)
assert (g[2:14, 2:4] == 128).all() and (g[2:14, 16:18] == 128).all()
'
}

@test "augment needs a cfg, --data and -o" {
    run "$CDL" augment "$REPO/cfg/digits.cfg" --data "$REPO/cfg/digits.data"
    [ "$status" -eq 2 ]
    [ "$output" = "cdl: augment needs a CFG, --data and -o; see --help" ]
    run "$CDL" augment --data "$REPO/cfg/digits.data" -o x.png
    [ "$status" -eq 2 ]
}

@test "augment reports a missing data file, a bad key and a bad option value" {
    run "$CDL" augment "$REPO/cfg/digits.cfg" --data missing.data -o x.png
    [ "$status" -eq 1 ]
    [[ "$output" == "cdl: missing.data"* ]]
    run "$CDL" augment "$REPO/cfg/digits.cfg" --data "$REPO/cfg/digits.data" -o x.png \
        --set net.hue=0.9
    [ "$status" -eq 2 ]
    [[ "$output" == *"bad value '0.9' for key 'hue' in [net]: must be in [0, 0.5]" ]]
    run "$CDL" augment "$REPO/cfg/digits.cfg" --data "$REPO/cfg/digits.data" -o x.png --n 0
    [ "$status" -eq 2 ]
    [[ "$output" == *"bad value '0' for --n"* ]]
    [ ! -e x.png ]
}

@test "augment refuses inputs it cannot draw and outputs it cannot write" {
    run "$CDL" augment "$REPO/cfg/digits.cfg" --data "$REPO/cfg/digits.data" -o x.png \
        --set net.channels=2
    [ "$status" -eq 2 ]
    [[ "$output" == *"cannot draw 2-channel inputs"* ]]
    run "$CDL" augment "$REPO/cfg/digits.cfg" --data "$REPO/cfg/digits.data" -o no/such/dir/x.png
    [ "$status" -eq 1 ]
    [[ "$output" == "cdl: no/such/dir/x.png"* ]]
}
