"""PyTorch reference fixture for cdl's bf16 precision (precision=bf16, src/backend/cpu/bf16.h).

Usage: /usr/bin/python3 scripts/ref/make_bf16.py
(Debian's python3-torch 1.13; writes tests/ref/bf16.ref relative to the repository root, which
is found from this script's path; tests/unit/test_bf16.c holds the two one-layer nets.)

Stored:
  round.in, round.out [N]   torch.tensor(x).bfloat16().float() of edge cases given by their
                            float32 bits (zeros, ties to even and to odd, just off ties,
                            subnormals, the largest floats, infinities, NaNs) and random values
  input [2][3][6][6]        a batch of 2 images into
    [convolutional] 4 filters 3x3, stride 1, pad 1, bias, linear: conv.weights, conv.biases,
                    its output conv.out [2][4][6][6]
  conv.out is the input of
    [connected]     5 outputs, bias, linear: fc.weights, fc.biases, its output fc.out [2][5]
  the outputs under torch.autocast("cpu", torch.bfloat16): bf16 values, stored as float32

The convolution is computed as autocast computes F.conv2d where oneDNN has bf16 kernels: the
bf16 product of the weights and the unfolded input, accumulated in float32, the bias added
before the one rounding of the output: F.linear on the unfolded patches as one 2-D matrix.
On a CPU without AVX-512 (this machine's) torch 1.13's own bf16 F.conv2d, and F.linear on a 3-D
input, do not sum in float32 (their errors reach 0.6% and 30% of the exact outputs here, where
2-D F.linear stays within the output's rounding, 2^-8), so they are not the reference.
"""

import struct

import torch
import torch.nn.functional as F

from ref_format import f32, fixture_dir, seed_torch, write_ref

def from_bits(bits):
    return struct.unpack("<f", struct.pack("<I", bits))[0]


EDGE_BITS = [
    0x00000000, 0x80000000,  # zeros
    0x3F800000, 0x3F808000, 0x3F818000,  # 1; 1 + half an ulp: ties to even (down, up)
    0x3F807FFF, 0x3F808001,  # just below and above a tie
    0xBF808000, 0xBF818000,  # negative ties
    0x00000001, 0x00007FFF, 0x00008000, 0x00018000, 0x007FFFFF,  # subnormals, ties among them
    0x80008000, 0x807FFFFF,
    0x00800000, 0x7F7F7FFF, 0x7F7F8000, 0x7F7FFFFF,  # smallest normal; largest: stays, tie to inf
    0xFF7FFFFF,
    0x7F800000, 0xFF800000,  # infinities
    0x7FC00000, 0xFFC00000, 0x7F800001, 0x7FFFFFFF,  # NaNs (quiet, negative, signalling)
]


def main():
    seed_torch(11)
    edges = torch.tensor([from_bits(b) for b in EDGE_BITS], dtype=torch.float32)
    rand = torch.cat([torch.randn(64), torch.randn(32) * 1e-3, torch.randn(32) * 1e4])
    r_in = torch.cat([edges, rand.to(torch.float32)])
    r_out = r_in.bfloat16().float()

    x = f32(torch.randn(2, 3, 6, 6)).float()
    w0 = f32(torch.randn(4, 3, 3, 3) * 0.5).float()
    b0 = f32(torch.randn(4) * 0.5).float()
    w1 = f32(torch.randn(5, 4 * 6 * 6) * 0.2).float()
    b1 = f32(torch.randn(5) * 0.5).float()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        patches = F.unfold(x, 3, padding=1).transpose(1, 2).reshape(72, 27)  # float32
        out0 = F.linear(patches, w0.reshape(4, -1), b0)  # [N*36][4]
        out0 = out0.reshape(2, 36, 4).transpose(1, 2).reshape(2, 4, 6, 6)
        out1 = F.linear(out0.reshape(2, -1), w1, b1)
    assert out0.dtype == torch.bfloat16 and out1.dtype == torch.bfloat16

    write_ref(
        fixture_dir() + "/bf16.ref",
        [
            ("round.in", r_in),
            ("round.out", r_out),
            ("input", x),
            ("conv.weights", w0),
            ("conv.biases", b0),
            ("conv.out", out0.float()),
            ("fc.weights", w1),
            ("fc.biases", b1),
            ("fc.out", out1.float()),
        ],
        finite=False,
    )


if __name__ == "__main__":
    main()
