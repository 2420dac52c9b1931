#!/usr/bin/env bash
# Runs fuzz targets built by `make fuzz` (build/fuzz/fuzz_NAME), one at a time, each for
# FUZZ_RUNS executions and/or FUZZ_SECONDS seconds, whichever ends first (FUZZ_SECONDS is 10
# when neither is set). A target starts from its
# seed corpus (tests/fuzz/corpus/NAME) and regression inputs (tests/fuzz/regressions/NAME) and
# adds what it finds to build/fuzz/corpus/NAME (the committed corpus is left alone); a crashing
# input goes to build/fuzz/crashes/NAME/. Prints one line per target: executions, seconds,
# executions per second, and "ok" or the crash file. Usage: tests/fuzz/run.sh NAME...
set -uo pipefail
cd "$(dirname "$0")/../.."
FUZZ_RUNS=${FUZZ_RUNS:-}
FUZZ_SECONDS=${FUZZ_SECONDS:-}
[ -n "$FUZZ_RUNS" ] || FUZZ_SECONDS=${FUZZ_SECONDS:-10}
status=0
for name in "$@"; do
    bin=build/fuzz/fuzz_$name
    work=build/fuzz/corpus/$name
    crashes=build/fuzz/crashes/$name/
    log=build/fuzz/logs/$name.log
    mkdir -p "$work" "$crashes" build/fuzz/logs
    limit=()
    [ -n "$FUZZ_RUNS" ] && limit+=(-runs="$FUZZ_RUNS")
    [ -n "$FUZZ_SECONDS" ] && limit+=(-max_total_time="$FUZZ_SECONDS")
    seeds=(tests/fuzz/corpus/"$name")
    [ -d tests/fuzz/regressions/"$name" ] && seeds+=(tests/fuzz/regressions/"$name")
    SECONDS=0
    "$bin" "${limit[@]}" -print_final_stats=1 -artifact_prefix="$crashes" -rss_limit_mb=2048 -timeout=25 \
        "$work" "${seeds[@]}" > "$log" 2>&1
    rc=$?
    seconds=$SECONDS
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
    if [ "$rc" -eq 0 ]; then
        result=ok
    else
        status=1
        result="FAILED (exit $rc): $(ls -t "$crashes" | head -n 1 | sed "s|^|$crashes|"), log $log"
    fi
    printf '%-16s %10s runs %6d s %8s exec/s  %s\n' "$name" "${runs:-?}" "$seconds" \
        "${rate:-?}" "$result"
done
exit $status
