#!/usr/bin/env bats
# Data-parallel training under mpirun (make MPI=1): 2 ranks with batch B/2 give the weights 1
# process with batch B gives (with augmentation, dropout and sync_bn), a stopped or killed rank
# ends the run with the last checkpoint intact, and setup errors are reported once. The tests
# build the MPI binary ($REPO/cdl-mpi) themselves when mpicc is there, else they are skipped.

load helpers

setup_file() {
    export CDL_MPI="${CDL_MPI_BIN:-$REPO/cdl-mpi}"
    if [ -z "${CDL_MPI_BIN:-}" ] && command -v mpicc >/dev/null && command -v mpirun >/dev/null; then
        make -C "$REPO" -j2 MPI=1 cdl-mpi >/dev/null 2>&1 || true
    fi
}

mpi_or_skip() {
    command -v mpirun >/dev/null || skip "mpirun is not installed (scripts/deps.sh installs Open MPI)"
    [ -x "$CDL_MPI" ] || skip "no cdl built with MPI=1 ($CDL_MPI; make MPI=1 needs mpicc)"
}

# mpirun NP ARGS...: cdl-mpi under mpirun, as root on this box too.
mpi() {
    local np=$1
    shift
    mpirun --allow-run-as-root --oversubscribe -np "$np" "$CDL_MPI" "$@"
}

# The cfg of the equivalence tests, on the bundled digits: padding, flips and brightness
# augmentation, dropout; extra keys for [net] and the convolution come as $1 and $2.
digits_cfg() {
    cp "$REPO/data/digits.csv.gz" .
    printf 'classes=10\ntrain=digits.csv.gz\n' > d.data
    cat > d.cfg <<CFG
[net]
batch=32
width=8
height=8
channels=1
learning_rate=0.05
momentum=0.9
pad=1
flip=1
brightness=0.2
$1
[convolutional]
filters=8
size=3
pad=1
activation=leaky
$2
[maxpool]
size=2
stride=2
[dropout]
probability=0.3
[connected]
output=10
activation=linear
[softmax]
CFG
}

@test "2 ranks with batch 16 train the weights 1 process with batch 32 does (augmentation, dropout)" {
    mpi_or_skip
    digits_cfg "" ""
    "$CDL" train d.cfg --epochs 1 --threads 1 --out one.cdl 2>/dev/null
    run mpi 2 train d.cfg --set net.batch=16 --epochs 1 --threads 1 --out two.cdl
    [ "$status" -eq 0 ]
    [[ "$output" == *"on 2 ranks (allreduce: "*" s waited, "*" s hidden by backward), "*"saved two.cdl"* ]]
    # rank 0 alone logs: one epoch line
    [ "$(grep -c '^epoch 1/1: train loss' <<< "$output")" -eq 1 ]
    diff=$(max_rel_diff one.cdl two.cdl)
    echo "max relative difference $diff"
    python3 -c "import sys; sys.exit(not float('$diff') <= 1e-5)"
}

@test "sync_bn=1: 2 ranks with batch 16 equal 1 process with batch 32 with batch norm; without it they differ" {
    mpi_or_skip
    digits_cfg "sync_bn=1" "batch_normalize=1"
    "$CDL" train d.cfg --epochs 1 --threads 1 --out one.cdl 2>/dev/null
    mpi 2 train d.cfg --set net.batch=16 --epochs 1 --threads 1 --out two.cdl 2>/dev/null
    diff=$(max_rel_diff one.cdl two.cdl)
    echo "sync_bn=1: max relative difference $diff"
    python3 -c "import sys; sys.exit(not float('$diff') <= 1e-5)"
    mpi 2 train d.cfg --set net.batch=16 --set net.sync_bn=0 --epochs 1 --threads 1 \
        --out local.cdl 2>/dev/null
    diff=$(max_rel_diff one.cdl local.cdl)
    echo "sync_bn=0: max relative difference $diff"
    python3 -c "import sys; sys.exit(not float('$diff') > 1e-3)"
}

@test "a sequence net: 2 ranks with batch 4 train the weights 1 process with batch 8 does (attention dropout)" {
    mpi_or_skip
    python3 -c 'import random; r = random.Random(3); print(" ".join(r.choice(["in", "the", "beginning", "was", "word", "and"]) for _ in range(800)))' > t.txt
    printf 'type=text\ntokens=char\ntrain=t.txt\nvalid_split=0.1\n' > t.data
    printf '[net]\nbatch=8\nseq=16\noptimizer=adamw\nlearning_rate=0.01\n[embedding]\noutput=16\n[positional]\n[layernorm]\n[attention]\nheads=2\ndropout=0.2\n[shortcut]\nfrom=-3\n[layernorm]\n[linear]\ntie=1\n[softmax]\n' > t.cfg
    "$CDL" train t.cfg --data t.data --epochs 1 --threads 1 --out one.cdl 2>/dev/null
    run mpi 2 train t.cfg --data t.data --set net.batch=4 --epochs 1 --threads 1 --out two.cdl
    [ "$status" -eq 0 ]
    [[ "$output" == *"on 2 ranks"*"saved two.cdl"* ]]
    # The key biases (rows 16-31 of the q,k,v biases) get a gradient that is rounding noise
    # (adding b to every key adds q.b to each of a query's scores: softmax ignores it), which
    # Adam scales up to steps of the learning rate: they differ in any two summation orders.
    diff=$(max_rel_diff one.cdl two.cdl layer3.biases:16:32)
    echo "max relative difference $diff"
    python3 -c "import sys; sys.exit(not float('$diff') <= 1e-5)"
}

