# shellcheck shell=bash
# Sourced by the bench scripts: besides printing its table, a run writes it as a dated
# Markdown file, docs/speed/YYYY-MM-DD-SCRIPT-CPU.md (-2, -3, ... when that name is taken),
# headed by what the figures depend on (CPU model and flags, cores, commit, cdl's build,
# load average, the command line), so that docs/speed.md can link every measurement.
#   speed_table_begin SCRIPT ARGS...  start recording this run (call after the script's cd to
#                                     the repository root); from here on stdout is also kept
#   speed_table_meta KEY VALUE        one more header row (threads, FMA peak, ...)
#   speed_table_columns COL...        start a Markdown table of these columns ...
#   speed_table_row CELL...           ... and add a row to it (printing stays the script's)
#   speed_table_end                   write the file; its path goes to stderr
# CDL_SPEED_DIR=DIR writes elsewhere; CDL_SPEED_DIR=- (or empty) writes nothing. A run that
# fails before speed_table_end writes nothing either. `bash scripts/lib/speed-table.sh
# --selftest DIR` writes a sample file into DIR (a dry run of the writing path).

speed_cpu_model() {
    sed -n 's/^model name[[:space:]]*:[[:space:]]*//p' /proc/cpuinfo 2>/dev/null | head -1
}

# "AMD EPYC 9R14 96-Core Processor" -> "amd-epyc-9r14-96-core"
speed_cpu_short() {
    speed_cpu_model | tr '[:upper:]' '[:lower:]' |
        sed -e 's/([rR]\|tm)//g' -e 's/ \(processor\|cpu\)\b//g' -e 's/@.*//' \
            -e 's/[^a-z0-9]\{1,\}/-/g' -e 's/^-//' -e 's/-$//' | cut -c1-32 | sed 's/-$//'
}

speed_cpu_flags() {
    local f have=() flags
    flags=" $(sed -n 's/^flags[[:space:]]*:[[:space:]]*//p' /proc/cpuinfo 2>/dev/null | head -1) "
    for f in avx2 fma avx512f avx512bw avx512_vnni avx512_bf16 avx512_fp16 amx_tile amx_bf16; do
        if [[ $flags == *" $f "* ]]; then have+=("$f"); fi
    done
    echo "${have[*]:-none of avx2, fma, avx512*, amx*}"
}

speed_table_begin() {
    local dir=${CDL_SPEED_DIR-docs/speed} script=$1 day cpu n=1
    shift
    speed_file=
    [ -z "$dir" ] || [ "$dir" = - ] && return 0
    mkdir -p "$dir"
    day=$(date -u +%F)
    cpu=$(speed_cpu_short)
    speed_file=$dir/$day-$script-${cpu:-unknown-cpu}.md
    while [ -e "$speed_file" ]; do
        n=$((n + 1))
        speed_file=$dir/$day-$script-${cpu:-unknown-cpu}-$n.md
    done
    speed_work=$(mktemp -d)
    speed_script=$script
    {
        echo "| | |"
        echo "|---|---|"
        echo "| date | $(date -u '+%F %H:%M UTC') |"
        echo "| command | \`scripts/$script.sh${*:+ $*}\` |"
        echo "| commit | $(git describe --always --dirty 2>/dev/null || echo unknown) |"
        if [ -x ./cdl ]; then echo "| cdl | $(./cdl --version 2>/dev/null) |"; fi
        echo "| CPU | $(speed_cpu_model) |"
        echo "| flags | $(speed_cpu_flags) |"
        echo "| cores | $(nproc) online |"
        echo "| load average at start | $(cut -d' ' -f1-3 /proc/loadavg) |"
        local v
        for v in OMP_NUM_THREADS OPENBLAS_CORETYPE OMP_WAIT_POLICY GOMP_SPINCOUNT; do
            if [ -n "${!v:-}" ]; then echo "| $v | ${!v} |"; fi
        done
    } >"$speed_work/meta"
    : >"$speed_work/table"
    exec 3>&1 > >(tee "$speed_work/out")
    speed_tee=$!
}

speed_table_meta() {
    [ -n "${speed_file:-}" ] && echo "| $1 | $2 |" >>"$speed_work/meta"
    return 0
}

speed_table_columns() {
    [ -n "${speed_file:-}" ] || return 0
    local IFS='|' cells
    cells="$*"
    printf '| %s |\n' "${cells//|/ | }" >>"$speed_work/table"
    printf '|%s\n' "$(printf -- '---|%.0s' "$@")" >>"$speed_work/table"
}

speed_table_row() {
    [ -n "${speed_file:-}" ] || return 0
    local IFS='|' cells
    cells="$*"
    printf '| %s |\n' "${cells//|/ | }" >>"$speed_work/table"
}

speed_table_end() {
    [ -n "${speed_file:-}" ] || return 0
    exec 1>&3 3>&-
    wait "$speed_tee" 2>/dev/null || true
    {
        echo "# $speed_script, $(date -u +%F): $(speed_cpu_model)"
        echo
        echo "Written by \`scripts/$speed_script.sh\` (see [speed.md](../speed.md) for how to"
        echo "read and regenerate it)."
        echo
        cat "$speed_work/meta"
        if [ -s "$speed_work/table" ]; then
            echo
            cat "$speed_work/table"
        fi
        echo
        echo "The script's output:"
        echo
        echo '```text'
        cat "$speed_work/out"
        echo '```'
    } >"$speed_file"
    rm -rf "$speed_work"
    echo "table written to $speed_file" >&2
}

if [ "${BASH_SOURCE[0]}" = "$0" ] && [ "${1:-}" = --selftest ]; then
    set -euo pipefail
    CDL_SPEED_DIR=${2:?usage: speed-table.sh --selftest DIR}
    speed_table_begin selftest --example arg
    speed_table_meta threads "1, 2"
    speed_table_columns net threads "img/s"
    echo "net      threads   img/s"
    for t in 1 2; do
        echo "example  $t         $((t * 100)).0"
        speed_table_row example "$t" "$((t * 100)).0"
    done
    speed_table_end
fi
