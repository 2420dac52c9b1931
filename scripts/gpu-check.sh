#!/usr/bin/env bash
# The GPU check: one run that says whether cdl's GPU backend works on this machine's GPU and
# how fast it trains against PyTorch on the same card. Run from anywhere; it works in the
# repository root. Each step prints one line (ok, FAIL or skip, its seconds, what it found);
# the last line is "N passed, N failed".
#   scripts/gpu-check.sh [--bundle DIR] [--out DIR] [--budget S] [--skip A,B]
#       on a machine with an NVIDIA GPU: the binaries of scripts/gpu-bundle.sh (DIR, default
#       build/gpu-bundle, or DIR.tar.xz, unpacked into a temporary folder); cuBLAS and cuDNN from
#       the python3's pip packages (site-packages/nvidia/...), else from the system's.
#   scripts/gpu-check.sh --sim [--out DIR] [--skip A,B]
#       the same steps but the timings and compute-sanitizer, against the CUDA simulator's
#       build (./cdl-gpusim and build/gpusim-rel/tests/, make GPU=sim), with fewer training
#       steps: a test of this script on a machine without a GPU.
# Steps: libraries, gpu (nvidia-smi), doctor (cdl doctor, printed), test_gpu_forward_at,
# test_backend_ops (every family against the CPU reference; on a GPU, the GPU rows run there,
# the own engine's and cuDNN's in each precision),
# curves (cfg/digits.cfg on the CPU and on the GPU from one seed, 308 steps, 88 under --sim:
# the largest loss difference, and the plot curves.png), precisions (cfg/digits.cfg one epoch in
# bf16, tf32 and fp16 on both: the losses against the CPU's), graphs (--cuda-graph against eager
# steps), time_resnet18_cifar, time_gpt_tiny (float32) and time_resnet50 (224, batch 128, bf16)
# (cdl bench --gpu 0, eager and --cuda-graph, against PyTorch eager; image nets channels-last),
# memcheck and racecheck (compute-sanitizer on a 5-step run), torch_compile (PyTorch's
# torch.compile on the same nets, reported beside).
# --skip names steps to leave out; --budget bounds the whole run in seconds (default 330): each
# step's timeout is its own budget or what is left, whichever is less.
# Writes into --out (default $OUT when set, else build/gpu-check-device or build/gpu-check-sim),
# at most 5 files: gpu-check.log (this output), summary.json (the steps, the figures, what is
# not there yet), logs.tar.gz (each step's log and the training logs), curves.png, and on a GPU
# the dated speed table (scripts/lib/speed-table.sh; CDL_SPEED_DIR= writes it elsewhere).
set -uo pipefail

cd "$(dirname "$0")/.." || exit 2
repo=$(pwd)
mode=device
bundle=build/gpu-bundle
out=${OUT:-}
budget_s=330
skip_list=,
while [ $# -gt 0 ]; do
    case "$1" in
    --sim) mode=sim && shift ;;
    --bundle) bundle=$2 && shift 2 ;;
    --out) out=$2 && shift 2 ;;
    --budget) budget_s=$2 && shift 2 ;;
    --skip) skip_list=",$2," && shift 2 ;;
    -h | --help) sed -n '2,29p' "$0" | sed 's/^# \{0,1\}//' && exit 0 ;;
    *) echo "gpu-check: unknown argument $1 (see --help)" >&2 && exit 2 ;;
    esac
done
command -v python3 >/dev/null || { echo "gpu-check: needs python3" >&2 && exit 2; }
out=${out:-build/gpu-check-$mode}
mkdir -p "$out" && out=$(cd "$out" && pwd)
rm -f "$out/gpu-check.log" "$out/summary.json" "$out/logs.tar.gz" "$out/curves.png"
work=$(mktemp -d "${TMPDIR:-/tmp}/gpu-check.XXXXXX")
logs=$work/logs
mkdir -p "$logs"
trap 'rm -rf "$work"' EXIT
exec > >(tee "$out/gpu-check.log") 2>&1
deadline=$((SECONDS + budget_s))
threads=$(nproc)
[ "$threads" -gt 8 ] && threads=8

# ---- bookkeeping: one line per step, a TSV of results, a TSV of figures for summary.json ----
results=$work/results.tsv
metrics=$work/metrics.tsv
: >"$results"
: >"$metrics"
passed=0 failed=0 skipped=0
metric() { printf '%s\t%s\n' "$1" "$2" >>"$metrics"; }

