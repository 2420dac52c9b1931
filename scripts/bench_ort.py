#!/usr/bin/env python3
"""ONNX Runtime peer of `cdl bench --inference`: times inference runs of a model `cdl export
onnx` wrote, on ONNX Runtime's CPUExecutionProvider with every graph optimisation, sequential
execution, one inter-op thread and --threads intra-op threads, on random inputs in [0, 1) of the
model's input shape (the batch axis set to --batch).

    build/torch-venv/bin/python scripts/bench_ort.py MODEL.onnx [--batch 16] [--steps 10]
        [--warmup 2] [--threads 1] [--profile PREFIX]
    build/torch-venv/bin/python scripts/bench_ort.py MODEL.onnx --quantize OUT.onnx [--batch 16]

Prints one JSON line {"images_per_s", "ms_per_step", "batch", "threads", "ort"}. --profile
also writes ONNX Runtime's own profile of the timed runs (PREFIX_DATE.json) and prints, before
the JSON line, each node's mean time per run (ms, slowest first) and then each operator type's.
--quantize writes OUT.onnx instead: the model in int8 from ONNX Runtime's own quantizer
(quantize_static, QDQ format, per-channel int8 weights, uint8 activations calibrated on 4
random batches), the int8 model ONNX Runtime's CPU kernels run.
"""
import argparse
import json
import os
import sys
import tempfile
import time
from collections import defaultdict

import numpy as np
import onnxruntime as ort


def session(path, threads, profile_prefix=None):
    o = ort.SessionOptions()
    o.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    o.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    o.intra_op_num_threads = threads
    o.inter_op_num_threads = 1
    if profile_prefix:
        o.enable_profiling = True
        o.profile_file_prefix = profile_prefix
    return ort.InferenceSession(path, o, providers=["CPUExecutionProvider"])


def random_input(sess, batch, seed=1):
    """Inputs in [0, 1) of the model's one input, batch axis set: {name: array}."""
    inp = sess.get_inputs()[0]
    shape = [batch] + [int(d) for d in inp.shape[1:]]
    return {inp.name: np.random.default_rng(seed).random(shape, dtype=np.float32)}


def quantize(path, out, batch):
    """Writes ONNX Runtime's static QDQ int8 model of PATH to OUT (shape inference first, as its
    quantizer asks)."""
    from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType,
                                          quantize_static)
    from onnxruntime.quantization.shape_inference import quant_pre_process

    sess = session(path, 1)

    class RandomBatches(CalibrationDataReader):
        def __init__(self):
            self.feeds = iter([random_input(sess, batch, seed) for seed in range(4)])

        def get_next(self):
            return next(self.feeds, None)

    with tempfile.TemporaryDirectory() as tmp:
        prepared = os.path.join(tmp, "prepared.onnx")
        quant_pre_process(path, prepared, skip_symbolic_shape=True)
        quantize_static(prepared, out, RandomBatches(), quant_format=QuantFormat.QDQ,
                        per_channel=True, activation_type=QuantType.QUInt8,
                        weight_type=QuantType.QInt8)


def print_profile(path, warmup):
    """The node events of ONNX Runtime's profile after the first WARMUP runs, per node and per
    operator type: mean ms a run."""
    with open(path) as f:
        events = json.load(f)
    runs = sorted((ev["ts"], ev["ts"] + ev["dur"]) for ev in events if ev["name"] == "model_run")
    timed = runs[warmup:]
    per_node, per_op, op_of = defaultdict(float), defaultdict(float), {}
    for ev in events:
        if ev.get("cat") != "Node" or not ev["name"].endswith("_kernel_time"):
            continue
        if not any(start <= ev["ts"] <= end for start, end in timed):
            continue
        node = ev["name"][: -len("_kernel_time")]
        op = ev.get("args", {}).get("op_name", "?")
        per_node[node] += ev["dur"] / 1e3 / len(timed)
        per_op[op] += ev["dur"] / 1e3 / len(timed)
        op_of[node] = op
    total = sum(per_op.values())
    print(f"ONNX Runtime profile ({path}): {total:.3f} ms a run in nodes, {len(timed)} runs")
    for node, ms in sorted(per_node.items(), key=lambda kv: -kv[1]):
        print(f"  {ms:9.3f} ms  {op_of[node]:<24} {node}")
    print("per operator type:")
    for op, ms in sorted(per_op.items(), key=lambda kv: -kv[1]):
        print(f"  {ms:9.3f} ms  {100 * ms / total:5.1f}%  {op}")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("model")
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--profile", metavar="PREFIX", help="write and summarise ORT's profile")
    p.add_argument("--quantize", metavar="OUT", help="write the QDQ int8 model and exit")
    a = p.parse_args()
    if a.quantize:
        quantize(a.model, a.quantize, a.batch)
        return
    sess = session(a.model, a.threads)
    feed = random_input(sess, a.batch)
    for _ in range(a.warmup):
        sess.run(None, feed)
    start = time.perf_counter()
    for _ in range(a.steps):
        sess.run(None, feed)
    elapsed_s = time.perf_counter() - start
    if a.profile:  # a second session: profiling slows the runs it records
        prof = session(a.model, a.threads, a.profile)
        for _ in range(a.warmup + a.steps):
            prof.run(None, feed)
        print_profile(prof.end_profiling(), a.warmup)
    print(json.dumps({
        "images_per_s": a.batch * a.steps / elapsed_s,
        "ms_per_step": 1e3 * elapsed_s / a.steps,
        "batch": a.batch,
        "threads": a.threads,
        "ort": ort.__version__,
    }))


if __name__ == "__main__":
    sys.exit(main())
