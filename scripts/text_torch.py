#!/usr/bin/python3
"""PyTorch peer of cdl's sequence models: builds the language model a cdl cfg describes
(cfg/char_lstm.cfg, cfg/gpt_tiny.cfg) and trains, benchmarks or counts it as cdl does.

Run with Debian's /usr/bin/python3 (python3-torch 1.13, python3-numpy):
    text_torch.py [--cfg cfg/gpt_tiny.cfg] --data cfg/kjv.data [--time-limit S]
        [--max-steps N] [--threads 2] [--seed 1] [--eval-every N] [--log-every N]
        [--sample N [--prompt TEXT] [--temperature X]]
    text_torch.py [--cfg CFG] --bench [--steps 20] [--warmup 3] [--gen-tokens N]
        [--prompt TEXT] [--data D | --vocab V] [--batch B] [--threads K]
    text_torch.py [--cfg CFG] --params [--data D | --vocab V]

Same as cdl: the sections [embedding] (N(0,1) rows), [positional] (learned [seq][C], N(0,1)),
[layernorm], [linear] (nn.Linear's U(+-1/sqrt(in)) init, an activation, tie=1: the first
embedding's weights transposed plus a bias of its own), [attention] (nanoGPT's
CausalSelfAttention: qkv and output projections with biases, dropout on the probabilities),
[rnn]/[lstm]/[gru] (one torch.nn layer, batch first, zero initial state per sample),
[shortcut] (in + layer(from)), [dropout] and [softmax] (cross-entropy per token, the mean over
batch x seq tokens); [net]'s recipe: sgd/adam/adamw as torch.optim, weight decay on the
weight matrices, embeddings and positional weights only (every tensor with decay_bn_bias=1),
clipping by the global gradient norm, the learning rate of cdl's net_learning_rate (policy,
burn_in, warmup, lr_min), ema. The data: a .data file with type=text, train=, valid= or
valid_split=F (the last floor(F * n) tokens of the stream), tokens=char (ids = the sorted
distinct code points of train + valid text) or byte; training windows of seq+1 tokens at
uniformly random offsets; validation: windows at 0, seq, 2 seq... (a partial last one
dropped), loss = mean cross-entropy of every predicted token. The random draws differ.

Training stops after max_batches steps (when > 0; --max-steps overrides it) or after the
step during which --time-limit seconds of the run (periodic evaluations included) passed,
then evaluates and prints one JSON line {"valid_loss", "bits_per_token", "steps",
"tokens_per_s" (steps x batch x seq over the training time, evaluations excluded), "wall_s"
(setup to the end of the final evaluation), "threads", "torch"}.

--bench prints one JSON line: training tokens/s on random tokens (--steps timed after
--warmup), and greedy generation of --gen-tokens tokens (default: as many as fit the context
after --prompt; batch 1) with a cache (attention keys and values; recurrent state) and
without one (the whole context, at most seq tokens, rerun for every token), in tokens/s:
generated tokens over the time from the prompt to the last token, and whether both texts
agree. --params prints the trainable parameter count (a tied matrix counted once).

Generation past seq tokens: without a cache the context is the last seq tokens; with one, a
net with [positional] restarts its cache from the last seq/2 tokens when it is full (a
recurrent state just carries on).

Threads: --threads K sets torch's pool and, unless OPENBLAS_NUM_THREADS is set, OpenBLAS's
(Debian's torch calls the pthread OpenBLAS for matrix products); OMP_WAIT_POLICY defaults to
PASSIVE, so idle OpenMP threads do not spin against OpenBLAS on a small machine. The JSON
lines record the policy.
"""
import argparse
import json
import math
import os
import re
import sys
import time


def _threads_arg():
    """--threads K from the command line, read before torch loads (argparse runs later)."""
    for i, arg in enumerate(sys.argv):
        m = re.fullmatch(r"--threads(?:=(\d+))?", arg)
        if m:
            return m.group(1) or (sys.argv[i + 1] if i + 1 < len(sys.argv) else None)
    return None


