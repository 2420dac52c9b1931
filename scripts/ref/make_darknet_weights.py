#!/usr/bin/python3
"""Writes darknet .weights with random values for a cfg, for parity tests against Debian's darknet.

usage: make_darknet_weights.py CFG NPY_DIR OUT [--seed S] [--version MAJOR.MINOR.REVISION]
                              [--variances LOW,HIGH] [--copy] [--score-bias B]

NPY_DIR is `cdl export npy CFG NPY_DIR`: the tensors' names and shapes, and with --copy their
values (instead of random ones), so that OUT is what `cdl export darknet` should write. The file is
laid out here from darknet's parser.c order, independently of cdl's reader: per [convolutional]
biases, then (batch_normalize) scales, rolling_mean, rolling_variance, then weights; per
[connected] biases, weights, then the batch-norm values; per [batchnorm] scales, rolling_mean,
rolling_variance. The header's `seen` is a uint64 when major*10+minor >= 2, else an int32.
Values: weights N(0, 2/fan_in), biases N(0, 0.1), scales U(0.5, 1.5), means N(0, 0.2) and
variances log-uniform in [LOW, HIGH] (default [0.001, 2], so that darknet's sqrt(var) + 1e-6 and
sqrt(var + 1e-5) differ visibly at the small ones; deep nets need a higher LOW to keep their
outputs from saturating). --score-bias B adds B to the biases of the objectness and class
channels of the convolution before each [yolo] or [region] (each anchor's channels after its 4
box ones), so that a detector with random weights finds few boxes instead of every one.
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


def layer_sections(cfg_path):
    """The sections after [net], in order, as (darknet family, {key: value})."""
    sections = []
    for line in open(cfg_path):
        line = line.split("#")[0].split(";")[0].strip()
        m = re.match(r"\[([^\]]+)\]", line)
        if m:
            sections.append((ALIASES.get(m.group(1).strip(), m.group(1).strip()), {}))
        elif "=" in line and sections:
            key, value = line.split("=", 1)
            sections[-1][1][key.strip()] = value.strip()
    return sections[1:]


def anchors_of(kind, keys):
    """How many anchors a [yolo] (its mask, else num) or [region] (num) layer predicts."""
    if kind == "yolo" and "mask" in keys:
        return len(keys["mask"].split(","))
    return int(keys.get("num", 1))


def add_score_bias(biases, anchors, bias):
    """biases [anchors * entries] with bias added to each anchor's entries after the first 4."""
    entries = biases.size // anchors
    for a in range(anchors):
        biases[a * entries + 4:(a + 1) * entries] += bias
    return biases


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
    ap.add_argument("--score-bias", type=float, default=0.0)
    args = ap.parse_args()
    major, minor, revision = (int(v) for v in args.version.split("."))
    rng = np.random.default_rng(args.seed)
    variances = [float(v) for v in args.variances.split(",")]
    with open(args.out, "wb") as f:
        f.write(struct.pack("<3i", major, minor, revision))
        wide = major * 10 + minor >= 2 and major < 1000 and minor < 1000
        f.write(struct.pack("<Q" if wide else "<i", 0))
        sections = layer_sections(args.cfg)
        for i, (kind, _) in enumerate(sections):
            head = sections[i + 1] if i + 1 < len(sections) else ("", {})
            for name in ORDER.get(kind, []):
                path = os.path.join(args.npy_dir, "layer%d.%s.npy" % (i, name))
                if os.path.exists(path):
                    values = np.load(path)
                    if not args.copy:
                        values = random_tensor(rng, name, values.shape, variances)
                    if name == "biases" and head[0] in ("yolo", "region") and args.score_bias:
                        values = add_score_bias(values, anchors_of(*head), args.score_bias)
                    f.write(values.astype("<f4").tobytes())


if __name__ == "__main__":
    main()
