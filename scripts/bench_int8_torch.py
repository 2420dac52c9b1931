#!/usr/bin/python3
"""PyTorch peer of `cdl bench MODEL --inference` for int8: times inference forwards of the
network a cdl cfg describes in float32 and quantized with the fbgemm backend (Debian's torch
1.13 has none: then onednn, PyTorch's other x86 backend; the JSON says which) (convolutions
statically, calibrated on random batches; Linear layers dynamically, as
torch.ao.quantization.quantize_dynamic), on random inputs. Weights are random: only speed is
compared (accuracy is cdl's own, scripts/bench-int8.sh).

    /usr/bin/python3 scripts/bench_int8_torch.py CFG [--batch 64] [--steps 20] [--warmup 3]
        [--threads 2] [--int8-only]

Prints one JSON line {"fp32_images_per_s", "int8_images_per_s", "engine", "batch", "threads",
"torch"} (--int8-only: the float32 model untimed, fp32_images_per_s null).
"""
import argparse
import json
import os
import sys
import time

import torch
import torch.nn as nn
from torch.ao.quantization import QConfigMapping, default_dynamic_qconfig, get_default_qconfig
from torch.ao.quantization.quantize_fx import convert_fx, prepare_fx

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_torch import DarknetMaxPool, parse_cfg  # noqa: E402
from fashion_resnet_torch import CfgNet  # noqa: E402


def plain_pools(model, x):
    """darknet's maxpool pads with -inf, which a quantized tensor cannot hold; where the
    padding is never read (even sizes, size = stride) a plain MaxPool2d is the same op."""
    for module in model.modules():
        if isinstance(module, DarknetMaxPool) and module.pad is not None:
            pool = module.pool
            module.pad = None
            module.pool = nn.MaxPool2d(pool.kernel_size, pool.stride)
    return model(x)


def images_per_s(model, x, steps, warmup):
    with torch.no_grad():
        for _ in range(warmup):
            model(x)
        start = time.perf_counter()
        for _ in range(steps):
            model(x)
        return x.shape[0] * steps / (time.perf_counter() - start)


def quantized_model(model, x):
    """The float32 CfgNet MODEL (eval mode) quantized with the best x86 backend there is:
    convolutions statically, calibrated on 4 random batches shaped as x; Linear dynamically. Its
    pools made plain (plain_pools), which the float32 model keeps too."""
    engines = torch.backends.quantized.supported_engines
    engine = next(e for e in ("fbgemm", "onednn", "qnnpack") if e in engines)
    torch.backends.quantized.engine = engine
    with torch.no_grad():
        want = model(x)
        got = plain_pools(model, x)
        assert torch.equal(want, got), "plain_pools changed the output"
    qconfig = (
        QConfigMapping()
        .set_global(get_default_qconfig(engine))
        .set_object_type(nn.Linear, default_dynamic_qconfig)
    )
    prepared = prepare_fx(model, qconfig, example_inputs=(x,))
    with torch.no_grad():
        for _ in range(4):  # calibration
            prepared(torch.rand_like(x))
    return convert_fx(prepared)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("cfg")
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--int8-only", action="store_true", help="time the int8 model alone")
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    model = CfgNet(parse_cfg(a.cfg)).eval()
    x = torch.rand(a.batch, *model.input_shape)
    with torch.no_grad():
        plain_pools(model, x)  # as quantized_model makes them, before the float32 timing
    fp32 = None if a.int8_only else images_per_s(model, x, a.steps, a.warmup)
    quantized = quantized_model(model, x)
    int8 = images_per_s(quantized, x, a.steps, a.warmup)
    print(
        json.dumps(
            {
                "fp32_images_per_s": fp32,
                "int8_images_per_s": int8,
                "engine": torch.backends.quantized.engine,
                "batch": a.batch,
                "threads": a.threads,
                "torch": torch.__version__,
            }
        )
    )


if __name__ == "__main__":
    main()
