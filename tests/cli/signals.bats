#!/usr/bin/env bats
# cdl train under signals, kills and races: SIGINT/SIGTERM/SIGHUP save a checkpoint that resumes
# to the uninterrupted run's, a second signal exits at once, SIGXFSZ is a message, a kill leaves
# no temporary file that a later run keeps, latest.cdl follows every checkpoint (also under
# concurrent runs), a read-only current folder is no failure, and --out never replaces a file
# that is not a checkpoint.
load helpers

# Digits in 2 epochs of 719 steps (batch 2): long enough to be signalled inside an epoch.
LONG=(--threads 1 --set net.batch=2 --epochs 2)
# Digits in epochs of 2 steps (batch 512): a checkpoint every few milliseconds.
SHORT=(--threads 1 --set net.batch=512 --log-every 1000)

# Starts a LONG run writing $1 in the background, logging every step to run.jsonl; sets $pid.
start_long_run() {
    rm -f run.jsonl
    "$CDL" train "$REPO/cfg/digits.cfg" "${LONG[@]}" --out "$1" --log run.jsonl --log-every 1 \
        2>err.txt &
    pid=$!
}

# Waits (at most 60 s) until run.jsonl holds a record that contains $1.
wait_for_log() {
    for _ in $(seq 6000); do
        grep -q "$1" run.jsonl 2>/dev/null && return 0
        sleep 0.01
    done
    return 1
}

# Sends signal $1 to a LONG run inside its first epoch, then checks the exit status ($2), the
# one line, and that --resume ends with the checkpoint of the uninterrupted run.
interrupt_and_resume() {
    "$CDL" train "$REPO/cfg/digits.cfg" "${LONG[@]}" --out straight.cdl --log-every 100000 2>/dev/null
    start_long_run cut.cdl
    wait_for_log '"step":100,'
    kill -"$1" "$pid"
    status=0
    wait "$pid" || status=$?
    cat err.txt
    [ "$status" -eq "$2" ]
    line=$(tail -n 1 err.txt)
    [[ "$line" =~ ^"cdl: interrupted by SIG$1 at epoch "[12]"/2 step "[0-9]+"/719; saved cut.cdl, resume with --resume cut.cdl"$ ]]
    [[ "$line" != *"step 719/719"* ]] # inside an epoch
    [[ "$(tail -n 1 run.jsonl)" == *'"interrupted":true'* ]]
    [ "$(readlink latest.cdl)" = cut.cdl ]
    run "$CDL" train --resume cut.cdl --threads 1
    [ "$status" -eq 0 ]
    cmp straight.cdl cut.cdl
}

# No temporary file of any cdl version in directory $1.
no_temporaries() {
    run ls -A "$1"
    [[ "$output" != *"cdl-tmp"* && "$output" != *".tmp."* ]]
}

@test "SIGINT inside an epoch saves, exits 130, and --resume ends as the uninterrupted run" {
    interrupt_and_resume INT 130
}

@test "SIGTERM inside an epoch saves, exits 143, and --resume ends as the uninterrupted run" {
    interrupt_and_resume TERM 143
}

@test "SIGHUP saves and exits 129" {
    start_long_run cut.cdl
    wait_for_log '"step":100,'
    kill -HUP "$pid"
    status=0
    wait "$pid" || status=$?
    [ "$status" -eq 129 ]
    [[ "$(tail -n 1 err.txt)" == "cdl: interrupted by SIGHUP at epoch "*"; saved cut.cdl, resume with --resume cut.cdl" ]]
    "$CDL" info cut.cdl >/dev/null
}

@test "a second signal exits at once without saving" {
    start_long_run cut.cdl
    wait_for_log '"step":50,'
    # Stopped, the process receives both before it runs again: the second finds the first.
    kill -STOP "$pid"
    kill -INT "$pid"
    kill -TERM "$pid"
    kill -CONT "$pid"
    status=0
    wait "$pid" || status=$?
    cat err.txt
    [ "$status" -eq 130 ] || [ "$status" -eq 143 ]
    [ "$(tail -n 1 err.txt)" = "cdl: second signal: exiting without saving" ]
    [ ! -e cut.cdl ]
    no_temporaries .
}

@test "a checkpoint past ulimit -f fails with a message naming it, exit 1, and no temporary file" {
    run bash -c 'ulimit -f 40; exec "$0" train "$1/cfg/digits.cfg" --epochs 1 --out big.cdl --threads 1' \
        "$CDL" "$REPO"
    echo "$output"
    [ "$status" -eq 1 ]
    [ "${lines[-1]}" = "cdl: big.cdl: cannot write: file size limit exceeded (ulimit -f)" ]
    [ ! -e big.cdl ]
    no_temporaries .
}

