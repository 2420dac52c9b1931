#!/usr/bin/env python3
"""One prediction as a process would make it with ONNX Runtime: import, session, decode, run, print.

The peer of `cdl predict MODEL IMAGE` in scripts/bench-startup.sh: reads the PNG with PIL, scales
it to the model's input (C, H, W) in [0, 1] as cdl's predict does for a net without mean/std,
runs one forward on the CPU provider with the given intra-op threads and prints the top class
and its score. Usage: bench_startup_ort.py MODEL.onnx IMAGE.png [--threads N]
"""
import argparse
import sys

import numpy as np
import onnxruntime as ort
from PIL import Image


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("model")
    p.add_argument("image")
    p.add_argument("--threads", type=int, default=1)
    a = p.parse_args()
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = a.threads
    opts.inter_op_num_threads = 1
    sess = ort.InferenceSession(a.model, opts, providers=["CPUExecutionProvider"])
    inp = sess.get_inputs()[0]
    channels, height, width = inp.shape[1:]
    img = Image.open(a.image).convert("L" if channels == 1 else "RGB")
    img = img.resize((width, height), Image.BILINEAR)
    x = np.asarray(img, dtype=np.float32).reshape(height, width, channels) / 255.0
    x = x.transpose(2, 0, 1)[None]
    out = sess.run(None, {inp.name: np.ascontiguousarray(x)})[0].reshape(-1)
    best = int(out.argmax())
    print(f"{best} {out[best]:.6f}")


if __name__ == "__main__":
    sys.exit(main())
