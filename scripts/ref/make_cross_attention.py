"""PyTorch reference fixture for cdl's cross-attention ([attention] source=).

Usage: /usr/bin/python3 scripts/ref/make_cross_attention.py
(Debian's python3-torch; writes tests/ref/cross_attention.cfg and tests/ref/cross_attention.ref
relative to the repository root, found from this script's path. Fixed seeds, one thread: running
it twice gives identical bytes. The .ref format is described in ref_format.py.)

A sequence net, batch 2, 6 rows of 16 features, in float64 from float32-representable inputs and
parameters:

    layer 0 [linear] output=16      h = x W0^T + b0                        [B][6][16]
    layer 1 [maxpool] size=1 stride=2   memory = h[:, ::2, ::2]            [B][3][8]
    layer 2 [route] layers=0        h
    layer 3 [linear] output=8       query = h W3^T + b3                    [B][6][8]
    layer 4 [attention] source=1    out = nn.MultiheadAttention(8, 2, batch_first=True)
                                          (query, memory, memory)          [B][6][8]
    loss = sum(out * r) for a fixed r stored in the fixture

Layer 4's weights, biases, out_weights, out_biases are the module's in_proj_weight (query rows,
then key rows, then value rows), in_proj_bias, out_proj.weight and out_proj.bias. Stored: input,
r, layer{0,3,4}.*, out, grad.input, grad.layer{0,3,4}.*.
"""

import math

import torch
import torch.nn.functional as F

from ref_format import f32, seed_torch, write_fixture

BATCH, SEQ, INPUTS, CHANNELS, HEADS = 2, 6, 16, 8, 2

CFG = f"""[net]
batch={BATCH}
seq={SEQ}
inputs={INPUTS}

[linear]
output={INPUTS}

[maxpool]
size=1
stride=2

[route]
layers=0

[linear]
output={CHANNELS}

[attention]
heads={HEADS}
source=1
"""

DT = torch.float64


def main():
    seed_torch(0)

    def uniform(fan_in, *shape):
        bound = 1.0 / math.sqrt(fan_in)  # nn.Linear's default initialisation
        return f32((torch.rand(*shape, dtype=DT) * 2 - 1) * bound)

    params = {
        "layer0.weights": uniform(INPUTS, INPUTS, INPUTS),
        "layer0.biases": uniform(INPUTS, INPUTS),
        "layer3.weights": uniform(INPUTS, CHANNELS, INPUTS),
        "layer3.biases": uniform(INPUTS, CHANNELS),
        "layer4.weights": uniform(CHANNELS, 3 * CHANNELS, CHANNELS),
        "layer4.biases": uniform(CHANNELS, 3 * CHANNELS),
        "layer4.out_weights": uniform(CHANNELS, CHANNELS, CHANNELS),
        "layer4.out_biases": uniform(CHANNELS, CHANNELS),
    }
    x = f32(torch.randn(BATCH, SEQ, INPUTS, dtype=DT))
    r = f32(torch.randn(BATCH, SEQ, CHANNELS, dtype=DT))

    xg = x.clone().requires_grad_(True)
    p = {n: torch.nn.Parameter(t.clone()) for n, t in params.items()}
    mha = torch.nn.MultiheadAttention(CHANNELS, HEADS, batch_first=True, dtype=DT)
    mha.in_proj_weight = p["layer4.weights"]
    mha.in_proj_bias = p["layer4.biases"]
    mha.out_proj.weight = p["layer4.out_weights"]
    mha.out_proj.bias = p["layer4.out_biases"]

    h = F.linear(xg, p["layer0.weights"], p["layer0.biases"])
    memory = h[:, ::2, ::2]
    query = F.linear(h, p["layer3.weights"], p["layer3.biases"])
    out = mha(query, memory, memory, need_weights=False)[0]
    (out * r).sum().backward()

    tensors = [("input", x), ("r", r)] + list(params.items())
    tensors += [("out", out), ("grad.input", xg.grad)]
    tensors += [("grad." + n, t.grad) for n, t in p.items()]
    write_fixture("cross_attention", CFG, tensors)


if __name__ == "__main__":
    main()
