#!/usr/bin/env bats
# cdl predict on .npy tensors (the net's input before its mean/std, one result per row), and
# the name of the values --json reports: "probability" after a softmax, "logit" without one.
load helpers

# The .npy files are written by numpy (python3's).
numpy_or_skip() {
    python3 -c "import numpy" 2> /dev/null || skip "python3 has no numpy"
}

# small_cfg FILE [LAST]: an 8x8 grayscale net with mean/std, ending in LAST (default softmax).
small_cfg() {
    printf '[net]\nwidth=8\nheight=8\nchannels=1\nmean=0.5\nstd=0.25\n\n[convolutional]\nfilters=4\nsize=3\npad=1\nactivation=relu\n\n[connected]\noutput=3\nactivation=linear\n%s' \
        "${2-$'\n[softmax]\n'}" > "$1"
}

# npy FILE DTYPE D0 D1 ...: values (x * 30 + y * 7) % 256 / 255 of pixel (x, y), as gray_png
# FILE 8 "(x * 30 + y * 7)" decodes them, in every channel and row of that shape, as DTYPE.
npy() {
    python3 -c 'import sys, numpy as np
shape = [int(d) for d in sys.argv[3:]]
y, x = np.mgrid[0:shape[-2], 0:shape[-1]]
v = (((x * 30 + y * 7) % 256).astype(np.float32) / np.float32(255)).astype(sys.argv[2])
np.save(sys.argv[1], np.broadcast_to(v, shape))' "$@"
}

# same_values LINE...: the values of tops lines ("name [v, ..]") agree within 1e-6 (a row computed
# at another place of a batch, or in a batch of another size, may differ in the last bits).
same_values() {
    python3 -c 'import ast, sys
rows = [ast.literal_eval(line.split(" ", 1)[1]) for line in sys.argv[1:]]
bad = [r for r in rows if any(abs(a - b) > 1e-6 for a, b in zip(r, rows[0])) or len(r) != len(rows[0])]
sys.exit(1 if bad or not rows else 0)' "$@"
}

# tops FILE.json: each result's "file[row]" and its values by class index, one line each.
tops() {
    python3 -c 'import json, sys
for r in json.load(open(sys.argv[1])):
    values = {t["index"]: t.get("probability", t.get("logit")) for t in r["top"]}
    print(r["file"] + ("[%d]" % r["row"] if "row" in r else ""), [values[k] for k in sorted(values)])' "$1"
}

@test "a .npy tensor with or without a batch axis predicts as the image it holds, in argument order" {
    numpy_or_skip
    small_cfg n.cfg
    gray_png x.png 8 "(x * 30 + y * 7)"
    npy one.npy float32 1 8 8
    npy three.npy float32 3 1 8 8
    "$CDL" predict n.cfg x.png one.npy x.png three.npy --top 3 --json --batch 2 > p.json
    run tops p.json
    echo "$output"
    [ "${#lines[@]}" -eq 6 ]
    [[ "${lines[0]}" == "x.png ["* ]] && [[ "${lines[1]}" == "one.npy[0] ["* ]]
    [[ "${lines[2]}" == "x.png ["* ]] && [[ "${lines[5]}" == "three.npy[2] ["* ]]
    # the same values in every line: the .npy rows are normalised as the image is
    same_values "${lines[@]}"
    run "$CDL" predict n.cfg three.npy --top 1
    [ "${lines[0]}" = "three.npy[0]:" ]
}

@test "float16 and float64 .npy arrays are read as float32" {
    numpy_or_skip
    small_cfg n.cfg
    npy f2.npy float16 2 1 8 8
    npy f8.npy float64 2 1 8 8
    python3 -c 'import numpy as np; np.save("f4.npy", np.load("f2.npy").astype(np.float32))'
    for t in f4 f2 f8; do "$CDL" predict n.cfg $t.npy --top 3 --json > $t.json; done
    diff <(tops f4.json | sed 's/^f4//') <(tops f2.json | sed 's/^f2//')
    # float64 values of x/255 round to float32's x/255: the same outputs as the image route
    gray_png x.png 8 "(x * 30 + y * 7)"
    "$CDL" predict n.cfg x.png --top 3 --json > png.json
    same_values "$(tops f8.json | sed -n 1p)" "$(tops png.json)"
}

@test "a .npy of another shape, dtype or layout is refused with one line naming the file (exit 2)" {
    numpy_or_skip
    small_cfg n.cfg
    npy wide.npy float32 1 8 9
    run "$CDL" predict n.cfg wide.npy
    [ "$status" -eq 2 ]
    [ "$output" = "cdl: wide.npy: shape (1, 8, 9): expected the net's input (1, 8, 8), or a batch (N, 1, 8, 8), of float32 in C order" ]
    python3 -c 'import numpy as np; np.save("flat.npy", np.zeros(64, np.float32))'
    run "$CDL" predict n.cfg flat.npy
    [ "$status" -eq 2 ]
    [[ "$output" == "cdl: flat.npy: shape (64,): expected"* ]]
    npy ints.npy int32 1 8 8
    run "$CDL" predict n.cfg ints.npy
    [ "$status" -eq 2 ]
    [ "$output" = "cdl: ints.npy: dtype '<i4': cdl reads little-endian float32 ('<f4'), float64 or float16 arrays" ]
    python3 -c 'import numpy as np; np.save("big.npy", np.zeros((1, 8, 8), ">f4"))
np.save("fortran.npy", np.asfortranarray(np.zeros((1, 8, 8), np.float32)))'
    run "$CDL" predict n.cfg big.npy
    [ "$status" -eq 2 ]
    [[ "$output" == "cdl: big.npy: dtype '>f4': "* ]]
    run "$CDL" predict n.cfg fortran.npy
    [ "$status" -eq 2 ]
    [ "$output" = "cdl: fortran.npy: a Fortran-order array: cdl reads C order (np.ascontiguousarray)" ]
    head -c 200 wide.npy > cut.npy # the 128-byte header and 18 of the 72 values
    run "$CDL" predict n.cfg cut.npy
    [ "$status" -eq 1 ]
    [ "$output" = "cdl: cut.npy: truncated: its shape needs 72 values of 4 bytes" ]
}

@test "predict names its values: probability after a softmax, logit without one" {
    numpy_or_skip
    small_cfg soft.cfg
    small_cfg raw.cfg ""
    npy x.npy float32 1 8 8
    "$CDL" predict soft.cfg x.npy --top 3 --json > soft.json
    "$CDL" predict raw.cfg x.npy --top 3 --json > raw.json
    python3 -c 'import json
soft, raw = (json.load(open(f))[0]["top"] for f in ("soft.json", "raw.json"))
assert all(set(t) == {"class", "index", "probability"} for t in soft), soft
assert all(set(t) == {"class", "index", "logit"} for t in raw), raw
assert abs(sum(t["probability"] for t in soft) - 1) < 1e-6'
    run "$CDL" predict soft.cfg x.npy --top 1
    [[ "${lines[1]}" =~ ^\ +[0-9.]+%\ \ [0-2]$ ]]
    run "$CDL" predict raw.cfg x.npy --top 1
    [[ "${lines[1]}" =~ ^\ +-?[0-9.e+-]+\ \ [0-2]$ ]]
}