# step NAME BUDGET_S FUNCTION: runs FUNCTION with step_timeout = min(BUDGET_S, time left) and
# step_log = logs/NAME.log; FUNCTION sets summary and returns 0 (passed), 1 (failed) or 3
# (skipped). A step named in --skip, or with under 5 s left, is skipped without running.
step() {
    local name=$1 budget=$2 fn=$3 t0=$SECONDS status label
    summary=
    step_log=$logs/$name.log
    step_timeout=$((deadline - SECONDS < budget ? deadline - SECONDS : budget))
    if [[ $skip_list == *",$name,"* ]]; then
        status=3 summary="left out (--skip)"
    elif [ "$step_timeout" -lt 5 ]; then
        status=3 summary="left out: the run's --budget of ${budget_s}s is spent"
    else
        "$fn"
        status=$?
    fi
    case $status in
    0) label=ok && passed=$((passed + 1)) ;;
    3) label=skip && skipped=$((skipped + 1)) ;;
    *) label=FAIL && failed=$((failed + 1)) status=1 ;;
    esac
    printf '%s\t%s\t%s\t%s\n' "$name" "$label" "$((SECONDS - t0))" "$summary" >>"$results"
    printf '%-4s %-20s %4ss  %s\n' "$label" "$name" "$((SECONDS - t0))" "$summary"
}

# limited CMD...: CMD under the step's timeout, its output appended to the step's log.
limited() {
    timeout --kill-after=5 "$step_timeout" "$@" >>"$step_log" 2>&1
    local rc=$?
    [ $rc = 124 ] && echo "(timed out after ${step_timeout}s)" >>"$step_log"
    return $rc
}

# A status's words: "timed out after Ns" for 124, else "exit N".
why() { [ "$1" = 124 ] && echo "timed out after ${step_timeout}s" || echo "exit $1"; }

# field JSON KEY: a key of a JSON object, or - when there is none.
field() {
    python3 -c 'import json, sys
try:
    print(json.loads(sys.argv[1]).get(sys.argv[2], "-"))
except ValueError:
    print("-")' "$1" "$2"
}

# ---- what runs: the bundle's binaries, or the simulator build's ----
if [ $mode = sim ]; then
    cdl=$repo/cdl-gpusim
    tests_dir=$repo/build/gpusim-rel/tests
    [ -x "$cdl" ] || { echo "gpu-check: no ./cdl-gpusim: build it with make GPU=sim" >&2 && exit 2; }
    curve_epochs=2
else
    if [ ! -x "$bundle/cdl-gpu" ] && [ -f "$bundle.tar.xz" ]; then
        mkdir -p "$work/bundle"
        if command -v xz >/dev/null; then
            tar -xJf "$bundle.tar.xz" -C "$work/bundle"
        else
            python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' \
                "$bundle.tar.xz" "$work/bundle"
        fi
        bundle=$work/bundle/$(basename "$bundle")
    fi
    [ -x "$bundle/cdl-gpu" ] || {
        echo "gpu-check: no $bundle/cdl-gpu nor $bundle.tar.xz: make it with scripts/gpu-bundle.sh" >&2
        exit 2
    }
    bundle=$(cd "$bundle" && pwd)
    cdl=$bundle/cdl-gpu
    tests_dir=$bundle
    curve_epochs=7
fi

echo "gpu-check ($mode): $(date -u '+%F %H:%M UTC'), $(uname -n), budget ${budget_s}s, output in $out"
[ $mode = sim ] && echo "simulator: the same kernels on the CPU; no timings or compute-sanitizer, and" \
    "$((curve_epochs * 44)) training steps for the curves instead of 308"

# ---- the steps ----

