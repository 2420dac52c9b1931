# Sourced by scripts/bench-cpu.sh and scripts/bench-shapes.sh: the PyTorch peers found
# (runners: cdl, torch1 and, where its venv has torch, torch2; torchN_python, torchN_version)
# and the helpers both use. Expects debian_python, venv, tmp and fail() set by the caller.
json_field() { # json_field FIELD <<< JSON
    "$debian_python" -c 'import json, sys; print(json.loads(sys.stdin.read())[sys.argv[1]])' "$1"
}
# torch_env PYTHON ARGS...: PyTorch without the OpenBLAS overrides cdl's tests may export.
torch_env() { env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE "$@"; }
# quiet CMD...: CMD's stdout; on failure its stderr, then exit.
quiet() {
    local out
    out=$("$@" 2>"$tmp/stderr") || { cat "$tmp/stderr" >&2 && fail "failed: $*"; }
    printf '%s\n' "$out"
}

runners=(cdl torch1)
torch1_python=$debian_python
torch1_version=$(torch_env "$torch1_python" -c 'import torch; print(torch.__version__)')
torch2_version="not installed: run scripts/torch-venv.sh"
if [ -x "$venv/bin/python" ] &&
    v=$(torch_env "$venv/bin/python" -c 'import torch; print(torch.__version__)' 2>/dev/null); then
    runners+=(torch2)
    torch2_version=$v
fi
torch2_python=$venv/bin/python
