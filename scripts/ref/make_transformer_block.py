"""PyTorch reference fixture for a one-block GPT from a cdl cfg: embedding, positional
embedding, one pre-LayerNorm transformer block, final LayerNorm, tied output projection and the
per-token cross-entropy (nanoGPT's GPT with n_layer=1, bias=True, dropout=0).

Usage: /usr/bin/python3 scripts/ref/make_transformer_block.py
(Debian's python3-torch; writes tests/ref/transformer_block.cfg and
tests/ref/transformer_block.ref relative to the repository root, found from this script's path.
Fixed seeds, one thread: running it twice gives identical bytes. The .ref format is described in
ref_format.py.)

Batch 2, T 5, vocab 11, C 8, 2 heads; computed in float64 from float32-representable parameters:

    x = wte[ids] + wpe                                   layers 0, 1
    x = x + attn(ln_1(x))                                layers 2, 3, 4
    x = x + mlp(ln_2(x)), mlp = c_proj(gelu(c_fc(.)))    layers 5, 6, 7, 8
    logits = ln_f(x) wte^T                               layers 9, 10 (tie=1, no bias)
    p = softmax(logits), loss = mean over the B*T tokens of -log p[label]   layer 11

gelu is the exact (erf) form, as nn.GELU(). The LayerNorm scales and biases are drawn around 1
and 0 rather than left there, so that their gradients and a swapped use would show.
Stored: input (token ids as floats), labels, every parameter as layerI.NAME, outI for every
layer's output, loss, and grad.layerI.NAME for every parameter.
"""

import math

import torch
import torch.nn.functional as F

from ref_format import f32, seed_torch, write_fixture

BATCH, SEQ, VOCAB, CHANNELS, HEADS = 2, 5, 11, 8, 2

CFG = f"""[net]
batch={BATCH}
seq={SEQ}
vocab={VOCAB}

# 0: token embedding (wte)
[embedding]
output={CHANNELS}

# 1: positional embedding (wpe)
[positional]

# 2-4: x + attn(ln_1(x))
[layernorm]

[attention]
heads={HEADS}

[shortcut]
from=-3

# 5-8: x + mlp(ln_2(x))
[layernorm]

[linear]
output={4 * CHANNELS}
activation=gelu

[linear]
output={CHANNELS}

[shortcut]
from=-4

# 9: ln_f
[layernorm]

# 10: lm_head, tied to the token embedding
[linear]
tie=1
bias=0

# 11
[softmax]
"""

DT = torch.float64


def linear_init(outputs, inputs):
    """nn.Linear's default: U(-1/sqrt(inputs), 1/sqrt(inputs)) for weights and biases."""
    bound = 1.0 / math.sqrt(inputs)
    w = (torch.rand(outputs, inputs, dtype=DT) * 2 - 1) * bound
    b = (torch.rand(outputs, dtype=DT) * 2 - 1) * bound
    return f32(w), f32(b)


def make_params():
    p = {}
    p["layer0.weights"] = f32(torch.randn(VOCAB, CHANNELS, dtype=DT))
    p["layer1.weights"] = f32(torch.randn(SEQ, CHANNELS, dtype=DT))
    for i in (2, 5, 9):
        p[f"layer{i}.scales"] = f32(1 + 0.1 * torch.randn(CHANNELS, dtype=DT))
        p[f"layer{i}.biases"] = f32(0.1 * torch.randn(CHANNELS, dtype=DT))
    p["layer3.weights"], p["layer3.biases"] = linear_init(3 * CHANNELS, CHANNELS)
    p["layer3.out_weights"], p["layer3.out_biases"] = linear_init(CHANNELS, CHANNELS)
    p["layer6.weights"], p["layer6.biases"] = linear_init(4 * CHANNELS, CHANNELS)
    p["layer7.weights"], p["layer7.biases"] = linear_init(CHANNELS, 4 * CHANNELS)
    return p


def attention(x, p):
    """nanoGPT's CausalSelfAttention on x [B][T][C] with layer 3's tensors."""
    b, t, c = x.shape
    d = c // HEADS
    qkv = F.linear(x, p["layer3.weights"], p["layer3.biases"])
    q, k, v = (z.view(b, t, HEADS, d).transpose(1, 2) for z in qkv.split(c, dim=2))
    scores = q @ k.transpose(-2, -1) / math.sqrt(d)
    mask = torch.tril(torch.ones(t, t, dtype=torch.bool))
    scores = scores.masked_fill(~mask, float("-inf"))
    y = (F.softmax(scores, dim=-1) @ v).transpose(1, 2).contiguous().view(b, t, c)
    return F.linear(y, p["layer3.out_weights"], p["layer3.out_biases"])


def layernorm(x, p, i):
    return F.layer_norm(x, (CHANNELS,), p[f"layer{i}.scales"], p[f"layer{i}.biases"], eps=1e-5)


def forward(ids, p):
    """The outputs of layers 0..11, each [B][T][features]."""
    out = [None] * 12
    out[0] = F.embedding(ids, p["layer0.weights"])
    out[1] = out[0] + p["layer1.weights"]
    out[2] = layernorm(out[1], p, 2)
    out[3] = attention(out[2], p)
    out[4] = out[3] + out[1]
    out[5] = layernorm(out[4], p, 5)
    out[6] = F.gelu(F.linear(out[5], p["layer6.weights"], p["layer6.biases"]))
    out[7] = F.linear(out[6], p["layer7.weights"], p["layer7.biases"])
    out[8] = out[7] + out[4]
    out[9] = layernorm(out[8], p, 9)
    out[10] = F.linear(out[9], p["layer0.weights"])
    out[11] = F.softmax(out[10], dim=-1)
    return out


def main():
    seed_torch(0)

    params = make_params()
    ids = torch.randint(0, VOCAB, (BATCH, SEQ))
    labels = torch.randint(0, VOCAB, (BATCH, SEQ))

    p = {n: torch.nn.Parameter(t.detach().clone()) for n, t in params.items()}
    out = forward(ids, p)
    loss = F.cross_entropy(out[10].reshape(-1, VOCAB), labels.reshape(-1))
    loss.backward()

    tensors = [("input", ids.to(DT)), ("labels", labels.to(DT))]
    tensors += list(params.items())
    tensors += [(f"out{i}", o) for i, o in enumerate(out)]
    tensors.append(("loss", loss.reshape(1)))
    tensors += [("grad." + n, p[n].grad) for n in params]

    write_fixture("transformer_block", CFG, tensors)


if __name__ == "__main__":
    main()