# Debian's torch runs its own OpenMP pool and calls OpenBLAS's pthread pool for matrix
# products. Two pools on 2 shared cores fight: torch's idle OpenMP threads spin and steal
# the cores OpenBLAS needs (measured here: 2-3x slower steps, worse with other load). So,
# unless the caller says otherwise, idle OpenMP threads sleep and OpenBLAS gets --threads.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
if (_threads_arg() or "0").isdigit() and int(_threads_arg() or 0) > 0:
    os.environ.setdefault("OPENBLAS_NUM_THREADS", _threads_arg())

import numpy as np  # noqa: E402 (after the environment above)
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from bench_torch import parse_cfg  # noqa: E402

NAME = "text_torch"
EVAL_BATCH = 256  # validation windows per forward pass (the loss does not depend on it)

# [net] keys this peer follows, and keys it accepts and ignores (image nets' input shape;
# split_passes, how cdl runs a mini-batch, which does not change the step).
NET_KEYS = {
    "batch", "subdivisions", "seq", "time_steps", "vocab", "inputs", "learning_rate",
    "momentum", "decay", "policy", "step", "scale", "gamma", "power", "steps", "scales",
    "burn_in", "warmup", "lr_min", "max_batches", "epochs", "optimizer", "nesterov", "beta1",
    "beta2", "eps", "decay_bn_bias", "clip_grad_norm", "ema", "width", "height", "channels",
    "split_passes",
}
LAYER_KEYS = {
    "embedding": {"output", "vocab"},
    "positional": set(),
    "layernorm": {"eps"},
    "linear": {"output", "activation", "bias", "tie"},
    "attention": {"heads", "dropout", "causal"},
    "rnn": {"output", "activation"},
    "lstm": {"output"},
    "gru": {"output"},
    "shortcut": {"from", "activation"},
    "dropout": {"probability"},
    "softmax": set(),
}


def fail(message):
    sys.exit(f"{NAME}: {message}")


# ----------------------------------------------------------------------------- data


def read_data_file(path):
    """{key: value} of a .data file; train= and valid= resolved as cdl does (from the current
    directory, else from the .data file's directory)."""
    keys = {}
    with open(path) as f:
        for lineno, raw in enumerate(f, 1):
            line = raw.split("#", 1)[0].strip()
            if not line:
                continue
            if "=" not in line:
                fail(f"{path}:{lineno}: expected key=value")
            key, value = (part.strip() for part in line.split("=", 1))
            if key in ("train", "valid") and not os.path.isabs(value) and not os.path.exists(value):
                value = os.path.join(os.path.dirname(path), value)
            keys[key] = value
    if keys.get("type") != "text":
        fail(f"{path}: not a text dataset (type=text)")
    if "train" not in keys:
        fail(f"{path}: needs train=")
    if "valid" in keys and "valid_split" in keys:
        fail(f"{path}: valid= and valid_split= exclude each other")
    return keys


class TextData:
    """The token streams of a text .data file: train and valid (int64 tensors), the vocabulary
    (code points for tokens=char, None for byte) and its size."""

    def __init__(self, path):
        keys = read_data_file(path)
        self.kind = keys.get("tokens", "char")
        if self.kind not in ("char", "byte"):
            fail(f"{path}: tokens={self.kind}: expected char or byte")
        raw = []
        for key in ("train", "valid"):
            if key in keys:
                if not os.path.exists(keys[key]):
                    fail(f"{keys[key]}: no such file (scripts/text-data.sh writes the corpora)")
                with open(keys[key], "rb") as f:
                    raw.append(f.read())
        if self.kind == "byte":
            self.codepoints, self.vocab = None, 256
            streams = [np.frombuffer(r, np.uint8).astype(np.int64) for r in raw]
        else:
            points = [np.frombuffer(r.decode("utf-8").encode("utf-32-le"), np.uint32) for r in raw]
            self.codepoints = np.unique(np.concatenate(points))
            self.vocab = len(self.codepoints)
            streams = [np.searchsorted(self.codepoints, p).astype(np.int64) for p in points]
        if len(streams) == 2:
            train, valid = streams
        else:
            split = float(keys.get("valid_split", 0))
            if not 0 <= split < 1:
                fail(f"{path}: valid_split={split}: expected a number in [0, 1)")
            n_train = len(streams[0]) - int(split * len(streams[0]))
            train, valid = streams[0][:n_train], streams[0][n_train:]
        self.train, self.valid = torch.from_numpy(train), torch.from_numpy(valid)

    def encode(self, text):
        if self.kind == "byte":
            return list(text.encode("utf-8"))
        ids = []
        for ch in text:
            at = int(np.searchsorted(self.codepoints, ord(ch)))
            if at == self.vocab or self.codepoints[at] != ord(ch):
                fail(f"the prompt's character {ch!r} is not in the vocabulary")
            ids.append(at)
        return ids

    def decode(self, ids):
        if self.kind == "byte":
            return bytes(ids).decode("utf-8", errors="replace")
        return "".join(chr(self.codepoints[i]) for i in ids)