check_libraries() {
    if [ $mode = sim ]; then
        summary="the simulator's cudart and cuBLAS shims (no cuDNN)"
        return 0
    fi
    # cuBLAS, cuBLASLt and cuDNN: the folders of the pip packages (PyTorch's), one each; a
    # second cuDNN folder is named but not used (two cuDNNs in one process do not mix).
    python3 - >"$work/cuda_libs" 2>>"$step_log" <<'EOF'
import glob, os, site, sys
roots = []
try:
    import nvidia
    roots += list(nvidia.__path__)
except ImportError:
    pass
for sp in site.getsitepackages() + [site.getusersitepackages()]:
    d = os.path.join(sp, "nvidia")
    if os.path.isdir(d) and d not in roots:
        roots.append(d)
for name in ("libcublas.so.13", "libcublasLt.so.13", "libcudnn.so.9"):
    dirs = []
    for root in roots:
        for hit in sorted(glob.glob(os.path.join(root, "**", name), recursive=True)):
            if os.path.dirname(hit) not in dirs:
                dirs.append(os.path.dirname(hit))
    print(name, " ".join(dirs) if dirs else "-")
EOF
    local name dirs first lib_path="" missing=""
    while read -r name dirs; do
        first=${dirs%% *}
        echo "$name: $dirs" >>"$step_log"
        if [ "$first" = - ]; then
            # not from pip: the system's (a CUDA toolkit on ld.so's path) will do
            ldconfig -p 2>/dev/null | grep -q "$name" || missing+=" $name"
            continue
        fi
        [ "$dirs" = "$first" ] || echo "note: $name in several folders; using $first" >>"$step_log"
        case ":$lib_path:" in *":$first:"*) ;; *) lib_path+=${lib_path:+:}$first ;; esac
    done <"$work/cuda_libs"
    # (the bundle's own lib/ is in its binaries' RPATH: kept out of PyTorch's way)
    [ -z "$lib_path" ] || export LD_LIBRARY_PATH=$lib_path${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    metric libraries.ld_library_path "${LD_LIBRARY_PATH:-}"
    echo "LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}" >>"$step_log"
    [ -f "$bundle/MANIFEST" ] && head -n 4 "$bundle/MANIFEST" >>"$step_log"
    metric bundle "$(head -n 1 "$bundle/MANIFEST" 2>/dev/null)"
    if [ -n "$missing" ]; then
        summary="not found in pip's nvidia packages nor on ld.so's path:$missing"
        return 1
    fi
    if ! (cd "$work" && ldd "$cdl" >>"$step_log" 2>&1) || grep -q 'not found' "$step_log"; then
        summary="ldd $cdl: a library is not found (logs/libraries.log)"
        return 1
    fi
    summary="cuBLAS and cuDNN from ${lib_path:-the system}; $(head -n 1 "$bundle/MANIFEST" 2>/dev/null | sed 's/.*: //')"
}

check_gpu() {
    if [ $mode = sim ]; then
        summary="no GPU: the simulator"
        return 3
    fi
    command -v nvidia-smi >/dev/null || { summary="no nvidia-smi" && return 1; }
    limited nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,temperature.gpu,utilization.gpu \
        --format=csv,noheader || { summary="nvidia-smi: $(tail -n 1 "$step_log")" && return 1; }
    gpu_name=$(head -n 1 "$step_log" | cut -d, -f1)
    metric gpu.nvidia_smi "$(head -n 1 "$step_log")"
    summary=$(head -n 1 "$step_log")
}

check_doctor() {
    limited "$cdl" doctor
    local rc=$?
    sed 's/^/    /' "$step_log"
    timeout "$step_timeout" "$cdl" doctor --json >"$work/doctor.json" 2>>"$step_log"
    [ $rc = 0 ] || { summary="cdl doctor: $(why $rc)" && return 1; }
    summary=$(python3 - "$work/doctor.json" <<'EOF'
import json, sys
gpu = json.load(open(sys.argv[1]))["gpu"]
devices = ", ".join(f"{d['name']} (compute {d['compute']}, {d['memory_gib']:.0f} GiB)"
                    for d in gpu.get("devices", []))
def cuda(v):
    return f"{v // 1000}.{v % 1000 // 10}" if v else "-"
cudnn = gpu.get("cudnn") or 0
print(f"{gpu['status']}: {devices or 'none'}; CUDA runtime {cuda(gpu.get('cuda_runtime'))}, "
      f"driver {cuda(gpu.get('cuda_driver'))}, cuDNN "
      f"{cudnn // 10000}.{cudnn % 10000 // 100}.{cudnn % 100}")
sys.exit(0 if gpu.get("devices") else 1)
EOF
    )
}

# run_test NAME: a unit test binary of the bundle (or the simulator build).
run_test() {
    local bin=$tests_dir/$1
    [ -x "$bin" ] || { summary="not built: make GPU=sim ${bin#"$repo"/}" && return 3; }
    (cd "$repo" && limited "$bin")
    local rc=$?
    summary="$(tail -n 1 "$step_log")"
    [ $rc = 0 ] || { summary="$(why $rc): $summary" && return 1; }
    # the GPU's float32 row, and cuDNN's rows in each precision and channels-last (GPU=1 only)
    local gpu_row
    gpu_row=$(grep -E '^ *gpu( cudnn)?( nhwc)?( bf16| tf32| fp16)? +against' "$step_log" |
        grep -E '^ *gpu +against|cudnn' | sed 's/^ *//;s/  */ /g' | paste -sd ';' -)
    [ -z "$gpu_row" ] || summary="$summary; $gpu_row"
}
check_test_gpu_forward_at() { run_test test_gpu_forward_at; }
check_test_backend_ops() { run_test test_backend_ops; }

# The digits .data with absolute paths, for runs from the work folder.
sed "s#\.\./data#$repo/data#" cfg/digits.data >"$work/digits.data"

