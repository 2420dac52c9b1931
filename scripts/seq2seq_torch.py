#!/usr/bin/python3
"""PyTorch peer of cdl's sequence-to-sequence cfgs: an nn.Transformer of the same sizes, trained
on the same pairs for the same time, then decoding the validation sources greedily.

Run with Debian's /usr/bin/python3 (python3-torch 1.13):
    seq2seq_torch.py --train TRAIN.tsv --valid VALID.tsv --source S --seq T --width C
        --heads H --ff F --layers N [--batch B] [--lr X] [--warmup W] [--time-limit SEC]
        [--max-steps N] [--threads K] [--seed S] [--bucket N] [--hypotheses OUT] [--kept PREFIX]
    seq2seq_torch.py ... --params

As cdl reads a cfg like cfg/translate.cfg with a type=pairs .data: characters as tokens (the
vocabulary the sorted distinct code points of every side of every pair, with STX and ETX as BOS
and EOS), pairs whose source has more than S characters or whose target more than T-1 left out,
-1 padding. The model: one embedding table (N(0,1) rows) shared by source and target and tied to
the head (its own bias), a learned position table per stack (N(0,1)), nn.Transformer post-norm
with N encoder and N decoder layers, ReLU feed-forward of F, no dropout; key padding masks on
both sides and on the memory. Loss: cross-entropy summed over the labelled target rows / (B*T);
Adam (betas 0.9, 0.999, eps 1e-8) at lr after W linear warmup steps, constant after. Training
draws B pairs uniformly per step (--bucket N: as cdl's bucket=N, the first pair from all, the
others from its bucket of N pairs ordered by the rows of their longer part, then target length,
source length and line) and computes the batch padded to its longest source and target (as cdl
does) until --time-limit seconds passed (or --max-steps), then
decodes each validation source greedily (the decoder rerun over the rows so far per token, no
cache) into --hypotheses, one line each (--kept PREFIX writes the validation pairs that were
kept to PREFIX.sources and PREFIX.targets, a line each, for scoring the two tools alike), and prints one JSON line {"steps", "pairs_per_s"
(training steps x B over the training time), "train_s", "train_cpu_s" (the process's CPU
seconds, all threads, while training), "valid_loss" (per labelled target
token), "decode_s", "params", "threads", "torch"}. --params prints the parameter count alone.
"""
import argparse
import json
import math
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

BOS, EOS = "\x02", "\x03"


def read_pairs(path):
    pairs = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            parts = line.rstrip("\n").split("\t")
            if len(parts) != 2 or not parts[0] or not parts[1]:
                sys.exit(f"seq2seq_torch: {path}:{n}: not source<TAB>target")
            pairs.append(parts)
    return pairs


class Seq2Seq(nn.Module):
    def __init__(self, vocab, a):
        super().__init__()
        self.embedding = nn.Parameter(torch.randn(vocab, a.width))
        self.source_positions = nn.Parameter(torch.randn(a.source, a.width))
        self.target_positions = nn.Parameter(torch.randn(a.seq, a.width))
        self.transformer = nn.Transformer(a.width, a.heads, a.layers, a.layers, a.ff, dropout=0.0,
                                          batch_first=True)
        # torch 1.13's inference fast path packs the encoder's output to the longest unpadded
        # source of the batch, which the memory's padding mask then no longer fits
        self.transformer.encoder.enable_nested_tensor = False
        self.head_bias = nn.Parameter(torch.zeros(vocab))
        self.causal = self.transformer.generate_square_subsequent_mask(a.seq)

    def forward(self, src, tgt):
        """src [B, S], tgt [B, T'] ids (-1: padding) -> logits [B, T', vocab]."""
        t = tgt.shape[1]
        x = F.embedding(src.clamp(min=0), self.embedding) + self.source_positions[:src.shape[1]]
        y = F.embedding(tgt.clamp(min=0), self.embedding) + self.target_positions[:t]
        out = self.transformer(x, y, tgt_mask=self.causal[:t, :t], src_key_padding_mask=src < 0,
                               tgt_key_padding_mask=tgt < 0, memory_key_padding_mask=src < 0)
        return out @ self.embedding.t() + self.head_bias


def kept_pairs(pairs, a):
    return [(s, t) for s, t in pairs if len(s) <= a.source and len(t) <= a.seq - 1]


def bucket_order(pairs, a):
    """The kept pairs' indices in cdl's bucket order: the rows of the longer part (the source's,
    or the target's with BOS), then target length, source length, line."""
    kept = kept_pairs(pairs, a)
    key = [(max(len(s), len(t) + 1), len(t), len(s), i) for i, (s, t) in enumerate(kept)]
    return torch.tensor([k[3] for k in sorted(key)], dtype=torch.long)


