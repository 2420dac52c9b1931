#!/usr/bin/env bash
# Writes the text corpora of cfg/kjv.data and cfg/fortunes.data from Debian packages
# (scripts/deps.sh installs them): data/text/kjv.txt, the King James Bible (bible-kjv,
# bible-kjv-text), data/text/fortunes.txt, every fortune cookie file of `fortunes` and
# `fortunes-min`, and data/text/kjv-rv1909.tsv, the sequence-to-sequence pairs: each verse of the
# King James Bible and of the Spanish Reina-Valera 1909 (sword-text-sparv, read with diatheke),
# "english<TAB>spanish", verse by verse. A file that is already there and complete is kept.
# Usage: scripts/text-data.sh [--force]      (--force rewrites them)
set -euo pipefail
cd "$(dirname "$0")/.."

out=data/text
fortune_dir=/usr/share/games/fortunes
kjv_verses=31102 # Genesis 1:1 to Revelation 22:21
force=0
[ "${1:-}" = --force ] && force=1
mkdir -p "$out"

missing() { # missing PROGRAM_OR_FILE PACKAGE
    echo "text-data: $1 is missing: run scripts/deps.sh (or apt-get install $2)" >&2
    exit 1
}

# write FILE COMMAND...: COMMAND's output into FILE through a temporary file, so that FILE is
# either absent or complete whatever interrupts the script.
write() {
    local file=$1
    shift
    "$@" >"$file.tmp"
    mv "$file.tmp" "$file"
    printf 'text-data: wrote %s (%s bytes, %s lines)\n' "$file" "$(wc -c <"$file")" \
        "$(wc -l <"$file")"
}

# One verse per line, in order, without its reference. `bible -f` (pretty-printing off)
# prints "Ge1:1 In the beginning..."; the references are dropped because they are not
# language: predicting "2Ki19:23" teaches counting, would take ~6% of the characters and would
# put digits into generated prose. A line per verse keeps the text's own sentence breaks.
kjv_text() {
    bible -f Gen1:1-Rev22:21 | sed -E 's/^[1-3]?[A-Za-z]+[0-9]+:[0-9]+ //'
}

# One verse per line as diatheke prints the Reina-Valera 1909 in plain text ("Genesis 1:1: EN el
# principio ..."), its reference kept as "chapter:verse" for the alignment check, the Strong's
# numbers the module still carries ("<G5547>") and the line's surrounding blanks dropped, and the
# module's name line ("(spaRV1909eb)") left out. 18 verses are empty: this versification moves
# their words into a neighbour.
spanish_verses() {
    diatheke -b spaRV1909eb -f plain -k "Gen 1:1-Rev 22:21" |
        sed -E -e '/^\(spaRV1909eb\)$/d' -e 's/<[GH][0-9]+>//g' -e 's/ +/ /g' -e 's/ +$//' |
        sed -E 's/^.* ([0-9]+:[0-9]+): ?/\1\t/'
}

# "english<TAB>spanish" for the verses both sides have text for, in the Bible's order; stops
# (status 1) at the first verse whose chapter and verse differ between the two (lines out of step).
verse_pairs() {
    paste <(bible -f Gen1:1-Rev22:21 | sed -E 's/^[1-3]?[A-Za-z]+([0-9]+:[0-9]+) /\1\t/') \
        <(spanish_verses) |
        awk -F '\t' '$1 != $3 { printf "text-data: verse %d is %s in English, %s in Spanish\n", NR, $1, $3 > "/dev/stderr"; exit 1 }
                    $2 != "" && $4 != "" { print $2 "\t" $4 }'
}

# The cookie files in name order; the "%" separator lines become blank lines, and a blank line
# follows a file whose last cookie lacks its "%". Overstrikes (x BACKSPACE y, the files'
# bold and underline) keep the character printed last, and terminal bells are dropped, so
# the text holds no control characters but tabs and newlines.
fortunes_text() {
    local f
    for f in "$fortune_dir"/*; do
        case "$f" in *.dat | *.u8) continue ;; esac
        cat "$f"
        [ "$(tail -n 1 "$f")" = % ] || echo
    done | LC_ALL=C.UTF-8 sed -e ':a' -e 's/[^\x08]\x08//' -e 'ta' -e 's/\x08//g' \
        -e 's/\x07//g' -e 's/^%$//'
}

kjv=$out/kjv.txt
if [ $force = 0 ] && [ -f "$kjv" ] && [ "$(wc -l <"$kjv")" -eq $kjv_verses ]; then
    echo "text-data: $kjv is complete ($(wc -c <"$kjv") bytes)"
else
    command -v bible >/dev/null || missing bible bible-kjv
    [ -f /usr/lib/bible.data ] || missing /usr/lib/bible.data bible-kjv-text
    write "$kjv" kjv_text
    lines=$(wc -l <"$kjv")
    [ "$lines" -eq $kjv_verses ] || {
        echo "text-data: $kjv has $lines lines, expected $kjv_verses verses" >&2
        rm -f "$kjv"
        exit 1
    }
fi

fortunes=$out/fortunes.txt
[ -f "$fortune_dir/fortunes" ] || missing "$fortune_dir/fortunes" fortunes
# Complete means: the same bytes as a fresh extraction (2.5 MB, a fraction of a second).
if [ $force = 0 ] && [ -f "$fortunes" ] && cmp -s "$fortunes" <(fortunes_text); then
    echo "text-data: $fortunes is complete ($(wc -c <"$fortunes") bytes)"
else
    write "$fortunes" fortunes_text
fi

pairs=$out/kjv-rv1909.tsv
pair_count=31084 # the 31102 verses less the 18 the Spanish leaves empty
if [ $force = 0 ] && [ -f "$pairs" ] && [ "$(wc -l <"$pairs")" -eq $pair_count ]; then
    echo "text-data: $pairs is complete ($(wc -c <"$pairs") bytes)"
else
    command -v diatheke >/dev/null || missing diatheke diatheke
    diatheke -b system -k modulelist 2>/dev/null | grep '^spaRV1909eb ' >/dev/null ||
        missing "the SWORD module spaRV1909eb" sword-text-sparv
    write "$pairs" verse_pairs
    lines=$(wc -l <"$pairs")
    [ "$lines" -eq $pair_count ] || {
        echo "text-data: $pairs has $lines pairs, expected $pair_count" >&2
        rm -f "$pairs"
        exit 1
    }
fi