check_curves() {
    local common=(train "$repo/cfg/digits.cfg" --data "$work/digits.data" --epochs "$curve_epochs"
        --seed 1 --threads 1 --log-every 1)
    mkdir -p "$logs/curves"
    (cd "$work" && limited "$cdl" "${common[@]}" --log "$logs/curves/cpu.jsonl" --out cpu.cdl)
    local rc=$?
    [ $rc = 0 ] || { summary="the CPU run: $(why $rc)" && return 1; }
    (cd "$work" && limited "$cdl" "${common[@]}" --log "$logs/curves/gpu.jsonl" --out gpu.cdl --gpu 0)
    rc=$?
    [ $rc = 0 ] || { summary="the GPU run: $(why $rc)" && return 1; }
    limited "$cdl" plot "$logs/curves/cpu.jsonl" "$logs/curves/gpu.jsonl" -o "$out/curves.png" \
        --title "cfg/digits.cfg from seed 1: CPU and GPU" || echo "cdl plot failed" >>"$step_log"
    # Pass: the first step's loss within 1e-4 (one forward from the same weights: float32
    # round-off only), the first epoch's within 1e-3 (round-off growing over 44 SGD steps; 2e-6
    # on the simulator, whose products are the CPU's), and the two runs ending at one model
    # quality (validation accuracy within 2 points, loss within 5%): the divergence of two
    # float32 trajectories grows with the steps, a wrong gradient shows at once.
    summary=$(python3 - "$logs/curves/cpu.jsonl" "$logs/curves/gpu.jsonl" "$metrics" <<'EOF'
import json, sys
def load(path):
    rows = [json.loads(l) for l in open(path)]
    return ([r["loss"] for r in rows if r["type"] == "step"],
            [r for r in rows if r["type"] == "epoch"][-1])
(cpu, cpu_end), (gpu, gpu_end) = load(sys.argv[1]), load(sys.argv[2])
if len(cpu) != len(gpu) or not cpu:
    print(f"{len(cpu)} CPU steps, {len(gpu)} GPU steps"); sys.exit(1)
diff = [abs(c - g) for c, g in zip(cpu, gpu)]
rel = [d / max(abs(c), 1e-30) for d, c in zip(diff, cpu)]
worst = max(range(len(diff)), key=diff.__getitem__)
first_epoch = max(rel[:44])
acc_gap = abs(cpu_end["accuracy"] - gpu_end["accuracy"])
vloss_gap = abs(cpu_end["valid_loss"] - gpu_end["valid_loss"]) / cpu_end["valid_loss"]
figures = {"curves.steps": len(cpu), "curves.largest_loss_difference": diff[worst],
           "curves.largest_at_step": worst + 1, "curves.largest_relative": max(rel),
           "curves.step1_relative": rel[0], "curves.first_epoch_relative": first_epoch,
           "curves.cpu_valid_accuracy": cpu_end["accuracy"], "curves.gpu_valid_accuracy": gpu_end["accuracy"],
           "curves.cpu_valid_loss": cpu_end["valid_loss"], "curves.gpu_valid_loss": gpu_end["valid_loss"]}
with open(sys.argv[3], "a") as f:
    for k, v in figures.items():
        f.write(f"{k}\t{v}\n")
ok = rel[0] <= 1e-4 and first_epoch <= 1e-3 and acc_gap <= 0.02 and vloss_gap <= 0.05
print(f"{len(cpu)} steps: largest loss difference {diff[worst]:.3g} at step {worst + 1} "
      f"(relative: step 1 {rel[0]:.2g}, first epoch {first_epoch:.2g}, all {max(rel):.2g}); "
      f"validation accuracy CPU {100 * cpu_end['accuracy']:.2f}% GPU {100 * gpu_end['accuracy']:.2f}%"
      + ("" if ok else " (over the bounds: 1e-4, 1e-3, 2 points, 5%)"))
sys.exit(0 if ok else 1)
EOF
    )
}

