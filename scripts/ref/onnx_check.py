"""Checks an ONNX file written by `cdl export onnx`, and compares it with `cdl predict`.

Usage:
    python3 scripts/ref/onnx_check.py MODEL.onnx                    # checker only
    python3 scripts/ref/onnx_check.py MODEL.onnx IMAGE.png PREDICT.json [TOLERANCE]

1. onnx.checker.check_model(full_check=True): the graph is valid and its shapes infer.
   Works with any onnx (Debian's python3-onnx 1.12 under /usr/bin/python3, or PyPI's).
2. With an image (needs onnxruntime, numpy, PIL): the PNG, which must already have the
   net's width, height and channels, is read as float/255 NCHW and run in onnxruntime
   (as a batch of two when the batch axis is dynamic: both rows must agree).
3. PREDICT.json is `cdl predict MODEL IMAGE --top ALL --json` of the same image: its
   values ("probability", or "logit" for a net without a softmax), placed by class index, must equal the ONNX output to 1e-4 (the float32
   rounding of two different evaluation orders, with margin; TOLERANCE where given). Prints the largest
   difference as "max abs diff X"; exits 1 on any failure.
"""

import json
import sys

import onnx

TOLERANCE = 1e-4


def compare(path, image_path, predict_path, tolerance):
    import numpy as np
    import onnxruntime
    from PIL import Image

    pixels = np.asarray(Image.open(image_path), dtype=np.float32) / 255.0
    x = pixels[None, None] if pixels.ndim == 2 else pixels.transpose(2, 0, 1)[None]
    session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    declared = session.get_inputs()[0]
    if list(x.shape[1:]) != list(declared.shape[1:]):
        sys.exit(f"image {x.shape[1:]} does not match the model input {declared.shape[1:]}")
    dynamic = not isinstance(declared.shape[0], int)
    batch = np.concatenate([x, x]) if dynamic else x
    out = session.run(None, {declared.name: batch})[0]
    out = out.reshape(out.shape[0], -1)
    if dynamic and not np.array_equal(out[0], out[1]):
        sys.exit("the two rows of a batch of two differ")

    with open(predict_path) as f:
        top = json.load(f)[0]["top"]
    expected = np.full(out.shape[1], np.nan, dtype=np.float64)
    for entry in top:
        expected[entry["index"]] = entry["probability" if "probability" in entry else "logit"]
    if len(top) != out.shape[1] or np.isnan(expected).any():
        sys.exit(f"predict lists {len(top)} classes, the ONNX output has {out.shape[1]}")
    diff = float(np.max(np.abs(out[0].astype(np.float64) - expected)))
    print(f"max abs diff {diff:.3g} over {out.shape[1]} outputs")
    if not diff <= tolerance:
        sys.exit(f"max abs diff {diff:.3g} exceeds {tolerance}")


def main():
    if len(sys.argv) not in (2, 4, 5):
        sys.exit(__doc__)
    path = sys.argv[1]
    model = onnx.load(path)
    onnx.checker.check_model(model, full_check=True)
    print(f"{path}: checker passed (onnx {onnx.__version__}, IR {model.ir_version}, "
          f"opset {model.opset_import[0].version})")
    if len(sys.argv) >= 4:
        tolerance = float(sys.argv[4]) if len(sys.argv) == 5 else TOLERANCE
        compare(path, sys.argv[2], sys.argv[3], tolerance)


if __name__ == "__main__":
    main()
