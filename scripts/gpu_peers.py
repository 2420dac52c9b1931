#!/usr/bin/env python3
"""PyTorch on the GPU, the peer of `cdl train --gpu N` in scripts/gpu-check.sh: the nets of
cdl cfgs built as scripts/bench_torch.py (image cfgs: CfgNet) and scripts/text_torch.py (text
cfgs: SeqNet) build them, with their recipes (SGD with momentum and weight decay on the conv
and connected weights; text: the cfg's AdamW, gradient clipping, a loss read every step), on
random data that stays on the GPU, timed as training steps per second.

How PyTorch runs, so the numbers say what they compare:
- eager, cuDNN with benchmark=True (it times the convolution algorithms at the first step),
  image nets in channels-last memory layout;
- float32 with TF32 off (cuDNN's convolutions and cuBLAS's products in full float32), the
  peer of cdl's fp32; --bf16 runs under torch.autocast("cuda", torch.bfloat16) instead (image
  nets: the forward; text nets: text_torch's whole step), the peer of cdl's --precision bf16;
- attention through F.scaled_dot_product_attention (is_causal), as nanoGPT's
  CausalSelfAttention does on a GPU: text_torch.py's explicit mask is built on the CPU;
- --modes eager,compiled adds a torch.compile run of the same step (its compile time, the
  first step, is reported apart and left out of the rate).

Usage:
    gpu_peers.py --cfg CFG [--batch B] [--steps 20] [--warmup 5] [--repeats 3]
                 [--vocab V] [--bf16] [--modes eager,compiled] [--params]
Prints one JSON line per mode: {"cfg", "mode", "batch", "seq",
"unit" (img/s or tok/s), "rate" (the median of --repeats windows of --steps steps, each
timed between two torch.cuda.synchronize()), "ms_per_step", "params", "precision",
"compile_s", "device", "torch", "cudnn"}; a mode that fails prints {"mode", "error"} and the
exit status is 1. --params prints the parameter count and exits (on the CPU).
"""
import argparse
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import bench_torch  # noqa: E402
import text_torch  # noqa: E402


def sdpa_attention_forward(self, x, cache=None):
    """text_torch.Attention.forward with PyTorch's fused attention when nothing is cached:
    the same function (its dropout applies to the probabilities as there)."""
    if cache is not None:
        return original_attention_forward(self, x, cache)
    b, n, c = x.shape
    q, k, v = self.qkv(x).split(c, dim=2)
    q, k, v = (t.view(b, n, self.heads, c // self.heads).transpose(1, 2) for t in (q, k, v))
    y = F.scaled_dot_product_attention(q, k, v, dropout_p=self.dropout.p if self.training else 0.0,
                                       is_causal=self.causal and n > 1)
    return self.proj(y.transpose(1, 2).reshape(b, n, c))


original_attention_forward = text_torch.Attention.forward
text_torch.Attention.forward = sdpa_attention_forward


def full_float32():
    """TF32 off for cuBLAS and cuDNN, through the allow_tf32 switches only: PyTorch 2.9's
    fp32_precision settings replace them, and it refuses a mix of the two."""
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False


def is_text_cfg(path):
    sections = bench_torch.parse_cfg(path)
    return any(name in ("embedding", "positional", "attention") for name, _ in sections[1:])


def image_step_fn(cfg, batch, bf16, device):
    """(model, step, batch, seq, unit): bench_torch.py's training step on the GPU."""
    sections = bench_torch.parse_cfg(cfg)
    net = sections[0][1]
    model = bench_torch.CfgNet(sections)
    batch = batch or int(net.get("batch", 1))
    model = model.to(device, memory_format=torch.channels_last)
    decayed_ids = {id(t) for t in model.decayed}
    groups = [
        {"params": model.decayed, "weight_decay": float(net.get("decay", 0.0001))},
        {"params": [t for t in model.parameters() if id(t) not in decayed_ids],
         "weight_decay": 0.0},
    ]
    opt = torch.optim.SGD(groups, lr=float(net.get("learning_rate", 0.001)),
                          momentum=float(net.get("momentum", 0.9)))
    x = torch.randn(batch, *model.input_shape, device=device).contiguous(
        memory_format=torch.channels_last)
    labels = torch.randint(0, model.classes, (batch,), device=device)
    loss_fn = nn.CrossEntropyLoss()

    def step(runner):
        opt.zero_grad(set_to_none=False)
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=bf16):
            loss = loss_fn(runner(x), labels)
        loss.backward()
        opt.step()

    return model, step, batch, 1, "img/s"


def text_step_fn(cfg, batch, vocab, bf16, device):
    """(model, step, batch, seq, unit): text_torch.py's Trainer step on the GPU."""
    model, h = text_torch.build(cfg, vocab)
    batch = batch or h["batch"]
    if batch != h["batch"]:
        h["batch"], h["subdivisions"] = batch, 1
    model = model.to(device)
    trainer = text_torch.Trainer(model, h)
    x = torch.randint(0, model.vocab, (batch, model.seq), device=device)
    y = torch.randint(0, model.vocab, (batch, model.seq), device=device)

    def step(runner):
        trainer.model = runner
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=bf16):
            trainer.step(x, y, h["learning_rate"])

    return model, step, batch, model.seq, "tok/s"