check_precisions() {
    local common=(train "$repo/cfg/digits.cfg" --data "$work/digits.data" --epochs 1 --seed 1
        --threads 1 --log-every 1)
    mkdir -p "$logs/precisions"
    local p rc
    for p in bf16 tf32 fp16; do
        (cd "$work" && limited "$cdl" "${common[@]}" --precision $p \
            --log "$logs/precisions/cpu_$p.jsonl" --out "cpu_$p.cdl")
        rc=$?
        [ $rc = 0 ] || { summary="the CPU run in $p: $(why $rc)" && return 1; }
        (cd "$work" && limited "$cdl" "${common[@]}" --precision $p --gpu 0 \
            --log "$logs/precisions/gpu_$p.jsonl" --out "gpu_$p.cdl")
        rc=$?
        [ $rc = 0 ] || { summary="the GPU run in $p: $(why $rc)" && return 1; }
    done
    # Pass: in each precision the first step's loss within 1e-3 of the CPU's, which rounds the
    # same operands the same way (test_backend_ops): one forward from the same weights differs as
    # float32 sums do, except where two sums that differ by round-off round to neighbouring
    # values (2^-8 of one term in bf16, 2^-11 in tf32 and fp16); such a difference then grows
    # over the steps thousands of times faster than float32's round-off, so the epoch is judged
    # as the curves step judges its end: validation accuracy within 2 points, loss within 5%;
    # fp16's loss scales the same on both.
    summary=$(python3 - "$logs/precisions" "$metrics" <<'EOF'
import json, sys
out, ok = [], True
for p in ("bf16", "tf32", "fp16"):
    def load(side):
        rows = [json.loads(l) for l in open(f"{sys.argv[1]}/{side}_{p}.jsonl")]
        return [r for r in rows if r["type"] == "step"], [r for r in rows if r["type"] == "epoch"][-1]
    (cpu, cpu_end), (gpu, gpu_end) = load("cpu"), load("gpu")
    if len(cpu) != len(gpu) or not cpu:
        print(f"{p}: {len(cpu)} CPU steps, {len(gpu)} GPU steps"); sys.exit(1)
    step1 = abs(cpu[0]["loss"] - gpu[0]["loss"]) / max(abs(cpu[0]["loss"]), 1e-30)
    acc_gap = abs(cpu_end["accuracy"] - gpu_end["accuracy"])
    vloss_gap = abs(cpu_end["valid_loss"] - gpu_end["valid_loss"]) / cpu_end["valid_loss"]
    scales = p != "fp16" or [c["loss_scale"] for c in cpu] == [g["loss_scale"] for g in gpu]
    ok = ok and step1 <= 1e-3 and acc_gap <= 0.02 and vloss_gap <= 0.05 and scales
    out.append(f"{p} step 1 {step1:.2g}, accuracy {100 * cpu_end['accuracy']:.2f}% and "
               f"{100 * gpu_end['accuracy']:.2f}%")
    with open(sys.argv[2], "a") as f:
        f.write(f"precisions.{p}.step1_relative\t{step1}\n"
                f"precisions.{p}.valid_accuracy_gap\t{acc_gap}\n")
print("CPU and GPU in the same precision: " + "; ".join(out)
      + ("" if ok else " (over the bounds: 1e-3, 2 points, 5%, or fp16's loss scales differ)"))
sys.exit(0 if ok else 1)
EOF
    )
}

# --cuda-graph against eager steps on the GPU: a step of two passes in fp16 (a graph per pass,
# fp16's unscaling and skip decided on the device), the same seed both ways. Pass: every step's
# loss within 1e-6 relative (the same kernels in the same order: equal on the simulator, where
# gpu.bats also checks skipped steps) and the same loss scales; whether the checkpoints are
# byte-identical is reported.
check_graphs() {
    local common=(train "$repo/cfg/digits.cfg" --data "$work/digits.data" --epochs 1 --seed 1
        --threads 1 --log-every 1 --gpu 0 --precision fp16 --set net.subdivisions=2)
    mkdir -p "$logs/graphs"
    local run rc
    for run in eager graph; do
        local graph=()
        [ $run = graph ] && graph=(--cuda-graph)
        (cd "$work" && limited "$cdl" "${common[@]}" "${graph[@]}" \
            --log "$logs/graphs/$run.jsonl" --out "graphs_$run.cdl")
        rc=$?
        [ $rc = 0 ] || { summary="the $run run: $(why $rc)" && return 1; }
    done
    local same=different
    cmp -s "$work/graphs_eager.cdl" "$work/graphs_graph.cdl" && same=identical
    summary=$(python3 - "$logs/graphs" "$metrics" "$same" <<'EOF'
import json, sys
def steps(run):
    return [r for r in map(json.loads, open(f"{sys.argv[1]}/{run}.jsonl")) if r["type"] == "step"]
eager, graph = steps("eager"), steps("graph")
if len(eager) != len(graph) or not eager:
    print(f"{len(eager)} eager steps, {len(graph)} graph steps"); sys.exit(1)
worst = max(abs(e["loss"] - g["loss"]) / max(abs(e["loss"]), 1e-30) for e, g in zip(eager, graph))
scales = [e["loss_scale"] for e in eager] == [g["loss_scale"] for g in graph]
with open(sys.argv[2], "a") as f:
    f.write(f"graphs.largest_relative_loss_difference\t{worst}\n")
ok = worst <= 1e-6 and scales
print(f"{len(eager)} steps of 2 passes in fp16: largest loss difference {worst:.2g} relative, "
      f"loss scales {'equal' if scales else 'DIFFERENT'}, checkpoints {sys.argv[3]}"
      + ("" if ok else " (over the bound of 1e-6)"))
sys.exit(0 if ok else 1)
EOF
    )
}

