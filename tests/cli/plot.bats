#!/usr/bin/env bats
# cdl plot: training curves from --log files as a PNG; bad logs fail naming file and line.
load helpers

# Two real runs: a.jsonl (learning rate 0.05) and b.jsonl (0.2), 2 epochs each.
two_runs() {
    "$CDL" train "$REPO/cfg/digits.cfg" --epochs 2 --out a.cdl --threads 1 --log a.jsonl \
        --log-every 4 2>/dev/null
    "$CDL" train "$REPO/cfg/digits.cfg" --epochs 2 --out b.cdl --threads 1 --log b.jsonl \
        --log-every 4 --set net.learning_rate=0.2 2>/dev/null
}

@test "plot of two runs is a PNG of the requested size with both run colours and a legend" {
    two_runs
    run "$CDL" plot a.jsonl b.jsonl -o curves.png --width 900 --height 500
    [ "$status" -eq 0 ]
    run /usr/bin/python3 - <<'PY'
from PIL import Image
img = Image.open("curves.png")
assert img.format == "PNG" and img.size == (900, 500) and img.mode == "RGB", (img.format, img.size, img.mode)
px = img.load()
w, h = img.size
def count(color, box):
    x0, y0, x1, y1 = box
    return sum(px[x, y] == color for y in range(y0, y1) for x in range(x0, x1))
first, second = (0x1f, 0x77, 0xb4), (0xff, 0x7f, 0x0e)  # the first two run colours
panels = (0, h // 8, w, h * 3 // 4)
legend = (0, h * 7 // 8, w, h)  # the legend strip along the bottom edge
for c in (first, second):
    assert count(c, panels) > 200, ("curve pixels", c, count(c, panels))
    assert count(c, legend) > 20, ("legend swatch", c, count(c, legend))
ink = (0x22, 0x22, 0x22)
assert count(ink, legend) > 100, "legend text"
assert count(ink, (0, 0, w, h // 8)) > 100, "title"
assert len(img.getcolors(1 << 20)) > 30, "anti-aliased lines blend into many colours"
print("ok")
PY
    echo "$output"
    [ "$status" -eq 0 ]
}

@test "plot defaults to 1200x600" {
    two_runs
    run "$CDL" plot a.jsonl -o one.png
    [ "$status" -eq 0 ]
    run /usr/bin/python3 -c 'from PIL import Image; print(Image.open("one.png").size)'
    [ "$output" = "(1200, 600)" ]
}

@test "a log without validation records still plots (empty accuracy panel)" {
    printf '{"type":"step","step":%d,"epoch":1,"loss":%s,"lr":0.1}\n' 10 2.0 20 1.0 30 0.5 > s.jsonl
    run "$CDL" plot s.jsonl -o s.png --width 640 --height 360
    [ "$status" -eq 0 ]
    [ -s s.png ]
}

# expect_error STATUS MESSAGE cdl-plot-args...
expect_error() {
    local want_status=$1 want_text=$2
    shift 2
    run "$CDL" plot "$@"
    echo "status $status, output: $output"
    [ "$status" -eq "$want_status" ]
    [ "${#lines[@]}" -eq 1 ]
    [ "$output" = "cdl: $want_text" ]
    [ ! -e out.png ]
}

@test "a missing log fails naming it" {
    expect_error 1 "nope.jsonl: cannot open log: No such file or directory" nope.jsonl -o out.png
}

@test "a malformed JSON line fails naming file and line" {
    printf '{"type":"step","step":1,"loss":2}\n{"type":"step",\n' > bad.jsonl
    expect_error 1 "bad.jsonl:2: not a JSON object (malformed line)" bad.jsonl -o out.png
}

@test "a step record without a step number fails naming file and line" {
    printf '\n{"type":"step","loss":2}\n' > bad.jsonl
    expect_error 1 'bad.jsonl:2: step record without a numeric "step"' bad.jsonl -o out.png
}

@test "a file without step or epoch records fails" {
    printf '{"model":"x.cdl","accuracy":0.9}\n' > eval.json
    expect_error 1 "eval.json: no step or epoch records (expected a \`cdl train --log\` file)" \
        eval.json -o out.png
}

@test "plot without -o or without logs is a usage error" {
    printf '{"type":"step","step":1,"loss":2}\n' > s.jsonl
    expect_error 2 "plot needs -o OUT.png; see --help" s.jsonl
    expect_error 2 "plot needs at least one JSONL log; see --help" -o out.png
}

@test "a size below 320x200 is a usage error" {
    printf '{"type":"step","step":1,"loss":2}\n' > s.jsonl
    expect_error 2 "bad value '100' for --width: expected an integer in 320..16384" s.jsonl -o out.png --width 100
}