@test "a save removes the temporary files that dead processes of this host left in its folder" {
    sh -c 'exit 0' &
    dead=$!
    wait "$dead"
    host=$(hostname)
    mkdir w
    echo x > "w/.a.cdl.cdl-tmp.$host.$dead"
    ln -s a.cdl "w/.latest.cdl.cdl-tmp.$host.$dead"
    echo x > "w/old.cdl.tmp.$dead" # an older cdl's name, over an hour old
    touch -d '2 hours ago' "w/old.cdl.tmp.$dead"
    echo x > "w/.b.cdl.cdl-tmp.$host.$$"           # a live writer's
    echo x > "w/.c.cdl.cdl-tmp.otherhost.$dead"    # another host's
    echo x > "w/notes.tmp.$dead"                   # not cdl's
    "$CDL" train "$REPO/cfg/digits.cfg" "${SHORT[@]}" --epochs 1 --out w/a.cdl 2>/dev/null
    run ls -A w
    echo "$output"
    [ "$output" = "$(printf '%s\n' ".b.cdl.cdl-tmp.$host.$$" ".c.cdl.cdl-tmp.otherhost.$dead" \
        a.cdl latest.cdl "notes.tmp.$dead")" ]
}

@test "kill -9 during saves leaves no temporary file after a later run" {
    # 32 training samples: one step an epoch, so that most of a run's time goes to saving.
    zcat "$REPO/data/digits.csv.gz" | head -n 40 > tiny.csv
    printf 'classes=10\ntrain=tiny.csv\nvalid_split=0.2\n' > tiny.data
    mkdir w
    for wait_s in 0.3 0.45 0.6 0.75; do
        "$CDL" train "$REPO/cfg/digits.cfg" --data tiny.data --threads 1 --log-every 1000 \
            --epochs 100000 --out w/k.cdl 2>/dev/null &
        pid=$!
        sleep "$wait_s"
        kill -9 "$pid"
        wait "$pid" || true
    done
    "$CDL" info w/k.cdl >/dev/null # the last complete checkpoint
    "$CDL" train "$REPO/cfg/digits.cfg" "${SHORT[@]}" --epochs 1 --out w/later.cdl 2>/dev/null
    no_temporaries w
}

@test "latest.cdl is repointed after every checkpoint, not only when the run ends" {
    "$CDL" train "$REPO/cfg/digits.cfg" "${SHORT[@]}" --epochs 1 --out first.cdl 2>/dev/null
    [ "$(readlink latest.cdl)" = first.cdl ]
    start_long_run second.cdl
    wait_for_log '"type":"epoch"'
    kill -9 "$pid"
    wait "$pid" || true
    [ "$(readlink latest.cdl)" = second.cdl ]
}

@test "concurrent runs in one folder each update weights/latest.cdl" {
    pids=()
    for n in 1 2 3 4; do
        "$CDL" train "$REPO/cfg/digits.cfg" "${SHORT[@]}" --epochs 25 --out "weights/c$n.cdl" \
            2>"err$n.txt" &
        pids+=($!)
    done
    for n in 1 2 3 4; do
        wait "${pids[$((n - 1))]}" || { cat "err$n.txt"; false; }
        ! grep -q warning "err$n.txt"
    done
    [[ "$(readlink weights/latest.cdl)" =~ ^c[1-4]\.cdl$ ]]
    no_temporaries weights
}

# Runs a command with $1 as a read-only current folder: chmod for a user, a read-only bind mount
# in a mount namespace for root (whom permissions do not stop).
in_readonly_dir() {
    local dir=$1
    shift
    if [ "$(id -u)" -ne 0 ]; then
        chmod a-w "$dir"
        (cd "$dir" && "$@")
        return
    fi
    unshare -m sh -c 'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && cd "$1" &&
        shift && exec "$@"' sh "$dir" "$@"
}

@test "a run whose --out is elsewhere succeeds in a read-only folder, latest.cdl beside it" {
    if [ "$(id -u)" -eq 0 ] && ! unshare -m true 2>/dev/null; then
        skip "root without mount namespaces: no read-only folder to test in"
    fi
    mkdir ro out
    run in_readonly_dir ro "$CDL" train "$REPO/cfg/digits.cfg" "${SHORT[@]}" --epochs 1 \
        --out "$WORK/out/d.cdl"
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(readlink out/latest.cdl)" = d.cdl ]
    [ -z "$(ls -A ro)" ]
    chmod u+w ro
}

@test "--out naming a cfg or a .data file is refused with exit 2 and the file kept" {
    cp "$REPO/cfg/digits.cfg" my.cfg
    printf 'classes=10\ntrain=%s/data/digits.csv.gz\nvalid_split=0.2\n' "$REPO" > my.data
    cp my.cfg my.cfg.orig
    cp my.data my.data.orig
    for out in my.cfg:"a cfg file" my.data:"a text file"; do
        run "$CDL" train my.cfg --data my.data --epochs 1 --threads 1 --out "${out%%:*}"
        [ "$status" -eq 2 ]
        [ "$output" = "cdl: ${out%%:*}: exists and is ${out#*:}, not a cdl checkpoint; not overwriting it (choose another path)" ]
    done
    cmp my.cfg my.cfg.orig
    cmp my.data my.data.orig
    # A checkpoint is replaced as before.
    "$CDL" train my.cfg --data my.data "${SHORT[@]}" --epochs 1 --out m.cdl 2>/dev/null
    run "$CDL" train my.cfg --data my.data "${SHORT[@]}" --epochs 1 --out m.cdl
    [ "$status" -eq 0 ]
}
