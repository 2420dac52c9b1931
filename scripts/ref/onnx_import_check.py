"""Compares `cdl predict` of an imported model with onnxruntime on the original ONNX file.

Usage (the pyenv python3, which has onnxruntime):
    python3 scripts/ref/onnx_import_check.py MODEL.onnx IMAGE.png PREDICT.json [RTOL]

The PNG (the model's input size, RGB) is read as float/255 NCHW, as `cdl predict --no-crop`
reads it for a cfg without mean/std, and run in onnxruntime. PREDICT.json is
`cdl predict NET.cdl IMAGE --top ALL --json --no-crop`. The largest absolute difference over
the outputs, divided by the largest absolute ONNX output, must be at most RTOL (default 1e-5:
float32 rounding of two evaluation orders through tens of layers). Prints
"max abs diff D, relative R over N outputs"; exits 1 on any failure.
"""

import json
import sys

import numpy as np
import onnxruntime
from PIL import Image


def main():
    if len(sys.argv) not in (4, 5):
        sys.exit(__doc__)
    path, image_path, predict_path = sys.argv[1:4]
    rtol = float(sys.argv[4]) if len(sys.argv) == 5 else 1e-5
    pixels = np.asarray(Image.open(image_path).convert("RGB"), dtype=np.float32) / 255.0
    x = pixels.transpose(2, 0, 1)[None]
    session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    out = session.run(None, {session.get_inputs()[0].name: x})[0].reshape(-1)
    with open(predict_path) as f:
        top = json.load(f)[0]["top"]
    got = np.full(out.shape[0], np.nan)
    for entry in top:
        got[entry["index"]] = entry["probability"]
    if len(top) != out.shape[0] or np.isnan(got).any():
        sys.exit(f"predict lists {len(top)} outputs, the ONNX output has {out.shape[0]}")
    diff = float(np.max(np.abs(out.astype(np.float64) - got)))
    rel = diff / max(float(np.max(np.abs(out))), 1e-30)
    print(f"max abs diff {diff:.3g}, relative {rel:.3g} over {out.shape[0]} outputs")
    if not rel <= rtol:
        sys.exit(f"relative difference {rel:.3g} exceeds {rtol}")


if __name__ == "__main__":
    main()
