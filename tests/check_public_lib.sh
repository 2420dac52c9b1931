#!/usr/bin/env bash
# The public libcdl.a: every global symbol it defines has the cdl_ prefix, and a program that
# includes only cdl.h (and defines some of cdl's internal names itself) links with cdl.pc's
# flags and runs. Called by tests/run.sh from the repository root; counted as one test.
set -euo pipefail
lib=libcdl.a
bad=$(nm -g --defined-only "$lib" | awk 'NF == 3 && $3 !~ /^cdl_/ {print $2, $3}')
if [ -n "$bad" ]; then
    echo "$lib defines global symbols without the cdl_ prefix:"
    echo "$bad" | head -n 20
    exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# shellcheck disable=SC2046 # the flags are words
cc -std=c11 -Wall -Wextra -Werror -o "$tmp/link_check" tests/public/link_check.c \
    $(pkg-config --cflags --libs ./cdl.pc)
got=$("$tmp/link_check" cfg/digits.cfg)
[ "$got" = "1x8x8 10 9978" ] || { echo "link_check cfg/digits.cfg printed '$got'"; exit 1; }
echo "$(nm -g --defined-only "$lib" | awk 'NF == 3' | wc -l) global symbols, all cdl_; a program links with cdl.pc"