# The timings: cdl bench --gpu 0 (random data on the device side as the peer's, no dataset),
# time_warmup untimed steps (with --cuda-graph the first eager, the second the capture) then
# time_steps timed, eagerly and as CUDA graphs; PyTorch (scripts/gpu_peers.py) on the same net,
# batch and precision: eager, cuDNN benchmark on, image nets channels-last, bf16 as autocast.
time_warmup=5
time_steps=30
timed_nets=(resnet18_cifar gpt_tiny resnet50)
declare -A cdl_rate cdl_graph_rate torch_eager torch_compiled net_unit net_batch net_precision \
    net_peer_args
# cdl_bench NAME MODE PRECISION BATCH [--set ...]: one cdl bench run's JSON line into $bench_json.
cdl_bench() {
    local name=$1 mode=$2 precision=$3 batch=$4
    shift 4
    local graph=()
    [ "$mode" = graph ] && graph=(--cuda-graph)
    limited "$cdl" bench "$repo/cfg/$name.cfg" --gpu 0 --precision "$precision" --batch "$batch"         --warmup $time_warmup --steps $time_steps --threads "$threads" --json "${graph[@]}" "$@"
    local rc=$?
    bench_json=$(grep '^{"cfg"' "$step_log" | tail -n 1)
    return $rc
}

# The rate (img/s, or tok/s of a sequence net) of a cdl bench JSON line.
bench_rate() {
    python3 -c 'import json, sys
r = json.loads(sys.argv[1])
print(round(r.get("tokens_per_s", r["images_per_s"]), 1))' "$1" 2>/dev/null || echo -
}

time_net() { # NAME PRECISION BATCH [--set ...]
    local name=$1 precision=$2 batch=$3
    shift 3
    local cfg=cfg/$name.cfg info params peer_params vocab unit rc peer_args
    info=$("$cdl" info "$cfg" "$@" --json 2>>"$step_log") || { summary="cdl info $cfg failed" && return 1; }
    params=$(field "$info" params)
    vocab=$(field "$info" vocab)
    unit=img/s peer_args=(--cfg "$cfg" --batch "$batch")
    [ "$vocab" != - ] && unit=tok/s peer_args+=(--vocab "$vocab")
    [ "$precision" = bf16 ] && peer_args+=(--bf16)
    net_unit[$name]=$unit net_batch[$name]=$batch net_precision[$name]=$precision
    net_peer_args[$name]="${peer_args[*]}"
    metric "$name.unit" "$unit"
    metric "$name.precision" "$precision"
    cdl_bench "$name" eager "$precision" "$batch" "$@" || {
        summary="cdl bench --gpu 0: $(why $?)" && return 1
    }
    cdl_rate[$name]=$(bench_rate "$bench_json")
    metric "$name.cdl" "$bench_json"
    cdl_bench "$name" graph "$precision" "$batch" "$@" || {
        summary="cdl bench --gpu 0 --cuda-graph: $(why $?)" && return 1
    }
    cdl_graph_rate[$name]=$(bench_rate "$bench_json")
    metric "$name.cdl_graph" "$bench_json"
    (cd "$repo" && limited python3 scripts/gpu_peers.py "${peer_args[@]}" --params)
    peer_params=$(tail -n 1 "$step_log")
    (cd "$repo" && limited python3 scripts/gpu_peers.py "${peer_args[@]}" --steps 20 \
        --warmup 5 --repeats 3 --modes eager)
    rc=$?
    local peer
    peer=$(grep '"mode": "eager"' "$step_log" | tail -n 1)
    torch_eager[$name]=$(field "$peer" rate)
    [ -n "$peer" ] && metric "$name.torch_eager" "$peer"
    summary="$precision, batch $batch: cdl ${cdl_rate[$name]} $unit, with --cuda-graph"
    summary+=" ${cdl_graph_rate[$name]}, PyTorch eager ${torch_eager[$name]}"
    if [ "${torch_eager[$name]}" != - ]; then
        summary+=" (cdl/torch $(awk -v a="${cdl_rate[$name]}" -v b="${torch_eager[$name]}" 'BEGIN { printf "%.2f", a / b }'))"
    fi
    if [ "$peer_params" != "$params" ]; then
        summary+="; PyTorch's net has $peer_params parameters, cdl's $params: not the same net"
        return 1
    fi
    [ $rc = 0 ] || { summary+="; the PyTorch peer: $(why $rc)" && return 1; }
}

