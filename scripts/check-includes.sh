#!/usr/bin/env bash
# Checks that every `#include "..."` in src/ points at the file's own floor or one below it
# (and that src/cli reaches the library through cdl.h only), and prints each violation as FILE:LINE: includes HEADER (floor X above floor Y); exit 1 if any.
# Run by tests/run.sh as the test "include order". Only src/ is checked: tests may include
# anything.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2

# The floors, lowest first; a folder may include its own floor and every floor below it
# (ops may include util; util includes nothing above itself). `api` is src/cdl.h,
# src/cdl.c and any src/cdl_*.{c,h}.
FLOORS=(
    "util"
    "ops"
    "io"
    "data"
    "core"
    "layers"
    "backend"
    "train"
    "model"
    "api"
    "cli"
)

# Allowed upward includes, one "FILE HEADER" pair per line (paths relative to src/).
# The allowed exceptions of the design, the layer registry that core looks layer families up in
# (core calls layer_type_find and layer_type_names, defined in layers/registry.c) and the backends
# it builds a net for (backend_find, defined in backend/backends.c), are linked, not included:
# core/layer.h and core/backend.h declare them, so they need no entry here. Add an entry
# only with a comment saying why.
EXCEPTIONS=(
)

# The CLI is a client of the public API: besides its own files it includes only these (the
# API's internal headers, such as cdl_model.h, and every floor between util and the API are
# off limits to it).
CLI_MAY_INCLUDE=("cdl.h" "util")

floor_of() { # path relative to src/ -> floor name
    case "$1" in
        cdl.h | cdl.c | cdl_*.c | cdl_*.h) echo api ;;
        */*) echo "${1%%/*}" ;;
        *) echo "?" ;;
    esac
}

rank_of() { # floor name -> its height (index in FLOORS), or -1 if unknown
    local i
    for i in "${!FLOORS[@]}"; do
        if [ "${FLOORS[$i]}" = "$1" ]; then
            echo "$i"
            return
        fi
    done
    echo -1
}

is_exception() {
    local pair
    for pair in "${EXCEPTIONS[@]+"${EXCEPTIONS[@]}"}"; do
        [ "$pair" = "$1 $2" ] && return 0
    done
    return 1
}

cli_may_include() { # header path -> 0 when the CLI may include it
    local allowed
    for allowed in "${CLI_MAY_INCLUDE[@]}"; do
        [ "$1" = "$allowed" ] || [ "${1%%/*}" = "$allowed" ] && return 0
    done
    return 1
}

violations=0
checked=0
while IFS= read -r hit; do
    file=${hit%%:*}
    rest=${hit#*:}
    line=${rest%%:*}
    header=$(sed -E 's/^[^"]*"([^"]*)".*$/\1/' <<< "${rest#*:}")
    rel=${file#src/}
    dir=$(dirname "$rel")
    # A quoted include resolves next to the including file first, then under -Isrc.
    if [ "$dir" != . ] && [ -e "src/$dir/$header" ]; then
        target=$dir/$header
    else
        target=$header
    fi
    checked=$((checked + 1))
    from=$(floor_of "$rel")
    to=$(floor_of "$target")
    from_rank=$(rank_of "$from")
    to_rank=$(rank_of "$to")
    if [ "$from_rank" -lt 0 ] || [ "$to_rank" -lt 0 ]; then
        echo "$file:$line: includes $header (floor $to or $from is not in scripts/check-includes.sh)"
        violations=$((violations + 1))
    elif [ "$to_rank" -gt "$from_rank" ] && ! is_exception "$rel" "$target"; then
        echo "$file:$line: includes $header (floor $to above floor $from)"
        violations=$((violations + 1))
    elif [ "$from" = cli ] && [ "$to" != cli ] && ! cli_may_include "$target"; then
        echo "$file:$line: includes $header (the CLI reaches the library through cdl.h only)"
        violations=$((violations + 1))
    fi
done < <(grep -rnE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' src --include='*.c' --include='*.h' | sort)

if [ "$violations" -gt 0 ]; then
    echo "$violations include(s) break the floor order (see the top of scripts/check-includes.sh)"
    exit 1
fi
echo "$checked includes checked, each on its own floor or below"
