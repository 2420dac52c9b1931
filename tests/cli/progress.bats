#!/usr/bin/env bats
# The training progress bar on a terminal (under script(1)): it fits the terminal's width
# (TIOCGWINSZ, else $COLUMNS, else 80) and never wraps; off a terminal, plain lines.
load helpers

# The bar lines cdl train draws on a pseudo-terminal: $1 is a shell command run before it
# (stty ...), the rest cdl's environment. Prints the length of each bar drawn.
bar_lengths() {
    local before=$1
    shift
    command -v script >/dev/null || skip "script(1) is not installed (util-linux)"
    env "$@" script -qec "$before; '$CDL' train '$REPO/cfg/digits.cfg' --epochs 1 --out d.cdl --threads 1" \
        /dev/null | tr '\r' '\n' | sed 's/\x1b\[K//' | grep -E '^epoch [0-9]+/[0-9]+ ' |
        awk '{ print length($0) }'
}

@test "the bar fits a terminal of 50 columns (TIOCGWINSZ)" {
    run bar_lengths "stty cols 50"
    [ "$status" -eq 0 ]
    [ "${#lines[@]}" -ge 1 ]
    for n in "${lines[@]}"; do [ "$n" -le 49 ]; done
}

@test "the bar fits a terminal of 120 columns and has its bar there" {
    run bar_lengths "stty cols 120"
    [ "$status" -eq 0 ]
    for n in "${lines[@]}"; do [ "$n" -le 119 ]; done
    env script -qec "stty cols 120; '$CDL' train '$REPO/cfg/digits.cfg' --epochs 1 --out d.cdl --threads 1" \
        /dev/null | grep -q 'epoch 1/1 \[#*\.*\] .* img/s ETA '
}

@test "without a window size the bar takes \$COLUMNS, else 80" {
    run bar_lengths "stty cols 0" COLUMNS=44
    [ "$status" -eq 0 ]
    [ "${#lines[@]}" -ge 1 ]
    for n in "${lines[@]}"; do [ "$n" -le 43 ]; done
    run bar_lengths "stty cols 0" -u COLUMNS
    [ "$status" -eq 0 ]
    for n in "${lines[@]}"; do [ "$n" -le 79 ]; done
}

@test "off a terminal, progress is plain lines with no carriage return" {
    run "$CDL" train "$REPO/cfg/digits.cfg" --epochs 1 --out d.cdl --threads 1 --log-every 10
    [ "$status" -eq 0 ]
    [[ "$output" != *$'\r'* ]]
    [[ "$output" == *"epoch 1/1 step 10/44 loss "*" ETA "* ]]
}