@test "an MPI build trains alone, and --resume continues a 2-rank run in 1 process" {
    mpi_or_skip
    digits_cfg "" ""
    mpi 2 train d.cfg --set net.batch=16 --epochs 1 --threads 1 --out r.cdl 2>/dev/null
    run "$CDL_MPI" train --resume r.cdl --epochs 2 --threads 1
    [ "$status" -eq 0 ]
    [[ "$output" == *"epoch 2/2: train loss"*"saved r.cdl"* ]]
    [[ "$output" != *"ranks"* ]]
}

@test "--resume at another rank count continues after the epochs done, in its own steps" {
    mpi_or_skip
    digits_cfg "" ""
    # 1797 samples: 56 steps of 2x16 an epoch, 112 of 16 in one process, 37 of 3x16
    mpi 2 train d.cfg --set net.batch=16 --epochs 2 --threads 1 --out r.cdl 2>/dev/null
    run "$CDL_MPI" train --resume r.cdl --epochs 3 --threads 1 --out one.cdl --log-every 1
    [ "$status" -eq 0 ]
    [[ "$output" == "epoch 3/3 step 1/112 "* ]]
    [[ "$output" != *"epoch 2/3"* ]]
    run mpi 3 train --resume r.cdl --epochs 3 --threads 1 --out three.cdl --log-every 1
    [ "$status" -eq 0 ]
    [[ "$output" == "epoch 3/3 step 1/37 "* && "$output" == *"epoch 3/3: train loss"* ]]
    run mpi 3 train --resume r.cdl --epochs 2 --threads 1 --out three.cdl
    [ "$status" -eq 0 ]
    [[ "$output" == *"cdl: r.cdl already has 2 epochs; nothing to do (raise --epochs)"* ]]
}

@test "a bad cfg under mpirun is reported once, exit 2" {
    mpi_or_skip
    digits_cfg "bogus=1" ""
    run mpi 2 train d.cfg --epochs 1
    [ "$status" -eq 2 ]
    [ "$(grep -c "^cdl: d.cfg:.*unknown key 'bogus'" <<< "$output")" -eq 1 ]
}

# The pid of rank $1 of the cdl-mpi run whose checkpoint is $2 (waits until it runs).
rank_pid() {
    for _ in $(seq 100); do
        for p in $(pgrep -f "cdl-mpi train d.cfg.*--out $2"); do
            if tr '\0' '\n' < "/proc/$p/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$1"; then
                echo "$p"
                return
            fi
        done
        sleep 0.1
    done
}

@test "a stopped rank ends the run within --dist-timeout, naming it; the last checkpoint stays valid" {
    mpi_or_skip
    digits_cfg "" ""
    mpi 2 train d.cfg --set net.batch=16 --epochs 100000 --threads 1 --out h.cdl \
        --dist-timeout 2 > out.txt 2>&1 &
    local job=$!
    until [ -s h.cdl ]; do sleep 0.1; done
    kill -STOP "$(rank_pid 1 h.cdl)"
    local start=$SECONDS
    wait "$job" && status=0 || status=$?
    cat out.txt
    [ "$status" -eq 1 ]
    [ $((SECONDS - start)) -le 15 ]
    [ "$(grep -c 'rank 1 did not answer within 2 s (--dist-timeout)' out.txt)" -eq 1 ]
    grep -q 'the last checkpoint (h.cdl) is kept' out.txt
    "$CDL" info h.cdl > /dev/null
}

@test "a killed rank ends the run, mpirun naming it; the last checkpoint stays valid" {
    mpi_or_skip
    digits_cfg "" ""
    mpi 2 train d.cfg --set net.batch=16 --epochs 100000 --threads 1 --out k.cdl \
        --dist-timeout 5 > out.txt 2>&1 &
    local job=$!
    until [ -s k.cdl ]; do sleep 0.1; done
    kill -KILL "$(rank_pid 1 k.cdl)"
    local start=$SECONDS
    wait "$job" && status=0 || status=$?
    cat out.txt
    [ "$status" -ne 0 ]
    [ $((SECONDS - start)) -le 15 ]
    grep -q 'process rank 1 .* exited on signal 9' out.txt
    "$CDL" info k.cdl > /dev/null
}

@test "SIGTERM to one rank stops every rank after the same step; --resume ends as the uninterrupted run" {
    mpi_or_skip
    digits_cfg "" ""
    mpi 2 train d.cfg --set net.batch=4 --epochs 20 --threads 1 --out straight.cdl 2>/dev/null
    mpi 2 train d.cfg --set net.batch=4 --epochs 20 --threads 1 --out cut.cdl --log run.jsonl \
        --log-every 1 > out.txt 2>&1 &
    local job=$!
    until grep -q '"step":60,' run.jsonl 2>/dev/null; do sleep 0.05; done
    kill -TERM "$(rank_pid 1 cut.cdl)"
    wait "$job" && status=0 || status=$?
    cat out.txt
    [ "$status" -eq 143 ]
    # the signal lands in epoch 1 or, on a fast machine, a later one (an epoch is ~1 s on the AVX2
    # VM, ~0.2 s on the Zen 5 one: 3 epochs ended there before the signal came)
    grep -q '^cdl: interrupted by a signal on another rank at epoch [0-9]*/20 step [0-9]*/224; saved cut.cdl' out.txt
    mpi 2 train --resume cut.cdl --threads 1 2>/dev/null
    cmp straight.cdl cut.cdl
}
