#!/usr/bin/env bats
# cdl doctor (text and --json), cdl version and cdl --version: the build, BLAS, cores,
# OpenMP settings, oneDNN, GPU, MPI, and notes on what is mismatched.
load helpers

doctor_json() {
    "$CDL" doctor --json | python3 -c "import json, sys; d = json.load(sys.stdin); print($1)"
}

@test "cdl --version and cdl version print the same one line" {
    run "$CDL" --version
    [ "$status" -eq 0 ]
    [ "${#lines[@]}" -eq 1 ]
    [[ "$output" =~ ^cdl\ 0\.[0-9]+.*\ GPU=[01]\ MPI=[01]\ SAN=[01]\ DNNL=[01]\ (gcc|clang)\  ]]
    line=$output
    run "$CDL" version
    [ "$status" -eq 0 ]
    [ "$output" = "$line" ]
    run "$CDL" version extra
    [ "$status" -eq 2 ]
}

@test "cdl doctor reports the build, BLAS, cores, OpenMP, oneDNN, GPU and MPI" {
    run "$CDL" doctor
    [ "$status" -eq 0 ]
    for key in cdl build flags BLAS cores threads OpenMP oneDNN GPU MPI; do
        printf '%s\n' "$output" | grep -q "^$key: "
    done
    [[ "$output" == *"OpenBLAS /"*"libopenblas"*", core "* ]]
    if [[ "$("$CDL" --version)" == *DNNL=1* ]]; then
        [[ "$output" == *"oneDNN:   2."*", ISA "*", OpenMP threading"* ]]
    else
        [[ "$output" == *"oneDNN:   not built (make DNNL=0)"* ]]
    fi
    [[ "$output" == *"-std=c11"* ]]
    if [[ "$("$CDL" --version)" == *GPU=0* ]]; then
        [[ "$output" == *"GPU:      not built (make GPU=1)"* ]]
    fi
}

@test "cdl doctor --json holds the same report" {
    run doctor_json 'd["version"], d["build"]["compiler"], d["blas"]["core"] != "", d["cores"]["online"] >= 1, d["onednn"], d["notes"]'
    [ "$status" -eq 0 ]
    [[ "$output" == "0."*"True True "*"OpenMP threading"* || "$output" == "0."*"True True not built (make DNNL=0)"* ]]
    version=$("$CDL" --version)
    [[ "$version" == "cdl $(doctor_json 'd["version"]') "* ]]
}

@test "cdl doctor explains an oversubscribed OMP_NUM_THREADS and spinning threads" {
    cores=$(doctor_json 'd["cores"]["usable"]')
    OMP_NUM_THREADS=$((cores + 6)) OMP_WAIT_POLICY=active run "$CDL" doctor
    [ "$status" -eq 0 ]
    [[ "$output" == *"OMP_NUM_THREADS=$((cores + 6)) > $cores core"*": oversubscribed"* ]]
    [[ "$output" == *"OMP_WAIT_POLICY=active with "*"idle threads spin"* ]]
    OMP_NUM_THREADS=lots run "$CDL" doctor --json
    [[ "$output" == *"OMP_NUM_THREADS='lots' is not a thread count"* ]]
    OMP_NUM_THREADS=1 run doctor_json 'd["openmp"]["OMP_NUM_THREADS"], d["openmp"]["OMP_PLACES"]'
    [ "$output" = "1 None" ]
}

@test "cdl doctor notes a CPU affinity narrower than the machine" {
    command -v taskset >/dev/null || skip "taskset is not installed"
    [ "$(doctor_json 'd["cores"]["online"]')" -ge 2 ] || skip "one core: no narrower affinity"
    run taskset -c 0 "$CDL" doctor
    [ "$status" -eq 0 ]
    [[ "$output" == *"cores:    "*", 1 usable by this process"* ]]
    [[ "$output" == *"may run on 1 of the "*" cores"* ]]
}

@test "cdl doctor refuses arguments" {
    run "$CDL" doctor extra
    [ "$status" -eq 2 ]
    [[ "$output" == *"doctor takes no arguments"* ]]
    run "$CDL" doctor --bogus
    [ "$status" -eq 2 ]
}

# The GPU=1 build (./cdl-gpu from `make GPU=1`, or CDL_GPU): skipped when it is not built.
@test "a GPU=1 build reports CUDA, cuDNN and the devices, or no driver" {
    gpu=${CDL_GPU:-$REPO/cdl-gpu}
    [ -x "$gpu" ] || skip "no cdl built with GPU=1 ($gpu; make GPU=1 needs /usr/local/cuda)"
    run "$gpu" --version
    [[ "$output" == *" GPU=1 "* ]]
    run "$gpu" doctor
    [ "$status" -eq 0 ]
    [[ "$output" == *"CUDA runtime "*", driver "*", cuDNN "*" (built with "* ]]
    if [[ "$output" == *"GPU:      no driver"* ]]; then
        [[ "$output" == *"note:     built with GPU=1, but no CUDA driver is loaded"* ]]
    else
        [[ "$output" =~ GPU:\ +[0-9]+\ device ]] || [[ "$output" == *"GPU:      no device"* ]]
    fi
    run "$gpu" doctor --json
    [ "$status" -eq 0 ]
    [[ "$output" == *'"cuda_runtime":'* ]]
}

@test "an MPI=1 build reports its MPI library" {
    mpi=${CDL_MPI:-$REPO/cdl-mpi}
    [ -x "$mpi" ] || skip "no cdl built with MPI=1 ($mpi)"
    run "$mpi" doctor
    [ "$status" -eq 0 ]
    [[ "$output" == *"build:    GPU=0 MPI=1 "* ]]
    [[ "$output" =~ MPI:\ +(Open\ MPI|MPICH) ]]
}

@test "cdl doctor: the user's OPENBLAS_CORETYPE wins over cdl's kernel choice" {
    OPENBLAS_CORETYPE=Prescott run doctor_json 'd["blas"]["core"]'
    [ "$status" -eq 0 ]
    [ "$output" = "Prescott" ]
    run doctor_json 'd["blas"]["core"]'
    if grep -q ' avx2 ' /proc/cpuinfo && [[ "$output" == *"cdl's choice"* ]]; then
        [[ "$output" == "SkylakeX (cdl's choice: "* || "$output" == "Haswell (cdl's choice: "* ]]
    fi
}
