#!/usr/bin/env bash
# Writes the toy sequence-to-sequence tasks of cfg/reverse.data and cfg/copy.data: N pairs
# `source<TAB>target` of random words of the letters a-j, 1 to 8 letters long, the target the
# source reversed (reverse) or the same (copy). The words come from a Park-Miller generator
# seeded with SEED, so every awk writes the same file.
# Usage: scripts/toy-pairs.sh reverse|copy [N [SEED [OUT]]]   (N 2000, SEED 1, OUT data/toy/TASK.tsv)
set -euo pipefail
out=${4:-}
[ -n "$out" ] && [ "${out#/}" = "$out" ] && out="$PWD/$out" # OUT is from the caller's directory
cd "$(dirname "$0")/.."

task=${1:-}
case "$task" in
reverse | copy) ;;
*)
    echo "usage: scripts/toy-pairs.sh reverse|copy [N [SEED [OUT]]]" >&2
    exit 2
    ;;
esac
n=${2:-2000}
seed=${3:-1}
out=${out:-data/toy/$task.tsv}
mkdir -p "$(dirname "$out")"
awk -v n="$n" -v seed="$seed" -v task="$task" 'BEGIN {
    x = seed % 2147483647
    if (x <= 0) x += 2147483646
    letters = "abcdefghij"
    for (i = 0; i < n; i++) {
        x = (x * 16807) % 2147483647
        len = 1 + x % 8
        word = ""
        for (k = 0; k < len; k++) {
            x = (x * 16807) % 2147483647
            word = word substr(letters, 1 + x % 10, 1)
        }
        target = word
        if (task == "reverse") {
            target = ""
            for (k = len; k >= 1; k--)
                target = target substr(word, k, 1)
        }
        printf "%s\t%s\n", word, target
    }
}' >"$out.tmp"
mv "$out.tmp" "$out"
printf 'toy-pairs: wrote %s (%s pairs)\n' "$out" "$n"