def draw_batch(n, order, a):
    """B indices of the n training pairs: uniform, or with buckets from the first one's."""
    if not a.bucket:
        return torch.randint(n, (a.batch,))
    buckets = max(1, n // a.bucket)
    k = min(int(torch.randint(n, ())) // a.bucket, buckets - 1)
    first = k * a.bucket
    size = n - first if k == buckets - 1 else a.bucket
    return order[first + torch.randint(size, (a.batch,))]


def trim(src, tgt, lab):
    """The batch without the rows that are padding in every pair."""
    s = max(int((src >= 0).sum(1).max()), 1)
    t = max(int((tgt >= 0).sum(1).max()), 1)
    return src[:, :s], tgt[:, :t], lab[:, :t]


def encode(pairs, ids, a):
    """Tensors src [n, S], tgt [n, T] (BOS and the target), labels [n, T] (the target and EOS)."""
    kept = kept_pairs(pairs, a)
    src = torch.full((len(kept), a.source), -1, dtype=torch.long)
    tgt = torch.full((len(kept), a.seq), -1, dtype=torch.long)
    lab = torch.full((len(kept), a.seq), -1, dtype=torch.long)
    for i, (s, t) in enumerate(kept):
        src[i, :len(s)] = torch.tensor([ids[c] for c in s])
        row = [ids[c] for c in BOS + t + EOS]
        tgt[i, :len(t) + 1] = torch.tensor(row[:-1])
        lab[i, :len(t) + 1] = torch.tensor(row[1:])
    return src, tgt, lab


@torch.no_grad()
def valid_loss(model, data, batch):
    src, tgt, lab = data
    total, count = 0.0, 0
    for i in range(0, len(src), batch):
        logits = model(src[i:i + batch], tgt[i:i + batch])
        total += F.cross_entropy(logits.flatten(0, 1), lab[i:i + batch].flatten(),
                                 ignore_index=-1, reduction="sum").item()
        count += int((lab[i:i + batch] >= 0).sum())
    return total / max(count, 1)


@torch.no_grad()
def decode(model, src, bos, eos, seq, batch):
    """Greedy targets of the sources src [n, S] as lists of ids."""
    out = []
    for i in range(0, len(src), batch):
        s = src[i:i + batch]
        tgt = torch.full((len(s), 1), bos, dtype=torch.long)
        done = torch.zeros(len(s), dtype=torch.bool)
        for _ in range(seq - 1):
            step = model(s, tgt)[:, -1].argmax(-1)
            step[done] = eos
            done |= step == eos
            tgt = torch.cat([tgt, step[:, None]], 1)
            if done.all():
                break
        for row in tgt[:, 1:].tolist():
            out.append(row[:row.index(eos)] if eos in row else row)
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    for name in ("train", "valid"):
        p.add_argument(f"--{name}", required=True)
    for name in ("source", "seq", "width", "heads", "ff", "layers"):
        p.add_argument(f"--{name}", type=int, required=True)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--warmup", type=int, default=200)
    p.add_argument("--time-limit", type=float, default=60)
    p.add_argument("--max-steps", type=int, default=0)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--bucket", type=int, default=0)
    p.add_argument("--hypotheses")
    p.add_argument("--kept", metavar="PREFIX")
    p.add_argument("--params", action="store_true")
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    train, valid = read_pairs(a.train), read_pairs(a.valid)
    chars = sorted(set("".join(s + t for s, t in train + valid)) | {BOS, EOS})
    ids = {c: i for i, c in enumerate(chars)}
    model = Seq2Seq(len(chars), a)
    params = sum(t.numel() for t in model.parameters())
    if a.params:
        print(params)
        return
    train_data, valid_data = encode(train, ids, a), encode(valid, ids, a)
    opt = torch.optim.Adam(model.parameters(), lr=a.lr, betas=(0.9, 0.999), eps=1e-8)
    n = len(train_data[0])
    order = bucket_order(train, a)
    steps, start, cpu_start = 0, time.perf_counter(), time.process_time()
    while True:
        for group in opt.param_groups:
            group["lr"] = a.lr * min(1.0, (steps + 1) / a.warmup) if a.warmup else a.lr
        pick = draw_batch(n, order, a)
        src, tgt, lab = trim(*(t[pick] for t in train_data))
        logits = model(src, tgt)
        loss = F.cross_entropy(logits.flatten(0, 1), lab.flatten(), ignore_index=-1,
                               reduction="sum") / (a.batch * a.seq)
        if not math.isfinite(loss.item()):
            sys.exit(f"seq2seq_torch: step {steps + 1}: the loss is not finite")
        opt.zero_grad(set_to_none=False)
        loss.backward()
        opt.step()
        steps += 1
        train_s = time.perf_counter() - start
        if train_s >= a.time_limit or steps == a.max_steps:
            break
    train_cpu_s = time.process_time() - cpu_start
    model.eval()
    if a.kept:
        kept = kept_pairs(valid, a)
        for side, suffix in ((0, "sources"), (1, "targets")):
            with open(f"{a.kept}.{suffix}", "w", encoding="utf-8") as f:
                f.writelines(pair[side] + "\n" for pair in kept)
    vloss = valid_loss(model, valid_data, a.batch)
    decode_start = time.perf_counter()
    hyps = decode(model, valid_data[0], ids[BOS], ids[EOS], a.seq, a.batch)
    decode_s = time.perf_counter() - decode_start
    if a.hypotheses:
        with open(a.hypotheses, "w", encoding="utf-8") as f:
            for row in hyps:
                f.write("".join(chars[i] for i in row) + "\n")
    print(json.dumps({"steps": steps, "pairs_per_s": steps * a.batch / train_s,
                      "train_s": train_s, "train_cpu_s": train_cpu_s, "valid_loss": vloss,
                      "decode_s": decode_s,
                      "params": params, "threads": a.threads, "torch": torch.__version__}))


if __name__ == "__main__":
    sys.exit(main())
