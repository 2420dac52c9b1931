#!/usr/bin/env bash
# Data-parallel training throughput on one box: 1 rank x 2 threads against 2 ranks x 1 thread
# (mpirun), on cfg/fashion.cfg (Fashion-MNIST) and cfg/resnet18_cifar.cfg (random CIFAR-10
# shaped batches: no CIFAR ships with Debian), each trained for SECONDS of wall time. Prints
# images/s and, for 2 ranks, rank 0's time blocked in the gradient allreduce after backward and
# the time its buckets were in flight while backward still ran (hidden), per step.
# Usage: scripts/bench-dist.sh [SECONDS] [BATCH_FASHION] [BATCH_RESNET]   (default 60 128 64)
set -euo pipefail

cd "$(dirname "$0")/.."
args=("$@")
seconds=${1:-60}
batches=("${2:-128}" "${3:-64}")
cfgs=(cfg/fashion.cfg cfg/resnet18_cifar.cfg)
command -v mpirun >/dev/null || { echo "bench-dist: mpirun missing (scripts/deps.sh)" >&2; exit 1; }
[ -x ./cdl-mpi ] || make -j2 MPI=1 >&2
mpirun_flags=(--oversubscribe --bind-to none)
[ "$(id -u)" -ne 0 ] || mpirun_flags+=(--allow-run-as-root)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# 5000 random CIFAR-10 records (a label byte, then 3x32x32 bytes) for the ResNet.
/usr/bin/python3 -c '
import os, sys
with open(sys.argv[1], "wb") as f:
    for _ in range(5000):
        f.write(bytes([os.urandom(1)[0] % 10]) + os.urandom(3072))' "$work/random.bin"
printf 'classes=10\ntrain=%s\n' "$work/random.bin" > "$work/random.data"

# The last epoch record of a --log file, as "images/s wait_ms_per_step hidden_ms_per_step" (the
# allreduce times are the epoch's, over its steps).
last_epoch() {
    /usr/bin/python3 -c '
import json, sys
r = [o for o in map(json.loads, open(sys.argv[1])) if o["type"] == "epoch"]
steps = max(r[-1]["step"] - (r[-2]["step"] if len(r) > 1 else 0), 1)
ms = lambda k: "%.2f" % (1000 * r[-1].get(k, 0) / steps)
print("%.1f" % r[-1]["images_per_s"], ms("allreduce_wait_s"), ms("allreduce_hidden_s"))' "$1"
}

# shellcheck source=scripts/lib/speed-table.sh
source scripts/lib/speed-table.sh
speed_table_begin bench-dist "${args[@]}"
echo "cdl-mpi, $seconds s of training per run (single runs: other load on the machine shows)"
printf '%-24s %6s %-16s %12s %16s %16s\n' cfg batch layout "images/s" "wait ms/step" "hidden ms/step"
for i in 0 1; do
    cfg=${cfgs[$i]} batch=${batches[$i]}
    data=()
    [ "$cfg" = cfg/resnet18_cifar.cfg ] && data=(--data "$work/random.data")
    common=(train "$cfg" "${data[@]}" --time-limit "$seconds" --epochs 1000 --workers 1
        --log-every 1000000)
    rm -f "$work/one.jsonl" "$work/two.jsonl"
    OMP_NUM_THREADS=2 ./cdl-mpi "${common[@]}" --set "net.batch=$batch" --threads 2 \
        --out "$work/one.cdl" --log "$work/one.jsonl" 2>/dev/null
    read -r ips _ _ < <(last_epoch "$work/one.jsonl")
    printf '%-24s %6s %-16s %12s %16s %16s\n' "$cfg" "$batch" "1 rank x 2 thr" "$ips" - -
    OMP_NUM_THREADS=1 mpirun "${mpirun_flags[@]}" -np 2 ./cdl-mpi "${common[@]}" \
        --set "net.batch=$((batch / 2))" --threads 1 --out "$work/two.cdl" \
        --log "$work/two.jsonl" 2>/dev/null
    read -r ips wait hidden < <(last_epoch "$work/two.jsonl")
    printf '%-24s %6s %-16s %12s %16s %16s\n' "$cfg" "$batch" "2 ranks x 1 thr" "$ips" "$wait" "$hidden"
done
speed_table_end
