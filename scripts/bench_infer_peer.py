#!/usr/bin/env python3
"""One peer of scripts/bench-infer.sh, kept running so that its start-up (importing torch,
building, compiling or quantizing the model, ONNX Runtime's session) is paid once while the
script alternates its timed runs with cdl's: reads "BATCH STEPS WARMUP" lines on stdin and
answers each with one JSON line {"images_per_s", "ms_per_step", "batch"}, timing STEPS
inference forwards of BATCH random inputs in [0, 1) after WARMUP untimed ones (the first ones
at a new batch size include torch.compile's recompilation), at --threads threads.

    build/torch-venv/bin/python scripts/bench_infer_peer.py RUNNER --cfg CFG [--onnx MODEL]
        [--threads 1] [--bf16]

RUNNER: ort (ONNX Runtime on --onnx, float32 or the int8 model of bench_ort.py --quantize),
eager (PyTorch, scripts/bench_torch.py's net in eval mode; --bf16 under torch.autocast), compile
(the same through torch.compile), int8 (PyTorch's static int8 model of
scripts/bench_int8_torch.py: fbgemm, calibrated on random batches). Weights are random: only
speed is compared.
"""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def ort_runner(a):
    from bench_ort import random_input, session

    sess = session(a.onnx, a.threads)

    def run(batch):
        feed = random_input(sess, batch)
        return lambda: sess.run(None, feed)

    return run


def torch_runner(a):
    import torch

    from bench_torch import build_model

    torch.set_num_interop_threads(1)
    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    model = build_model(a.cfg).eval()
    shape = model.input_shape
    net = torch.compile(model) if a.runner == "compile" else model
    if a.runner == "int8":
        from bench_int8_torch import quantized_model

        net = quantized_model(model, torch.rand(4, *shape))

    def run(batch):
        x = torch.rand(batch, *shape)

        def forward():
            with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=a.bf16):
                net(x)

        return forward

    return run


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("runner", choices=("ort", "eager", "compile", "int8"))
    p.add_argument("--cfg", required=True)
    p.add_argument("--onnx", help="ort: the model to run")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--bf16", action="store_true", help="eager, compile: under torch.autocast")
    a = p.parse_args()
    make = ort_runner(a) if a.runner == "ort" else torch_runner(a)
    print(json.dumps({"ready": a.runner}), flush=True)
    for line in sys.stdin:
        batch, steps, warmup = map(int, line.split())
        forward = make(batch)
        for _ in range(warmup):
            forward()
        start = time.perf_counter()
        for _ in range(steps):
            forward()
        elapsed_s = time.perf_counter() - start
        print(json.dumps({"images_per_s": batch * steps / elapsed_s,
                          "ms_per_step": 1e3 * elapsed_s / steps, "batch": batch}), flush=True)


if __name__ == "__main__":
    sys.exit(main())
