"""Writes tests/ref/rounding.ref: torch's float32 -> float16 rounding of edge cases and random
values, the reference of precision=fp16's operand rounding (backend/cpu/round.h's fp16_round and
cuda/kernels/operand.cu), and through it of tf32_round (tests/unit/test_rounding.c).

  fp16.in, fp16.out [N]   torch.tensor(x).half().float(): ties to even among the normals and
                          the subnormals, the overflow threshold, infinities and NaNs

Run with Debian's torch: /usr/bin/python3 scripts/ref/make_rounding.py
"""

import struct

import torch

from ref_format import fixture_dir, seed_torch, write_ref


def from_bits(bits):
    return struct.unpack("<f", struct.pack("<I", bits))[0]


EDGE_BITS = [
    0x00000000, 0x80000000,  # zeros
    0x3F800000, 0x3F801000, 0x3F803000,  # 1; 1 + half a half-ulp: ties to even (down, up)
    0x3F800FFF, 0x3F801001,  # just below and above a tie
    0xBF801000, 0xBF803000,  # negative ties
    0x38800000,  # 2^-14, the smallest normal half
    0x387FFFFF, 0x387FF000, 0x33800000, 0x33000000, 0x33000001, 0x33C00000,  # subnormal halves
    0x00000001, 0x007FFFFF, 0x80000001,  # float32 subnormals: to zero
    0x477FE000, 0x477FEFFF, 0x477FF000, 0x47800000,  # 65504 stays; 65520 is a tie to infinity
    0xC77FF000, 0x7F7FFFFF, 0xFF7FFFFF,
    0x7F800000, 0xFF800000,  # infinities
    0x7FC00000, 0xFFC00000, 0x7F800001, 0x7FFFFFFF,  # NaNs (quiet, negative, signalling)
]


def main():
    seed_torch(12)
    edges = torch.tensor([from_bits(b) for b in EDGE_BITS], dtype=torch.float32)
    rand = torch.cat([torch.randn(64), torch.randn(32) * 1e-3, torch.randn(32) * 1e-6,
                      torch.randn(32) * 1e4])
    r_in = torch.cat([edges, rand.to(torch.float32)])
    write_ref(fixture_dir() + "/rounding.ref",
              [("fp16.in", r_in), ("fp16.out", r_in.half().float())], finite=False)


if __name__ == "__main__":
    main()