# ----------------------------------------------------------------------------- model


def activation(name):
    table = {
        "linear": lambda x: x,
        "relu": F.relu,
        "leaky": lambda x: F.leaky_relu(x, 0.1),
        "logistic": torch.sigmoid,
        "tanh": torch.tanh,
        "elu": F.elu,
        "relu6": F.relu6,
        "gelu": F.gelu,  # the erf form
        "swish": F.silu,
        "mish": F.mish,
    }
    if name not in table:
        fail(f"unsupported activation '{name}'")
    return table[name]


class Linear(nn.Module):
    """nn.Linear over the last dimension then an activation; tied: the weight is the
    embedding's [vocab][C] (not a parameter of this layer), with a bias of its own."""

    def __init__(self, inputs, outputs, bias, act, tied=None):
        super().__init__()
        self.act = activation(act)
        if tied is None:
            self.linear = nn.Linear(inputs, outputs, bias=bias)
            self.tied = None
        else:
            self.linear = None
            object.__setattr__(self, "tied", tied)  # not a submodule: counted once
            bound = 1 / math.sqrt(inputs)
            self.bias = nn.Parameter(torch.empty(outputs).uniform_(-bound, bound)) if bias else None

    def forward(self, x):
        if self.tied is None:
            return self.act(self.linear(x))
        return self.act(F.linear(x, self.tied.weight, self.bias))


class Positional(nn.Module):
    """Adds learned rows [seq][C] to the input rows at positions pos0, pos0 + 1, ..."""

    def __init__(self, seq, width):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(seq, width))

    def forward(self, x, pos0):
        if pos0 + x.shape[1] > self.weight.shape[0]:
            fail(f"position {pos0 + x.shape[1] - 1} is past the net's seq={self.weight.shape[0]}")
        return x + self.weight[pos0: pos0 + x.shape[1]]