def time_mode(args, mode, device):
    torch.manual_seed(1)
    if is_text_cfg(args.cfg):
        model, step, batch, seq, unit = text_step_fn(args.cfg, args.batch, args.vocab, args.bf16,
                                                     device)
    else:
        model, step, batch, seq, unit = image_step_fn(args.cfg, args.batch, args.bf16, device)
    model.train()
    runner = model
    compile_s = None
    if mode == "compiled":
        runner = torch.compile(model)
        t0 = time.perf_counter()
        step(runner)  # the compile happens here, forward and backward
        torch.cuda.synchronize()
        compile_s = round(time.perf_counter() - t0, 1)
    for _ in range(args.warmup):
        step(runner)
    torch.cuda.synchronize()
    rates = []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        for _ in range(args.steps):
            step(runner)
        torch.cuda.synchronize()
        rates.append(batch * seq * args.steps / (time.perf_counter() - t0))
    rate = statistics.median(rates)
    return {
        "cfg": args.cfg,
        "mode": mode,
        "batch": batch,
        "seq": seq,
        "unit": unit,
        "rate": round(rate, 1),
        "ms_per_step": round(1e3 * batch * seq / rate, 3),
        "params": sum(p.numel() for p in model.parameters()),
        "precision": "bf16 autocast" if args.bf16 else "fp32 (TF32 off)",
        "compile_s": compile_s,
        "device": torch.cuda.get_device_name(device),
        "torch": torch.__version__,
        "cudnn": torch.backends.cudnn.version(),
    }


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--cfg", required=True)
    p.add_argument("--batch", type=int, default=0, help="default: the cfg's batch")
    p.add_argument("--steps", type=int, default=20, help="steps per timed window")
    p.add_argument("--warmup", type=int, default=5, help="untimed steps first")
    p.add_argument("--repeats", type=int, default=3, help="timed windows (the median is kept)")
    p.add_argument("--vocab", type=int, default=0, help="text cfgs: the vocabulary size")
    p.add_argument("--bf16", action="store_true",
                   help='forwards under torch.autocast("cuda", torch.bfloat16)')
    p.add_argument("--modes", default="eager", help="eager, compiled (torch.compile) or both")
    p.add_argument("--params", action="store_true", help="print the parameter count and exit")
    args = p.parse_args()
    if args.params:
        if is_text_cfg(args.cfg):
            model, _ = text_torch.build(args.cfg, args.vocab)
        else:
            model = bench_torch.CfgNet(bench_torch.parse_cfg(args.cfg))
        print(sum(t.numel() for t in model.parameters()))
        return 0
    if not torch.cuda.is_available():
        print(json.dumps({"mode": "eager", "error": "torch sees no CUDA device"}))
        return 1
    full_float32()
    torch.backends.cudnn.benchmark = True
    status = 0
    modes = args.modes.split(",")
    if not modes or set(modes) - {"eager", "compiled"}:
        p.error(f"--modes {args.modes}: expected eager, compiled or eager,compiled")
    for mode in modes:
        try:
            result = time_mode(args, mode, torch.device("cuda", 0))
        except Exception as exc:  # a failed mode is reported, the other still runs
            result = {"cfg": args.cfg, "mode": mode, "error": f"{type(exc).__name__}: {exc}"[:400]}
            status = 1
        print(json.dumps(result), flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
