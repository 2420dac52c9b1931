# Helpers shared by the Bats files that compare cdl with Debian's darknet program (load after
# helpers): the photo, random .weights laid out independently of cdl, a .data file, and the
# comparison of `darknet classifier predict` with `cdl predict`.
PHOTO=/usr/share/darknet/data/dog.jpg

# random_weights CFG OUT [ARGS...]: darknet .weights with random values for CFG, laid out by
# scripts/ref/make_darknet_weights.py (not by cdl), batch-norm variances down to 0.001.
random_weights() {
    local cfg=$1 out=$2
    shift 2
    "$CDL" export npy "$cfg" npy_shapes 2>/dev/null >/dev/null
    /usr/bin/python3 "$REPO/scripts/ref/make_darknet_weights.py" "$cfg" npy_shapes "$out" "$@"
    rm -rf npy_shapes
}

# A darknet .data file for N classes named 0..N-1, testing on list.txt.
write_darknet_data() {
    seq 0 $(($1 - 1)) > names.txt
    printf 'classes=%d\nnames=names.txt\ntop=%d\ntest=list.txt\n' "$1" "$1" > darknet.data
}

# compare_top DARKNET_OUT CDL_OUT: darknet classifier predict's lines "%5.2f%%: NAME" against cdl
# predict's "  %6.2f%%  NAME" (after its file line): the same percentages to darknet's 0.01
# (both round the same floats; 0.01 allows a different rounding of a last digit), the same
# names in the same order except between values that darknet prints alike.
compare_top() {
    /usr/bin/python3 - "$1" "$2" <<'PY'
import sys
darknet = [(float(p), n.strip()) for p, n in (l.split("%:") for l in open(sys.argv[1]))]
cdl = [(float(p), n.strip()) for p, n in (l.split("%") for l in open(sys.argv[2]).readlines()[1:])]
assert len(darknet) == len(cdl) > 0, (darknet, cdl)
for (p, n), (q, m) in zip(darknet, cdl):
    assert abs(p - q) <= 0.01 + 1e-9, (p, q)
    assert n == m or any(abs(v - p) <= 0.01 for v, name in darknet if name == m), (n, m)
print("ok", darknet[0], cdl[0])
PY
}


# darknet_valid CFG WEIGHTS IMAGE CLASSES: `darknet detector valid` on IMAGE into results/
# (comp4_det_test_<class>.txt, classes named 0..CLASSES-1). Its loader reads four images ahead,
# so the list names IMAGE four times (fewer crash it); each result line then comes four times.
darknet_valid() {
    seq 0 $(($4 - 1)) > names.txt
    printf '%s\n' "$3" "$3" "$3" "$3" > valid.txt
    rm -rf results && mkdir results
    printf 'classes=%d\nnames=names.txt\nvalid=valid.txt\nresults=results\n' "$4" > valid.data
    darknet detector valid valid.data "$1" "$2" > darknet.log 2>&1
}

# compare_detections CFG WEIGHTS IMAGE CLASSES: darknet detector valid's boxes and scores against
# cdl detect's with the same threshold (.005) and NMS (.45), near ties of NMS in darknet's order
# (scripts/ref/compare_darknet_detections.py); prints the largest differences.
# Tolerances: scores 1e-5 (darknet prints 6 decimals; float sums in another order move the
# sixth), box edges 0.01 px (a box's exp(tw) amplifies the last bits of its output).
compare_detections() {
    darknet_valid "$@"
    "$CDL" detect "$1" --weights "$2" "$3" --thresh 0.005 --nms 0.45 --json > cdl.json 2>/dev/null
    "$CDL" detect "$1" --weights "$2" "$3" --thresh 0.005 --nms 0 --json > all.json 2>/dev/null
    /usr/bin/python3 "$REPO/scripts/ref/compare_darknet_detections.py" results cdl.json all.json \
        0.005 0.45 1e-5 0.01
}
