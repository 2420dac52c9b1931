#!/usr/bin/python3
"""Writes darknet .weights with random values for a cfg, for parity tests against Debian's darknet.

usage: make_darknet_weights.py CFG NPY_DIR OUT [--seed S] [--version MAJOR.MINOR.REVISION]
                              [--variances LOW,HIGH] [--copy]

NPY_DIR is `cdl export npy CFG NPY_DIR`: the tensors' names and shapes, and with --copy their
values (instead of random ones), so that OUT is what `cdl export darknet` should write. The file is
laid out here from darknet's parser.c order, independently of cdl's reader: per [convolutional]
biases, then (batch_normalize) scales, rolling_mean, rolling_variance, then weights; per
[connected] biases, weights, then the batch-norm values; per [batchnorm] scales, rolling_mean,
rolling_variance. The header's `seen` is a uint64 when major*10+minor >= 2, else an int32.
Values: weights N(0, 2/fan_in), biases N(0, 0.1), scales U(0.5, 1.5), means N(0, 0.2) and
variances log-uniform in [LOW, HIGH] (default [0.001, 2], so that darknet's sqrt(var) + 1e-6 and
sqrt(var + 1e-5) differ visibly at the small ones; deep nets need a higher LOW to keep their
outputs from saturating).
"""
import argparse
import os
import re
import struct

import numpy as np

ORDER = {
    "convolutional": ["biases", "scales", "rolling_mean", "rolling_variance", "weights"],
    "connected": ["biases", "weights", "scales", "rolling_mean", "rolling_variance"],
    "batchnorm": ["scales", "rolling_mean", "rolling_variance"],
}
ALIASES = {"conv": "convolutional", "conn": "connected", "fc": "connected"}


def layer_types(cfg_path):
    """The section names after [net], in order, as darknet families."""
    names = []
    for line in open(cfg_path):
        m = re.match(r"\s*\[([^\]]+)\]", line)
        if m:
            names.append(ALIASES.get(m.group(1).strip(), m.group(1).strip()))
    return names[1:]


def random_tensor(rng, name, shape, variances):
    if name == "weights":
        fan_in = int(np.prod(shape[1:]))
        return rng.normal(0, np.sqrt(2.0 / fan_in), shape)
    if name == "biases":
        return rng.normal(0, 0.1, shape)
    if name == "scales":
        return rng.uniform(0.5, 1.5, shape)
    if name == "rolling_mean":
        return rng.normal(0, 0.2, shape)
    return np.exp(rng.uniform(np.log(variances[0]), np.log(variances[1]), shape))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("cfg")
    ap.add_argument("npy_dir")
    ap.add_argument("out")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--version", default="0.2.0")
    ap.add_argument("--variances", default="0.001,2")
    ap.add_argument("--copy", action="store_true", help="write NPY_DIR's values")
    args = ap.parse_args()
    major, minor, revision = (int(v) for v in args.version.split("."))
    rng = np.random.default_rng(args.seed)
    variances = [float(v) for v in args.variances.split(",")]
    with open(args.out, "wb") as f:
        f.write(struct.pack("<3i", major, minor, revision))
        wide = major * 10 + minor >= 2 and major < 1000 and minor < 1000
        f.write(struct.pack("<Q" if wide else "<i", 0))
        for i, kind in enumerate(layer_types(args.cfg)):
            for name in ORDER.get(kind, []):
                path = os.path.join(args.npy_dir, "layer%d.%s.npy" % (i, name))
                if os.path.exists(path):
                    values = np.load(path)
                    if not args.copy:
                        values = random_tensor(rng, name, values.shape, variances)
                    f.write(values.astype("<f4").tobytes())


if __name__ == "__main__":
    main()