# cdl info with channels_last=1 on cuDNN (GPU=1's default engine): the convolutions that keep
# their outputs NHWC say "engine cudnn ... nhwc", "engine cudnn-nchw ... nhwc" where cuDNN has
# no NHWC algorithm for them and runs NCHW descriptors (docs/gpu.md, Channels-last).
check_info_channels_last() {
    [ $mode = sim ] && { summary="cuDNN is in GPU=1 builds only" && return 3; }
    limited "$cdl" info "$repo/cfg/resnet50.cfg" --set net.channels_last=1 --gpu 0
    local rc=$?
    [ $rc = 0 ] || { summary="cdl info: $(why $rc)" && return 1; }
    local marked nchw
    marked=$(grep -c 'engine cudnn.*nhwc' "$step_log")
    nchw=$(grep -c 'engine cudnn-nchw' "$step_log")
    summary="$(grep -m 1 '^channels_last=1:' "$step_log"); $marked of them cuDNN convolutions"
    summary+=" ($nchw on NCHW descriptors: no NHWC algorithm)"
    [ "$marked" -gt 0 ]
}

check_time_resnet18_cifar() {
    [ $mode = sim ] && { summary="no timings on the simulator" && return 3; }
    time_net resnet18_cifar fp32 128 --set net.channels_last=1
}

check_time_gpt_tiny() {
    [ $mode = sim ] && { summary="no timings on the simulator" && return 3; }
    time_net gpt_tiny fp32 32
}

check_time_resnet50() {
    [ $mode = sim ] && { summary="no timings on the simulator" && return 3; }
    time_net resnet50 bf16 128 --set net.channels_last=1
}

# sanitize TOOL: compute-sanitizer on a 5-step digits run (200 samples, batch 32).
sanitize() {
    [ $mode = sim ] && { summary="not on the simulator (make GPU=sim SAN=1 sim-test has ASan)" && return 3; }
    local cs
    cs=$(command -v compute-sanitizer || find /usr/local/cuda*/bin -name compute-sanitizer 2>/dev/null | head -n 1)
    [ -n "$cs" ] || { summary="no compute-sanitizer on this machine" && return 3; }
    if [ ! -f "$work/tiny.data" ]; then
        zcat data/digits.csv.gz | head -n 200 | gzip >"$work/tiny.csv.gz"
        printf 'classes=10\ntrain=%s\nvalid_split=0.2\n' "$work/tiny.csv.gz" >"$work/tiny.data"
    fi
    (cd "$work" && limited "$cs" --tool "$1" --error-exitcode 99 --print-limit 20 "$cdl" train \
        "$repo/cfg/digits.cfg" --data "$work/tiny.data" --epochs 1 --gpu 0 --threads 2 \
        --out "sanitized-$1.cdl")
    local rc=$?
    local said
    said=$(grep -m 1 'ERROR SUMMARY' "$step_log")
    case $rc in
    0) summary="${said:-no errors}: cdl train --gpu 0, 5 steps of digits.cfg" ;;
    99) summary="${said:-errors}: see logs/$1.log" && return 1 ;;
    *) summary="$(why $rc): ${said:-see logs/$1.log}" && return 1 ;;
    esac
}
check_memcheck() { sanitize memcheck; }
check_racecheck() { sanitize racecheck; }

check_torch_compile() {
    [ $mode = sim ] && { summary="no timings on the simulator" && return 3; }
    local name peer_args done_any=0 said=
    for name in "${timed_nets[@]}"; do
        [ -n "${cdl_rate[$name]:-}" ] || continue
        read -ra peer_args <<<"${net_peer_args[$name]}"
        (cd "$repo" && limited python3 scripts/gpu_peers.py "${peer_args[@]}" --steps 20 \
            --warmup 5 --repeats 3 --modes compiled)
        local peer
        peer=$(grep '"mode": "compiled"' "$step_log" | tail -n 1)
        torch_compiled[$name]=$(field "$peer" rate)
        [ -n "$peer" ] && metric "$name.torch_compiled" "$peer"
        metric "$name.torch_compiled_rate" "${torch_compiled[$name]}"
        [ "${torch_compiled[$name]}" = - ] || done_any=1
        said+="${said:+; }$name ${torch_compiled[$name]} ${net_unit[$name]}"
    done
    summary="torch.compile: ${said:-no cdl timing to compare}"
    # PyTorch's compiler is reported beside, not held against cdl: a failure is a skip
    [ $done_any = 1 ] || return 3
}

step libraries 30 check_libraries
step gpu 20 check_gpu
if [ $mode = device ]; then
    # shellcheck source=scripts/lib/speed-table.sh
    source scripts/lib/speed-table.sh
    CDL_SPEED_DIR=${CDL_SPEED_DIR-$out} speed_table_begin gpu-check
