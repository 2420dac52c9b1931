#!/usr/bin/env bats
# Data-parallel training of a GPU net (make MPI=1 GPU=sim, ./cdl-gpusim-mpi): the gradient
# buckets summed by NCCL on a communication stream (cuda/nccl_collective.c), here through the
# simulator's NCCL over MPI (cuda/sim/nccl_shim.cc). 2 ranks with batch B/2 train the weights 1
# process with batch B trains. The binary is built here when mpicc and the CUDA toolkit's headers
# are there, else the tests are skipped.

load helpers

setup_file() {
    export CDL_GPU_MPI="${CDL_GPUSIM_MPI_BIN:-$REPO/cdl-gpusim-mpi}"
    if [ -z "${CDL_GPUSIM_MPI_BIN:-}" ] && command -v mpicc >/dev/null &&
        command -v mpirun >/dev/null && [ -f "${CUDA_DIR:-/usr/local/cuda}/include/nccl.h" ]; then
        make -C "$REPO" -j2 MPI=1 GPU=sim cdl-gpusim-mpi >/dev/null 2>&1 || true
    fi
}

setup() {
    command -v mpirun >/dev/null || skip "mpirun is not installed (scripts/deps.sh installs Open MPI)"
    [ -x "$CDL_GPU_MPI" ] || skip "no cdl built with MPI=1 GPU=sim ($CDL_GPU_MPI)"
    # the checkpoints' export too: any cdl reads them
    CDL="$CDL_GPU_MPI"
    WORK="$(mktemp -d)"
    cd "$WORK"
    write_digits_mlp
}

@test "GPU, NCCL: 2 ranks with batch 16 train the weights 1 GPU process with batch 32 does" {
    "$CDL_GPU_MPI" train mlp.cfg --data digits.data --epochs 1 --threads 1 --gpu 0 \
        --out one.cdl 2>/dev/null
    run mpirun --allow-run-as-root --oversubscribe -np 2 "$CDL_GPU_MPI" train mlp.cfg \
        --data digits.data --set net.batch=16 --epochs 1 --threads 1 --gpu 0 --out two.cdl
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == *"on 2 ranks (allreduce: "*"saved two.cdl"* ]]
    diff=$(max_rel_diff one.cdl two.cdl)
    echo "max relative difference $diff"
    python3 -c "import sys; sys.exit(not float('$diff') <= 1e-5)"
}

@test "GPU, NCCL: --gpu 0,1 gives each rank on the machine its own device" {
    "$CDL_GPU_MPI" train mlp.cfg --data digits.data --epochs 1 --threads 1 --gpu 0 \
        --out one.cdl 2>/dev/null
    # the simulator shows CDL_GPUSIM_DEVICES devices: rank 0 takes device 0, rank 1 device 1
    CDL_GPUSIM_DEVICES=2 run mpirun --allow-run-as-root --oversubscribe -x CDL_GPUSIM_DEVICES \
        -np 2 "$CDL_GPU_MPI" train mlp.cfg --data digits.data --set net.batch=16 --epochs 1 \
        --threads 1 --gpu 0,1 --out two.cdl
    echo "$output"
    [ "$status" -eq 0 ]
    diff=$(max_rel_diff one.cdl two.cdl)
    python3 -c "import sys; sys.exit(not float('$diff') <= 1e-5)"
    # with one device, rank 1's device 1 is not there: refused, naming it
    run mpirun --allow-run-as-root --oversubscribe -np 2 "$CDL_GPU_MPI" train mlp.cfg \
        --data digits.data --set net.batch=16 --epochs 1 --threads 1 --gpu 0,1 --out no.cdl
    [ "$status" -ne 0 ]
    [[ "$output" == *"cdl: --gpu 1: this machine has 1 CUDA device (0 to 0)"* ]]
    # fewer devices than the machine's ranks
    run mpirun --allow-run-as-root --oversubscribe -np 3 "$CDL_GPU_MPI" train mlp.cfg \
        --data digits.data --epochs 1 --threads 1 --gpu 0,1 --out no.cdl
    [ "$status" -ne 0 ]
    [[ "$output" == *"cdl: --gpu 0,1 names 2 devices for the 3 ranks mpirun started on this machine"* ]]
    [ ! -e no.cdl ]
}

# A step captured as CUDA graphs under mpirun: the last pass's graph holds the gradient buckets'
# ncclAllReduce (recorded on the communication stream, which the capture forks into and joins
# back; the simulator's NCCL records it as NCCL does and replays it), and the loss is summed over
# the ranks once the replayed step finished. Dropout's masks (each rank's samples) and AdamW's
# bias corrections come from device memory; two passes a step are two graphs.
@test "GPU, NCCL: --cuda-graph on 2 ranks gives the eager 2-rank run's losses and weights" {
    sed '/^\[softmax\]/i [dropout]\nprobability=0.2' mlp.cfg > dropout.cfg
    for run in eager graph; do
        local graph=()
        [ "$run" = graph ] && graph=(--cuda-graph)
        run mpirun --allow-run-as-root --oversubscribe -np 2 "$CDL_GPU_MPI" train dropout.cfg \
            --data digits.data --set net.batch=16 --set net.subdivisions=2 \
            --set net.optimizer=adamw --set net.learning_rate=0.003 --epochs 2 --log-every 1 \
            --threads 1 --gpu 0 "${graph[@]}" --log $run.jsonl --out $run.cdl
        echo "$output"
        [ "$status" -eq 0 ]
    done
    [ "$(jq -c 'select(.type == "step") | .loss' eager.jsonl | wc -l)" -eq 88 ]
    diff <(jq -c 'select(.type == "step") | .loss' eager.jsonl) \
        <(jq -c 'select(.type == "step") | .loss' graph.jsonl)
    cmp eager.cdl graph.cdl
}