class Attention(nn.Module):
    """nanoGPT's CausalSelfAttention; with a cache dict, the keys and values of earlier
    positions are kept in it and the new rows attend to them too."""

    def __init__(self, width, heads, dropout, causal):
        super().__init__()
        if width % heads:
            fail(f"[attention] heads={heads} does not divide the width {width}")
        self.heads, self.causal = heads, causal
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, cache=None):
        b, n, c = x.shape
        q, k, v = self.qkv(x).split(c, dim=2)
        q, k, v = (t.view(b, n, self.heads, c // self.heads).transpose(1, 2) for t in (q, k, v))
        if cache is not None:
            if "k" in cache:
                k, v = torch.cat((cache["k"], k), dim=2), torch.cat((cache["v"], v), dim=2)
            cache["k"], cache["v"] = k, v
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(c // self.heads))
        if self.causal and n > 1:
            seen = k.shape[2] - n  # query i sits at position seen + i
            mask = torch.ones(n, k.shape[2], dtype=torch.bool).triu_(seen + 1)
            att = att.masked_fill(mask, float("-inf"))
        att = self.dropout(F.softmax(att, dim=-1))
        y = (att @ v).transpose(1, 2).reshape(b, n, c)
        return self.proj(y)


class Recurrent(nn.Module):
    """One nn.RNN/LSTM/GRU layer, batch first; with a cache dict its state carries over."""

    def __init__(self, kind, inputs, hidden, act):
        super().__init__()
        if kind == "rnn":
            if act not in ("tanh", "relu"):
                fail(f"[rnn] activation={act}: torch.nn.RNN has tanh and relu")
            self.rnn = nn.RNN(inputs, hidden, nonlinearity=act, batch_first=True)
        else:
            self.rnn = (nn.LSTM if kind == "lstm" else nn.GRU)(inputs, hidden, batch_first=True)

    def forward(self, x, cache=None):
        y, state = self.rnn(x, cache.get("state") if cache is not None else None)
        if cache is not None:
            cache["state"] = state
        return y


class SeqNet(nn.Module):
    """The layers of a cdl sequence cfg: token ids [B][L] -> logits [B][L][vocab]."""

    def __init__(self, sections, vocab):
        super().__init__()
        net = sections[0][1]
        for key in net:
            if key not in NET_KEYS:
                fail(f"[net] key '{key}' is not one this peer follows")
        self.seq = int(net.get("seq", net.get("time_steps", 0)))
        if self.seq < 1:
            fail("[net] needs seq= (tokens per sample)")
        if int(net.get("inputs", 1)) != 1:
            fail("[net] inputs= must be 1 (token ids)")
        self.vocab = vocab
        self.body = nn.ModuleList()
        self.kinds, self.sources = [], []
        decayed = []
        embedding = None
        width = 0
        for i, (kind, s) in enumerate(sections[1:]):
            if kind not in LAYER_KEYS:
                fail(f"layer {i}: unsupported section [{kind}]")
            for key in s:
                if key not in LAYER_KEYS[kind]:
                    fail(f"layer {i} [{kind}]: unknown key '{key}'")
            if (kind == "embedding") != (i == 0):
                fail(f"layer {i}: [embedding] must be layer 0, and only there")
            source = None
            if kind == "embedding":
                width = int(s["output"])
                module = nn.Embedding(int(s.get("vocab", vocab)), width)  # N(0, 1)
                embedding = module
                decayed.append(module.weight)
            elif kind == "positional":
                module = Positional(self.seq, width)
                decayed.append(module.weight)
            elif kind == "layernorm":
                module = nn.LayerNorm(width, eps=float(s.get("eps", 1e-5)))
            elif kind == "linear":
                outputs = int(s.get("output", vocab))
                tie = int(s.get("tie", 0))
                if tie and (embedding.weight.shape != (outputs, width)):
                    fail(f"layer {i}: tie=1 needs output=vocab and the embedding's width as input")
                module = Linear(width, outputs, bool(int(s.get("bias", 1))),
                                s.get("activation", "linear"), embedding if tie else None)
                if not tie:
                    decayed.append(module.linear.weight)
                width = outputs
            elif kind == "attention":
                module = Attention(width, int(s.get("heads", 1)), float(s.get("dropout", 0)),
                                   bool(int(s.get("causal", 1))))
                decayed += [module.qkv.weight, module.proj.weight]
            elif kind in ("rnn", "lstm", "gru"):
                hidden = int(s["output"])
                module = Recurrent(kind, width, hidden, s.get("activation", "tanh"))
                decayed += [module.rnn.weight_ih_l0, module.rnn.weight_hh_l0]
                width = hidden
            elif kind == "shortcut":
                source = int(s["from"])
                source = i + source if source < 0 else source
                if not 0 <= source < i:
                    fail(f"layer {i}: [shortcut] from={s['from']} names no earlier layer")
                if s.get("activation", "linear") != "linear":
                    fail(f"layer {i}: [shortcut] activation other than linear")
                module = nn.Identity()
            elif kind == "dropout":
                module = nn.Dropout(float(s.get("probability", 0.5)))
            else:  # softmax: cross_entropy applies log-softmax to the logits
                if i != len(sections) - 2:
                    fail(f"layer {i}: [softmax] must be the last layer")
                module = nn.Identity()
            self.body.append(module)
            self.kinds.append(kind)
            self.sources.append(source)
        if width != vocab:
            fail(f"the last layer has {width} outputs, the vocabulary {vocab} tokens")
        self.decayed_ids = {id(p) for p in decayed}
        self.keep = {src for src in self.sources if src is not None}

    def forward(self, ids, cache=None, pos0=0):
        """ids [B][L] at positions pos0.. -> logits [B][L][vocab]. cache: None, or a list with
        one dict per layer that keeps the attention keys/values and recurrent states."""
        kept = {}
        x = ids
        for i, (module, kind) in enumerate(zip(self.body, self.kinds)):
            if kind == "positional":
                x = module(x, pos0)
            elif kind in ("attention", "rnn", "lstm", "gru"):
                x = module(x, cache[i] if cache is not None else None)
            elif kind == "shortcut":
                x = x + kept[self.sources[i]]
            else:
                x = module(x)
            if i in self.keep:
                kept[i] = x
        return x

    def param_groups(self, decay, decay_all):
        params = list(self.parameters())  # shared tensors once
        if decay_all:
            return [{"params": params, "weight_decay": decay}]
        return [
            {"params": [p for p in params if id(p) in self.decayed_ids], "weight_decay": decay},
            {"params": [p for p in params if id(p) not in self.decayed_ids], "weight_decay": 0.0},
        ]

    def has_positional(self):
        return "positional" in self.kinds


# ----------------------------------------------------------------------------- recipe


def read_hyper(net):
    h = {
        "batch": int(net.get("batch", 1)),
        "subdivisions": int(net.get("subdivisions", 1)),
        "learning_rate": float(net.get("learning_rate", 0.001)),
        "momentum": float(net.get("momentum", 0.9)),
        "decay": float(net.get("decay", 0.0001)),
        "policy": net.get("policy", "constant"),
        "step": int(net.get("step", 1)),
        "scale": float(net.get("scale", 1.0)),
        "gamma": float(net.get("gamma", 1.0)),
        "power": float(net.get("power", 4.0)),
        "steps": [int(v) for v in net.get("steps", "").split(",") if v.strip()],
        "scales": [float(v) for v in net.get("scales", "").split(",") if v.strip()],
        "burn_in": int(net.get("burn_in", 0)),
        "warmup": int(net.get("warmup", 0)),
        "lr_min": float(net.get("lr_min", 0.0)),
        "max_batches": int(net.get("max_batches", 0)),
        "optimizer": net.get("optimizer", "sgd"),
        "nesterov": int(net.get("nesterov", 0)),
        "beta1": float(net.get("beta1", 0.9)),
        "beta2": float(net.get("beta2", 0.999)),
        "eps": float(net.get("eps", 1e-8)),
        "decay_bn_bias": int(net.get("decay_bn_bias", 0)),
        "clip_grad_norm": float(net.get("clip_grad_norm", 0.0)),
        "ema": float(net.get("ema", 0.0)),
    }
    if h["policy"] not in ("constant", "step", "steps", "exp", "poly", "cosine"):
        fail(f"[net] policy={h['policy']}: unknown")
    if h["optimizer"] not in ("sgd", "adam", "adamw"):
        fail(f"[net] optimizer={h['optimizer']}: unknown")
    if h["batch"] % h["subdivisions"]:
        fail("[net] batch is not divisible by subdivisions")
    return h


def policy_rate(h, t, total_steps):
    rate, policy = h["learning_rate"], h["policy"]
    if policy == "step":
        return rate * h["scale"] ** (t // h["step"])
    if policy == "steps":
        for at, scale in zip(h["steps"], h["scales"]):
            if at > t:
                return rate
            rate *= scale
        return rate
    if policy == "exp":
        return rate * h["gamma"] ** t
    if policy == "poly":
        left = 1.0 - t / h["max_batches"]
        return rate * left ** h["power"] if left > 0 else 0.0
    if policy == "cosine":
        span = h["max_batches"] if h["max_batches"] > 0 else total_steps
        if not span:
            return rate
        if t >= span:
            return h["lr_min"]
        return h["lr_min"] + (rate - h["lr_min"]) * 0.5 * (1 + math.cos(math.pi * t / span))
    return rate


def learning_rate(h, t, total_steps):
    """cdl's net_learning_rate: the rate of step t (from 0)."""
    if t < h["burn_in"]:
        rate = h["learning_rate"] * (t / h["burn_in"]) ** h["power"]
    else:
        rate = policy_rate(h, t, total_steps)
    if t < h["warmup"]:
        rate *= (t + 1) / h["warmup"]
    return rate


def make_optimizer(model, h):
    groups = model.param_groups(h["decay"], h["decay_bn_bias"])
    if h["optimizer"] == "sgd":
        return torch.optim.SGD(groups, lr=h["learning_rate"], momentum=h["momentum"],
                               nesterov=bool(h["nesterov"]))
    adam = torch.optim.AdamW if h["optimizer"] == "adamw" else torch.optim.Adam
    return adam(groups, lr=h["learning_rate"], betas=(h["beta1"], h["beta2"]), eps=h["eps"])


class Trainer:
    """One optimizer step = subdivisions mini-batches whose gradients add up to the gradient
    of the mean loss over batch x seq tokens."""

    def __init__(self, model, h):
        self.model, self.h = model, h
        self.opt = make_optimizer(model, h)
        self.params = list(model.parameters())
        self.ema = [p.detach().clone() for p in self.params] if h["ema"] > 0 else None

    def step(self, x, y, lr):
        for group in self.opt.param_groups:
            group["lr"] = lr
        self.opt.zero_grad(set_to_none=False)
        total = 0.0
        for xs, ys in zip(x.chunk(self.h["subdivisions"]), y.chunk(self.h["subdivisions"])):
            logits = self.model(xs)
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), ys.reshape(-1))
            (loss / self.h["subdivisions"]).backward()
            total += loss.item() / self.h["subdivisions"]
        if not math.isfinite(total):
            fail(f"the loss is not finite ({total})")
        if self.h["clip_grad_norm"] > 0:
            nn.utils.clip_grad_norm_(self.params, self.h["clip_grad_norm"])
        self.opt.step()
        if self.ema is not None:
            with torch.no_grad():
                for shadow, p in zip(self.ema, self.params):
                    shadow.mul_(self.h["ema"]).add_(p, alpha=1 - self.h["ema"])
        return total

    def swap_ema(self):
        """Exchanges the weights and their EMA (evaluate with the EMA, then swap back)."""
        if self.ema is not None:
            with torch.no_grad():
                for shadow, p in zip(self.ema, self.params):
                    tmp = p.detach().clone()
                    p.copy_(shadow)
                    shadow.copy_(tmp)


@torch.no_grad()
def evaluate(model, valid, seq, batch):
    """Mean cross-entropy over the windows at 0, seq, 2 seq... of the validation stream."""
    windows = (len(valid) - 1) // seq
    if windows < 1:
        fail(f"the validation text has {len(valid)} tokens, fewer than seq+1 = {seq + 1}")
    was_training = model.training
    model.eval()
    total = 0.0
    for first in range(0, windows, batch):
        starts = torch.arange(first, min(first + batch, windows)) * seq
        rows = valid[starts[:, None] + torch.arange(seq + 1)]
        logits = model(rows[:, :-1])
        total += F.cross_entropy(logits.reshape(-1, logits.shape[-1]), rows[:, 1:].reshape(-1),
                                 reduction="sum").item()
    model.train(was_training)
    return total / (windows * seq)


@torch.no_grad()
def generate(model, prompt, n_tokens, use_cache, temperature=0.0, generator=None):
    """prompt ids + n_tokens new ones (greedy at temperature 0), batch 1."""
    model.eval()
    seq = model.seq
    ids = list(prompt)

    def pick(logits):
        if temperature <= 0:
            return int(logits.argmax())
        probs = F.softmax(logits / temperature, dim=-1)
        return int(torch.multinomial(probs, 1, generator=generator))

    if not use_cache:
        for _ in range(n_tokens):
            context = torch.tensor([ids[-seq:]])
            ids.append(pick(model(context)[0, -1]))
        return ids

    def prefill(context):
        cache = [{} for _ in model.kinds]
        return cache, model(torch.tensor([context]), cache, 0)[0, -1], len(context)

    start = ids[-seq:] if model.has_positional() else ids
    cache, logits, pos = prefill(start)
    for k in range(n_tokens):
        ids.append(pick(logits))
        if k == n_tokens - 1:
            break
        if model.has_positional() and pos == seq:  # full: restart from the last seq/2 tokens
            cache, logits, pos = prefill(ids[-(seq // 2):])
            continue
        logits = model(torch.tensor([[ids[-1]]]), cache, pos)[0, -1]
        pos += 1
    return ids


# ----------------------------------------------------------------------------- commands


def build(cfg, vocab):
    sections = parse_cfg(cfg)
    net = sections[0][1]
    cfg_vocab = int(net.get("vocab", 0))
    if vocab and cfg_vocab and cfg_vocab < vocab:
        fail(f"{cfg}: vocab={cfg_vocab} is smaller than the data's {vocab} tokens")
    vocab = cfg_vocab or vocab
    if not vocab:
        fail(f"{cfg}: vocab=0: give --data or --vocab")
    return SeqNet(sections, vocab), read_hyper(net)


def train(args, data):
    model, h = build(args.cfg, data.vocab)
    if args.batch:
        h["batch"], h["subdivisions"] = args.batch, 1
    max_steps = args.max_steps if args.max_steps is not None else h["max_batches"]
    if not max_steps and not args.time_limit:
        fail("nothing bounds the run: set max_batches in the cfg, --max-steps or --time-limit")
    seq, batch = model.seq, h["batch"]
    if len(data.train) < seq + 1:
        fail(f"the training text has {len(data.train)} tokens, fewer than seq+1 = {seq + 1}")
    trainer = Trainer(model, h)
    gen = torch.Generator().manual_seed(args.seed)
    window = torch.arange(seq + 1)
    params = sum(p.numel() for p in model.parameters())
    print(f"{args.cfg}: {params:,} parameters, vocab {model.vocab}, seq {seq}, batch {batch}; "
          f"{len(data.train):,} training and {len(data.valid):,} validation tokens; "
          f"{torch.get_num_threads()} threads", flush=True)

    def eval_line(steps, train_loss, lr, elapsed_s):
        trainer.swap_ema()
        loss = evaluate(model, data.valid, seq, EVAL_BATCH)
        trainer.swap_ema()
        print(f"step {steps}: train loss {train_loss:.4f}, valid loss {loss:.4f} "
              f"({loss / math.log(2):.3f} bits/token), lr {lr:.3g}, {elapsed_s:.1f} s", flush=True)
        return loss

    def mean_last(n):
        return sum(losses[-n:]) / len(losses[-n:])

    model.train()
    start = time.perf_counter()
    eval_s = 0.0
    steps, losses, lr = 0, [], h["learning_rate"]
    while True:
        offsets = torch.randint(0, len(data.train) - seq, (batch,), generator=gen)
        rows = data.train[offsets[:, None] + window]
        lr = learning_rate(h, steps, max_steps)
        losses.append(trainer.step(rows[:, :-1], rows[:, 1:], lr))
        steps += 1
        elapsed_s = time.perf_counter() - start
        if args.log_every and steps % args.log_every == 0:
            tokens_per_s = steps * batch * seq / (elapsed_s - eval_s)
            print(f"step {steps}: train loss {mean_last(args.log_every):.4f}, lr {lr:.3g}, "
                  f"{tokens_per_s:.0f} tokens/s, {elapsed_s:.1f} s", flush=True)
        if (max_steps and steps >= max_steps) or (args.time_limit and elapsed_s >= args.time_limit):
            break
        if args.eval_every and steps % args.eval_every == 0:
            t0 = time.perf_counter()
            eval_line(steps, mean_last(args.eval_every), lr, elapsed_s)
            eval_s += time.perf_counter() - t0
    train_s = time.perf_counter() - start - eval_s
    loss = eval_line(steps, mean_last(args.eval_every or args.log_every or 1), lr,
                     time.perf_counter() - start)
    wall_s = time.perf_counter() - args.t0
    if args.sample:
        trainer.swap_ema()
        prompt = data.encode(args.prompt) if args.prompt else [int(data.train[0])]
        text = data.decode(generate(model, prompt, args.sample, True, args.temperature,
                                    torch.Generator().manual_seed(args.seed)))
        print("sample:", text, sep="\n", flush=True)
    print(json.dumps({
        "valid_loss": round(loss, 5),
        "bits_per_token": round(loss / math.log(2), 5),
        "steps": steps,
        "tokens_per_s": round(steps * batch * seq / train_s, 1),
        "wall_s": round(wall_s, 2),
        "threads": torch.get_num_threads(),
        "omp_wait_policy": os.environ["OMP_WAIT_POLICY"],
        "torch": torch.__version__,
    }))


def bench(args, data):
    model, h = build(args.cfg, data.vocab if data else args.vocab)
    batch = args.batch or h["batch"]
    if args.batch:
        h["batch"], h["subdivisions"] = batch, 1
    seq, vocab = model.seq, model.vocab
    trainer = Trainer(model, h)
    x = torch.randint(0, vocab, (batch, seq))
    y = torch.randint(0, vocab, (batch, seq))
    model.train()
    for _ in range(args.warmup):
        trainer.step(x, y, h["learning_rate"])
    start = time.perf_counter()
    for _ in range(args.steps):
        trainer.step(x, y, h["learning_rate"])
    train_s = time.perf_counter() - start

    if data:
        prompt = data.encode(args.prompt)
    else:
        prompt = torch.randint(0, vocab, (len(args.prompt),)).tolist()
    n = args.gen_tokens or max(1, seq - len(prompt))
    generate(model, prompt, 2, True)  # untimed: first-call costs
    generate(model, prompt, 2, False)
    texts, seconds = {}, {}
    for use_cache in (True, False):
        t0 = time.perf_counter()
        texts[use_cache] = generate(model, prompt, n, use_cache)
        seconds[use_cache] = time.perf_counter() - t0
    print(json.dumps({
        "cfg": args.cfg,
        "batch": batch,
        "seq": seq,
        "vocab": vocab,
        "threads": torch.get_num_threads(),
        "steps": args.steps,
        "train_tokens_per_s": round(batch * seq * args.steps / train_s, 1),
        "ms_per_step": round(1e3 * train_s / args.steps, 3),
        "prompt_tokens": len(prompt),
        "gen_tokens": n,
        "gen_tokens_per_s_cache": round(n / seconds[True], 1),
        "gen_tokens_per_s_nocache": round(n / seconds[False], 1),
        "gen_same_text": texts[True] == texts[False],
        "omp_wait_policy": os.environ["OMP_WAIT_POLICY"],
        "torch": torch.__version__,
    }))


def main():
    t0 = time.perf_counter()
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--cfg", default="cfg/gpt_tiny.cfg")
    p.add_argument("--data", help="text .data file (training: required)")
    p.add_argument("--vocab", type=int, default=0, help="vocabulary size without --data")
    p.add_argument("--time-limit", type=float, default=0, help="stop after the step passing S s")
    p.add_argument("--max-steps", type=int, help="stop after N steps (default: max_batches)")
    p.add_argument("--batch", type=int, default=0, help="default: the cfg's batch")
    p.add_argument("--threads", type=int, default=0, help="default: torch's choice")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--eval-every", type=int, default=0, help="steps between evaluations")
    p.add_argument("--log-every", type=int, default=100, help="steps between progress lines")
    p.add_argument("--sample", type=int, default=0, help="after training, generate N tokens")
    p.add_argument("--prompt", default="In the beginning", help="prompt of --sample and --bench")
    p.add_argument("--temperature", type=float, default=0.8, help="of --sample (0: greedy)")
    p.add_argument("--bench", action="store_true", help="time training and generation")
    p.add_argument("--steps", type=int, default=20, help="--bench: timed training steps")
    p.add_argument("--warmup", type=int, default=3, help="--bench: untimed steps first")
    p.add_argument("--gen-tokens", type=int, default=0,
                   help="--bench: tokens to generate (default: seq minus the prompt)")
    p.add_argument("--params", action="store_true", help="print the parameter count and exit")
    args = p.parse_args()
    args.t0 = t0
    # Interop threads can only be set before any parallel work starts.
    torch.set_num_interop_threads(1)
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    data = TextData(args.data) if args.data else None
    if args.params:
        model, _ = build(args.cfg, data.vocab if data else args.vocab)
        print(sum(p.numel() for p in model.parameters()))
    elif args.bench:
        bench(args, data)
    else:
        if not data:
            fail("training needs --data (or give --bench or --params)")
        train(args, data)


if __name__ == "__main__":
    main()
