"""Compares `cdl predict` of an imported model with onnxruntime on the original ONNX file.

Usage (the pyenv python3, which has onnxruntime):
    python3 scripts/ref/onnx_import_check.py MODEL.onnx INPUT PREDICT.json [RTOL]

INPUT is a PNG or a .npy file. The PNG (the model's input size, RGB) is read as float/255 NCHW,
as `cdl predict --no-crop` reads it for a cfg without mean/std; the .npy array is the input
itself ([C, H, W] gets a batch axis of 1, [N, C, H, W] is run as it is), what `cdl predict`
reads it as. PREDICT.json is `cdl predict NET.cdl INPUT --top ALL --json [--no-crop]`: one
entry per image or .npy row, whose values are the "probability" or "logit" of each class.
For every row, the largest absolute difference over the outputs, divided by the largest
absolute ONNX output, must be at most RTOL (default 1e-5: float32 rounding of two evaluation
orders through tens of layers). Prints "max abs diff D, relative R over N outputs" (the
largest over the rows); exits 1 on any failure.
"""

import json
import sys

import numpy as np
import onnxruntime
from PIL import Image


def model_input(path):
    if path.endswith(".npy"):
        x = np.load(path).astype(np.float32)
        return x[None] if x.ndim == 3 else x
    pixels = np.asarray(Image.open(path).convert("RGB"), dtype=np.float32) / 255.0
    return pixels.transpose(2, 0, 1)[None]


def main():
    if len(sys.argv) not in (4, 5):
        sys.exit(__doc__)
    path, input_path, predict_path = sys.argv[1:4]
    rtol = float(sys.argv[4]) if len(sys.argv) == 5 else 1e-5
    x = model_input(input_path)
    session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    out = session.run(None, {session.get_inputs()[0].name: x})[0].reshape(x.shape[0], -1)
    with open(predict_path) as f:
        rows = json.load(f)
    if len(rows) != out.shape[0]:
        sys.exit(f"predict gives {len(rows)} results, the ONNX output has {out.shape[0]} rows")
    diff = rel = 0.0
    for row, ref in zip(rows, out):
        got = np.full(ref.shape[0], np.nan)
        for entry in row["top"]:
            got[entry["index"]] = entry["probability" if "probability" in entry else "logit"]
        if len(row["top"]) != ref.shape[0] or np.isnan(got).any():
            sys.exit(f"predict lists {len(row['top'])} outputs, the ONNX output has {ref.shape[0]}")
        d = float(np.max(np.abs(ref.astype(np.float64) - got)))
        diff, rel = max(diff, d), max(rel, d / max(float(np.max(np.abs(ref))), 1e-30))
    print(f"max abs diff {diff:.3g}, relative {rel:.3g} over {out.size} outputs")
    if not rel <= rtol:
        sys.exit(f"relative difference {rel:.3g} exceeds {rtol}")


if __name__ == "__main__":
    main()