fi
step doctor 30 check_doctor
step test_gpu_forward_at 60 check_test_gpu_forward_at
step test_backend_ops 240 check_test_backend_ops
step info_channels_last 30 check_info_channels_last
step curves 90 check_curves
step precisions 60 check_precisions
step graphs 40 check_graphs
step time_resnet18_cifar 60 check_time_resnet18_cifar
step time_gpt_tiny 60 check_time_gpt_tiny
step time_resnet50 100 check_time_resnet50
step memcheck 75 check_memcheck
step racecheck 75 check_racecheck
step torch_compile 120 check_torch_compile

not_yet=("several GPUs (NCCL)")
echo "not yet on the GPU, so not checked or timed:"
printf '  %s\n' "${not_yet[@]}"

if [ $mode = device ] && [ -n "${cdl_rate[*]:-}" ]; then
    echo
    echo "training speed on ${gpu_name:-the GPU}: cdl bench --gpu 0, $time_steps steps after" \
        "$time_warmup, eager and --cuda-graph; PyTorch (TF32 off, cuDNN benchmark on, image nets" \
        "channels-last, bf16 as autocast): median of 3 x 20 steps after 5"
    printf '%-16s %-5s %5s %-6s %10s %10s %12s %12s %8s %8s\n' net prec batch unit cdl "cdl graph" \
        "torch eager" "torch comp." cdl/eager graph/eager
    speed_table_meta GPU "${gpu_name:-unknown}"
    speed_table_meta cdl "$("$cdl" --version 2>/dev/null)"
    speed_table_meta precision "fp32: TF32 off on both sides; bf16: cdl --precision bf16 (16-bit activations, float32 sums), PyTorch autocast"
    speed_table_meta method "cdl bench --gpu 0 on random data, $time_steps steps after $time_warmup, eager and --cuda-graph; scripts/gpu_peers.py: eager (cuDNN benchmark, image nets channels-last) and torch.compile, median of 3 x 20 steps"
    speed_table_columns net precision batch unit cdl "cdl, CUDA graphs" "PyTorch eager" \
        "PyTorch compiled" "cdl / eager" "cdl graphs / eager"
    for name in "${timed_nets[@]}"; do
        [ -n "${cdl_rate[$name]:-}" ] || continue
        ratio=$(awk -v a="${cdl_rate[$name]}" -v b="${torch_eager[$name]:--}" \
            'BEGIN { if (b + 0 > 0) printf "%.2f", a / b; else print "-" }')
        graph_ratio=$(awk -v a="${cdl_graph_rate[$name]:--}" -v b="${torch_eager[$name]:--}" \
            'BEGIN { if (b + 0 > 0 && a + 0 > 0) printf "%.2f", a / b; else print "-" }')
        row=("$name" "${net_precision[$name]}" "${net_batch[$name]}" "${net_unit[$name]}"
            "${cdl_rate[$name]}" "${cdl_graph_rate[$name]:--}" "${torch_eager[$name]:--}"
            "${torch_compiled[$name]:--}" "$ratio" "$graph_ratio")
        printf '%-16s %-5s %5s %-6s %10s %10s %12s %12s %8s %8s\n' "${row[@]}"
        speed_table_row "${row[@]}"
    done
fi
[ $mode = device ] && speed_table_end 2>/dev/null

tar -czf "$out/logs.tar.gz" -C "$work" logs
python3 - "$results" "$metrics" "$out/summary.json" "$mode" "$("$cdl" --version 2>/dev/null)" \
    "$passed" "$failed" "$skipped" "$SECONDS" "${not_yet[@]}" <<'EOF'
import json, sys
results, metrics, path, mode, version = sys.argv[1:6]
passed, failed, skipped, seconds = map(int, sys.argv[6:10])
def value(v):
    try:
        return json.loads(v)
    except ValueError:
        return v
steps = []
for line in open(results):
    name, status, secs, summary = line.rstrip("\n").split("\t", 3)
    steps.append({"name": name, "status": status, "seconds": int(secs), "summary": summary})
figures = {}
for line in open(metrics):
    key, v = line.rstrip("\n").split("\t", 1)
    figures[key] = value(v)
json.dump({"mode": mode, "cdl": version, "seconds": seconds, "steps": steps,
           "figures": figures, "not_yet": sys.argv[10:], "passed": passed, "failed": failed,
           "skipped": skipped}, open(path, "w"), indent=1)
EOF
echo "files in $out: $(find "$out" -maxdepth 1 -type f -printf "%f "); $skipped skipped; ${SECONDS}s"
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
