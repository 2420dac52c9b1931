"""PyTorch reference fixture for cdl's [attention] layer (nanoGPT's CausalSelfAttention).

Usage: /usr/bin/python3 scripts/ref/make_attention.py
(Debian's python3-torch; writes tests/ref/attention.cfg and tests/ref/attention.ref relative to
the repository root, found from this script's path. Fixed seeds, one thread: running it twice
gives identical bytes. The .ref format is described in ref_format.py.)

One [attention] layer, batch 2, T 5, C 8, 2 heads, in a sequence net whose input is
[batch][T][C] features. Computed in float64 from float32-representable inputs and parameters:

    qkv = x W^T + b                      W [3C][C]: query rows, then key rows, then value rows
    per head: P = softmax(Q K^T / sqrt(D)) with the causal mask, Y = P V
    out = concat(Y) Wo^T + bo            Wo [C][C]
    loss = sum(out * r) for a fixed r stored in the fixture

The explicit computation is checked against torch.nn.MultiheadAttention with the same weights.
Stored: input, r, layer0.{weights,biases,out_weights,out_biases}, out, grad.input,
grad.layer0.*; and the same outputs and gradients of the bidirectional layer (causal=0) under
the prefix "bidirectional.".
"""

import math

import torch
import torch.nn.functional as F

from ref_format import f32, seed_torch, write_fixture

BATCH, SEQ, CHANNELS, HEADS = 2, 5, 8, 2

CFG = f"""[net]
batch={BATCH}
seq={SEQ}
inputs={CHANNELS}

[attention]
heads={HEADS}
causal=1
"""

DT = torch.float64


def attention(x, p, causal):
    """x [B][T][C] -> out [B][T][C], as nanoGPT's CausalSelfAttention.forward."""
    b, t, c = x.shape
    d = c // HEADS
    qkv = F.linear(x, p["layer0.weights"], p["layer0.biases"])
    q, k, v = (z.view(b, t, HEADS, d).transpose(1, 2) for z in qkv.split(c, dim=2))
    scores = q @ k.transpose(-2, -1) / math.sqrt(d)
    if causal:
        mask = torch.tril(torch.ones(t, t, dtype=torch.bool))
        scores = scores.masked_fill(~mask, float("-inf"))
    y = (F.softmax(scores, dim=-1) @ v).transpose(1, 2).contiguous().view(b, t, c)
    return F.linear(y, p["layer0.out_weights"], p["layer0.out_biases"])


def torch_module_output(x, p, causal):
    """The same layer through torch.nn.MultiheadAttention (an independent implementation)."""
    mha = torch.nn.MultiheadAttention(CHANNELS, HEADS, batch_first=True, dtype=DT)
    with torch.no_grad():
        mha.in_proj_weight.copy_(p["layer0.weights"])
        mha.in_proj_bias.copy_(p["layer0.biases"])
        mha.out_proj.weight.copy_(p["layer0.out_weights"])
        mha.out_proj.bias.copy_(p["layer0.out_biases"])
    t = x.shape[1]
    mask = torch.triu(torch.ones(t, t, dtype=torch.bool), 1) if causal else None
    return mha(x, x, x, attn_mask=mask, need_weights=False)[0]


def run(x, r, params, causal, prefix):
    """Forward and backward of loss = sum(out * r); returns the (name, tensor) pairs to store."""
    x = x.detach().clone().requires_grad_(True)
    p = {n: torch.nn.Parameter(t.detach().clone()) for n, t in params.items()}
    out = attention(x, p, causal)
    with torch.no_grad():
        assert torch.allclose(out, torch_module_output(x, p, causal), rtol=1e-12, atol=1e-12)
    (out * r).sum().backward()
    tensors = [(prefix + "out", out), (prefix + "grad.input", x.grad)]
    tensors += [(prefix + "grad." + n, p[n].grad) for n in params]
    return tensors


def main():
    seed_torch(0)

    bound = 1.0 / math.sqrt(CHANNELS)  # nn.Linear's default initialisation

    def uniform(*shape):
        return f32((torch.rand(*shape, dtype=DT) * 2 - 1) * bound)

    params = {
        "layer0.weights": uniform(3 * CHANNELS, CHANNELS),
        "layer0.biases": uniform(3 * CHANNELS),
        "layer0.out_weights": uniform(CHANNELS, CHANNELS),
        "layer0.out_biases": uniform(CHANNELS),
    }
    x = f32(torch.randn(BATCH, SEQ, CHANNELS, dtype=DT))
    r = f32(torch.randn(BATCH, SEQ, CHANNELS, dtype=DT))

    tensors = [("input", x), ("r", r)] + list(params.items())
    tensors += run(x, r, params, True, "")
    tensors += run(x, r, params, False, "bidirectional.")

    write_fixture("attention", CFG, tensors)


if __name__ == "__main__":
    main()
