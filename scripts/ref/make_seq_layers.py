"""PyTorch reference fixture for cdl's per-token sequence layers.

Usage: /usr/bin/python3 scripts/ref/make_seq_layers.py
(Debian's python3-torch 1.13; writes tests/ref/seq_layers.cfg and tests/ref/seq_layers.ref
relative to the repository root, which is found from this script's path.)

The net of tests/ref/seq_layers.cfg on a batch of 3 sequences of 5 token ids (vocab 11, C 8):
    0 [embedding]  x = E[ids]                     E [11][8]   (nn.Embedding)
    1 [positional] x = x + P                      P [5][8]    (GPT-2's wpe)
    2 [layernorm]  F.layer_norm(x, (8,), eps=1e-5)
    3 [linear]     F.gelu(F.linear(x, W3, b3))    16 outputs, exact (erf) GELU
    4 [linear]     F.linear(x, W4, b4)            8 outputs
    5 [linear]     F.linear(x, E, b5)             tie=1: the embedding's weights (GPT-2's lm_head)
    6 [softmax]    softmax per token; loss = mean cross-entropy over the 15 tokens
then one AdamW step (lr 0.01, betas (0.9, 0.999), eps 1e-8, weight decay 0.1 on the tensors
cdl flags: embedding, positional and linear weights; none on biases and layernorm).

Computed in float64 from float32-representable inputs and parameters; stored tensors are
rounded to float32. Seeds are fixed and torch runs on one thread, so running the script twice
gives identical bytes. The .ref format is the one of tests/unit/ref_fixture.h.

Stored: input [3][5] (ids as floats), labels [3][5], the initial tensors layerI.NAME (cdl's
names), outI [3][5][features] for every layer, loss, the gradients grad.layerI.NAME, and
step1.layerI.NAME, every tensor after the AdamW step.
"""

import torch
import torch.nn.functional as F

from ref_format import f32, seed_torch, write_fixture

CFG = """[net]
batch=3
seq=5
vocab=11
optimizer=adamw
learning_rate=0.01
beta1=0.9
beta2=0.999
eps=1e-8
decay=0.1
policy=constant

# 0: 5x8
[embedding]
output=8

# 1: 5x8
[positional]

# 2: 5x8
[layernorm]
eps=1e-5

# 3: 5x16
[linear]
output=16
activation=gelu

# 4: 5x8
[linear]
output=8

# 5: 5x11, the embedding's weights transposed
[linear]
tie=1

# 6
[softmax]
"""

BATCH, SEQ, VOCAB, C, HIDDEN = 3, 5, 11, 8, 16
LR, BETAS, EPS, DECAY = 0.01, (0.9, 0.999), 1e-8, 0.1
LN_EPS = 1e-5

DT = torch.float64


def make_params():
    p = {}
    p["layer0.weights"] = torch.randn(VOCAB, C, dtype=DT)
    p["layer1.weights"] = torch.randn(SEQ, C, dtype=DT)
    p["layer2.scales"] = torch.rand(C, dtype=DT) + 0.5
    p["layer2.biases"] = torch.randn(C, dtype=DT) * 0.1
    p["layer3.weights"] = (torch.rand(HIDDEN, C, dtype=DT) * 2 - 1) / C ** 0.5
    p["layer3.biases"] = (torch.rand(HIDDEN, dtype=DT) * 2 - 1) / C ** 0.5
    p["layer4.weights"] = (torch.rand(C, HIDDEN, dtype=DT) * 2 - 1) / HIDDEN ** 0.5
    p["layer4.biases"] = (torch.rand(C, dtype=DT) * 2 - 1) / HIDDEN ** 0.5
    p["layer5.biases"] = (torch.rand(VOCAB, dtype=DT) * 2 - 1) / C ** 0.5
    return {n: f32(t) for n, t in p.items()}


def forward(ids, p):
    out = [None] * 7
    out[0] = F.embedding(ids, p["layer0.weights"])
    out[1] = out[0] + p["layer1.weights"]
    out[2] = F.layer_norm(out[1], (C,), p["layer2.scales"], p["layer2.biases"], eps=LN_EPS)
    out[3] = F.gelu(F.linear(out[2], p["layer3.weights"], p["layer3.biases"]))
    out[4] = F.linear(out[3], p["layer4.weights"], p["layer4.biases"])
    out[5] = F.linear(out[4], p["layer0.weights"], p["layer5.biases"])
    out[6] = F.softmax(out[5], dim=-1)
    return out


def compute(ids, labels, params):
    """Returns the list of (name, tensor) pairs to store, in file order."""
    p = {n: torch.nn.Parameter(t.detach().clone()) for n, t in params.items()}
    tensors = [("input", ids.to(DT)), ("labels", labels.to(DT))]
    tensors += [(n, t.detach().clone()) for n, t in p.items()]

    decayed = [t for n, t in p.items() if n.endswith(".weights")]
    others = [t for n, t in p.items() if not n.endswith(".weights")]
    opt = torch.optim.AdamW([{"params": decayed, "weight_decay": f32(DECAY)},
                             {"params": others, "weight_decay": 0.0}],
                            lr=f32(LR), betas=tuple(f32(b) for b in BETAS), eps=f32(EPS))

    out = forward(ids, p)
    loss = F.cross_entropy(out[5].reshape(-1, VOCAB), labels.reshape(-1))
    loss.backward()
    tensors += [(f"out{i}", o.detach().clone()) for i, o in enumerate(out)]
    tensors.append(("loss", loss.detach().reshape(1).clone()))
    tensors += [(f"grad.{n}", t.grad.detach().clone()) for n, t in p.items()]
    opt.step()
    tensors += [(f"step1.{n}", t.detach().clone()) for n, t in p.items()]
    return tensors


def main():
    seed_torch(0)

    ids = torch.randint(0, VOCAB, (BATCH, SEQ))
    labels = torch.randint(0, VOCAB, (BATCH, SEQ))
    tensors = compute(ids, labels, make_params())

    write_fixture("seq_layers", CFG, tensors)


if __name__ == "__main__":
    main()
