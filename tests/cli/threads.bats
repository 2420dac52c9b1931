#!/usr/bin/env bats
# Default threads (src/cdl_threads.c): OMP_NUM_THREADS and --threads win over the load-based
# count; OpenMP's wait policy is the user's (libgomp's default unless set).
load helpers

# openmp_json KEY [ENV ARG...]: cdl doctor --json's openmp.KEY, cdl run under `env ARG...`.
openmp_json() {
    env "${@:2}" "$CDL" doctor --json | /usr/bin/python3 -c \
        'import json, sys; print(json.load(sys.stdin)["openmp"][sys.argv[1]])' "$1"
}

# threads [ENV ARG...] [-- BENCH OPTION...]: the thread count `cdl bench` used.
threads() {
    local envs=()
    while [ $# -gt 0 ] && [ "$1" != -- ]; do envs+=("$1") && shift; done
    [ $# -eq 0 ] || shift
    env "${envs[@]}" "$CDL" bench "$REPO/cfg/digits.cfg" --steps 1 --warmup 0 --json "$@" |
        /usr/bin/python3 -c 'import json, sys; print(json.load(sys.stdin)["threads"])'
}

@test "cdl leaves OpenMP's wait policy to the user" {
    [ "$(openmp_json GOMP_SPINCOUNT -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT)" = None ]
    [ "$(openmp_json GOMP_SPINCOUNT GOMP_SPINCOUNT=7)" = 7 ]
}

@test "OMP_NUM_THREADS sets the default thread count and --threads overrides it" {
    [ "$(threads OMP_NUM_THREADS=1)" = 1 ]
    [ "$(threads OMP_NUM_THREADS=3)" = 3 ]
    [ "$(threads OMP_NUM_THREADS=1 -- --threads 2)" = 2 ]
    [ "$(openmp_json cdl_threads OMP_NUM_THREADS=1)" = 1 ]
    n=$(threads -u OMP_NUM_THREADS)
    [ "$n" -ge 1 ] && [ "$n" -le "$(nproc)" ]
}
