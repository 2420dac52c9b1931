#!/usr/bin/env bash
# Runs every unit test binary, the include-order check (scripts/check-includes.sh), then
# (unless SAN=1) the Bats CLI tests; the last line is "N passed, N failed". Called by
# `make test` with BUILD, CDL_BIN and SAN set.
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build/rel}
SAN=${SAN:-0}
mkdir -p "$BUILD/logs"
passed=0
failed=0

for t in "$BUILD"/tests/test_*; do
    [ -x "$t" ] || continue
    if "$t" > "$BUILD/logs/$(basename "$t").log" 2>&1; then
        passed=$((passed + 1))
        echo "ok   $(basename "$t"): $(tail -n 1 "$BUILD/logs/$(basename "$t").log")"
    else
        failed=$((failed + 1))
        echo "FAIL $(basename "$t"):"
        sed 's/^/    /' "$BUILD/logs/$(basename "$t").log" | tail -n 40
    fi
done

if scripts/check-includes.sh > "$BUILD/logs/include_order.log" 2>&1; then
    passed=$((passed + 1))
    echo "ok   include order: $(tail -n 1 "$BUILD/logs/include_order.log")"
else
    failed=$((failed + 1))
    echo "FAIL include order:"
    sed 's/^/    /' "$BUILD/logs/include_order.log" | tail -n 40
fi

if [ "$SAN" != 1 ]; then
    export CDL_BIN=${CDL_BIN:-$PWD/cdl}
    tap=$(mktemp)
    bats --tap tests/cli > "$tap" 2>&1
    while IFS= read -r line; do
        case "$line" in
            "ok "*) passed=$((passed + 1)); echo "$line" ;;
            "not ok "*) failed=$((failed + 1)); echo "$line" ;;
            "#"*) echo "$line" ;;
        esac
    done < "$tap"
    rm -f "$tap"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
