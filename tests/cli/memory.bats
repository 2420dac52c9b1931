#!/usr/bin/env bats
# A training step's memory against what the process may use (issue 43, item 7): train refuses a
# step larger than the limit before it allocates, naming both figures, check lists it, and the
# estimate check prints is the peak resident memory that training reaches.
load helpers

# The bundled digits' first 200 samples, and their .data file.
small_digits() {
    gzip -dc "$REPO/data/digits.csv.gz" | head -200 > small.csv
    printf 'classes=10\ntrain=small.csv\n' > small.data
}

# check's memory_bytes for the digits cfg at SIDExSIDE, batch 64: "total scratch" in bytes.
estimate() {
    "$CDL" check "$REPO/cfg/digits.cfg" --data small.data --set net.width=$1 --set net.height=$1 \
        --set net.batch=64 --json |
        python3 -c 'import json, sys; m = json.load(sys.stdin)["memory_bytes"]; print(m["total"], m["scratch"])'
}

# The peak resident bytes (getrusage's ru_maxrss) of one epoch of it in a process of its own.
peak() {
    python3 - "$CDL" "$REPO/cfg/digits.cfg" "$1" <<'PY'
import resource, subprocess, sys
cdl, cfg, side = sys.argv[1:4]
subprocess.run([cdl, "train", cfg, "--data", "small.data", "--set", f"net.width={side}",
                "--set", f"net.height={side}", "--set", "net.batch=64", "--epochs", "1",
                "--threads", "2", "--workers", "0", "--out", f"p{side}.cdl"],
               check=True, capture_output=True)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024)
PY
}

@test "train refuses a step larger than ulimit -v before it allocates, with both figures; check lists it" {
    small_digits
    run bash -c "ulimit -v 400000; '$CDL' train '$REPO/cfg/digits.cfg' --data small.data --set net.width=128 --set net.height=128 --set net.batch=64 --epochs 1"
    echo "$output"
    [ "$status" -eq 1 ]
    [ "${#lines[@]}" -eq 1 ]
    [[ "$output" == "cdl: $REPO/cfg/digits.cfg: a training step needs "*" MiB (parameters "*", activations "*" MiB), "*" MiB of it still to take, but only "*" is left: ulimit -v (RLIMIT_AS) is 390.6 MiB and "*" of it is in use; lower batch, raise subdivisions or set recompute_every (train --no-memory-check tries anyway)" ]]
    [ ! -e weights ]
    run bash -c "ulimit -v 400000; '$CDL' check '$REPO/cfg/digits.cfg' --data small.data --set net.width=128 --set net.height=128 --set net.batch=64"
    [ "$status" -eq 2 ]
    [[ "$output" == *"a training step needs "*" is left: ulimit -v (RLIMIT_AS) is 390.6 MiB and "* ]]
    [[ "$output" == *"this process may take "*" more: ulimit -v (RLIMIT_AS) is 390.6 MiB and "*" of it is in use"* ]]
    run bash -c "ulimit -v 400000; '$CDL' train '$REPO/cfg/digits.cfg' --data small.data --set net.width=128 --set net.height=128 --set net.batch=64 --epochs 1 --no-memory-check"
    [[ "$output" != *"a training step needs"* ]]
}

@test "the step memory check reports is the peak resident memory training reaches" {
    small_digits
    read -r big big_scratch <<< "$(estimate 96)"
    read -r tiny tiny_scratch <<< "$(estimate 8)"
    big_peak=$(peak 96)
    tiny_peak=$(peak 8)
    # peak = B + T: B the process without the step (code, libraries, the data; the same in both
    # runs, without loader threads), T what the step touches. Every byte of the estimate but the
    # scratch is written in a step (parameters, gradients, optimizer state, the planned slab,
    # input, labels); of the scratch, what the engines take. So T lies in [total - scratch,
    # total], and the difference of the peaks in [big - big_scratch - tiny, big - (tiny -
    # tiny_scratch)], give or take the decoded batch (64 samples of 96x96 floats) that the
    # loader holds beside the net's input, and 1 MiB of the allocator's and libraries' own
    # (36 KiB over on an AVX2 CPU, whose oneDNN kernels differ).
    batch_bytes=$((64 * 96 * 96 * 4 + (1 << 20)))
    diff=$((big_peak - tiny_peak))
    echo "estimates $big ($big_scratch scratch), $tiny ($tiny_scratch); peaks $big_peak, $tiny_peak: $diff"
    [ "$diff" -ge $((big - big_scratch - tiny - batch_bytes)) ]
    [ "$diff" -le $((big - tiny + tiny_scratch + batch_bytes)) ]
}
