#!/usr/bin/env bash
# Runs every unit test binary, the fuzz targets' corpus replay (tests/fuzz/replay.c), the
# include-order check (scripts/check-includes.sh), the documentation's links
# (scripts/check-doc-links.sh), the CUDA simulator's tests where the CUDA toolkit is and the GPU=1
# build's link and cuDNN descriptor test where nvcc and cuDNN are (cuda/cuda.mk),
# examples/train_digits (training through the public API to >= 90% accuracy), then (unless
# SAN=1) the public library check (tests/check_public_lib.sh) and the Bats CLI tests; the last
# line is "N passed, N failed". Called by `make test` with BUILD, CDL_BIN and SAN set.
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build/rel}
SAN=${SAN:-0}
mkdir -p "$BUILD/logs"
passed=0
failed=0

# check NAME COMMAND...: runs COMMAND with its output in $BUILD/logs/NAME.log and counts it:
# "ok   NAME: <its last line>", or FAIL with the log's last 40 lines.
check() {
    local name=$1 log="$BUILD/logs/${1// /_}.log"
    shift
    if "$@" > "$log" 2>&1; then
        passed=$((passed + 1))
        echo "ok   $name: $(tail -n 1 "$log")"
    else
        failed=$((failed + 1))
        echo "FAIL $name:"
        sed 's/^/    /' "$log" | tail -n 40
    fi
}

for t in "$BUILD"/tests/test_*; do
    [ -x "$t" ] && check "$(basename "$t")" "$t"
done
# bf16 convolutions on oneDNN's float32 kernels with the operands rounded by cdl (what runs where
# oneDNN's bf16 kernels are the slower, dnnl_conv_bf16_kernels) on any machine: oneDNN capped
# below its bf16 instructions (no effect on AVX2, where the rounding reference runs them).
for t in test_bf16 test_dnnl_conv; do
    [ -x "$BUILD/tests/$t" ] &&
        check "$t, float32 kernels" env ONEDNN_MAX_CPU_ISA=avx512_core "$BUILD/tests/$t"
done
# Every fuzz target's seed corpus and regression inputs, replayed under ASan+UBSan
# (tests/fuzz/replay.c), one test per target.
FUZZ_REPLAY_DIR=${FUZZ_REPLAY_DIR:-build/san/fuzz}
for r in "$FUZZ_REPLAY_DIR"/replay_*; do
    name=${r##*/replay_}
    [ -x "$r" ] && check "fuzz replay $name" "$r" "tests/fuzz/corpus/$name" \
        "tests/fuzz/regressions/$name"
done
# The CUDA simulator's tests (cuda/cuda.mk), built where the CUDA toolkit is (SIM_BUILD set).
if [ -n "${SIM_BUILD:-}" ]; then
    for t in "$SIM_BUILD"/tests/test_cuda_sim_*; do
        [ -x "$t" ] && check "$(basename "$t")" "$t"
    done
    # every family the GPU backend has, against the CPU reference, on the simulator
    check "test_backend_ops (GPU=sim)" "$SIM_BUILD/tests/test_backend_ops"
    check "test_gpu_forward_at (GPU=sim)" "$SIM_BUILD/tests/test_gpu_forward_at"
    check "test_batch_staging (GPU=sim)" "$SIM_BUILD/tests/test_batch_staging"
    check "test_gpu_step_syncs (GPU=sim)" "$SIM_BUILD/tests/test_gpu_step_syncs"
    # the 16-bit storage decision and the memory plan's 2-byte slots (GPU nets: simulator only)
    check "test_net_storage (GPU=sim)" "$SIM_BUILD/tests/test_net_storage"
    # a batch cut to its rows against the padded batch (attention dropout's masks too), on the GPU
    check "test_net_rows (GPU=sim)" "$SIM_BUILD/tests/test_net_rows"
    check "test_net_channels_last (GPU=sim)" "$SIM_BUILD/tests/test_net_channels_last"
    export CDL_GPUSIM_BIN="$PWD/${SIM_CDL:-cdl-gpusim}"
else
    echo "# the CUDA simulator's tests need the CUDA toolkit's headers (CUDA_DIR): not run"
fi
# The GPU=1 build (cuda/cuda.mk's gpu1-tests): it links and starts, and cuDNN's descriptors of
# every convolution are cdl's (no device needed).
if [ -n "${GPU1_BUILD:-}" ]; then
    check "cdl-gpu (GPU=1) links and starts" sh -c './cdl-gpu --version | grep "GPU=1"'
    check "test_cudnn_descriptors (GPU=1)" "$GPU1_BUILD/tests/test_cudnn_descriptors"
fi
check "include order" scripts/check-includes.sh
check "doc links" scripts/check-doc-links.sh
check train_digits "$BUILD/examples/train_digits" "$BUILD/logs/train_digits.cdl"

if [ "$SAN" != 1 ]; then
    check check_public_lib tests/check_public_lib.sh
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
