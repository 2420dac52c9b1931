#!/bin/sh
# Tries every cfg of Debian's darknet package with cdl: `cdl info`, then a forward pass
# (`cdl predict CFG PHOTO`), and prints the outcomes as the Markdown table in docs/darknet.md
# ("darknet cfgs"): what runs (parameters, FLOPs, warnings) and what is refused, and why.
# usage: scripts/darknet-compat.sh [CFG_DIR [PHOTO]]   (CDL=path/to/cdl to test another binary)
set -eu
export LC_ALL=C
repo=$(cd "$(dirname "$0")/.." && pwd)
cdl=${CDL:-$repo/cdl}
dir=${1:-/usr/share/darknet/cfg}
photo=${2:-/usr/share/darknet/data/dog.jpg}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "| cfg | outcome | details |"
echo "| --- | --- | --- |"
for cfg in "$dir"/*.cfg; do
    name=$(basename "$cfg")
    if "$cdl" info "$cfg" >"$tmp/info" 2>"$tmp/err"; then
        if "$cdl" predict "$cfg" "$photo" --top 1 >/dev/null 2>"$tmp/predict"; then
            outcome=runs
        else
            outcome="predict fails (exit $?)"
        fi
        details=$(sed -n 's/^total: \([0-9]*\) parameters.*, \([0-9.]*\) MFLOPs per image$/\1 parameters, \2 MFLOPs/p' "$tmp/info")
        warnings=$(sed -n "s/^.*warning: darknet key \('[a-z_]*' in \[[a-z]*\]\) is ignored.*/\1/p" "$tmp/err" | paste -sd, - | sed 's/,/, /g')
        [ -z "$warnings" ] || details="$details; ignored: $warnings"
    else
        outcome="refused (exit $?)"
        details=$(sed "s|^cdl: $dir/||" "$tmp/err" | tail -n 1)
    fi
    echo "| $name | $outcome | $details |"
done
