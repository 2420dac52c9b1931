"""Checks the ONNX export of a text model against `cdl predict --prompt ... --probs --json`.

Usage:
    python3 scripts/ref/onnx_text_check.py MODEL.onnx PROBS.json

1. onnx.checker.check_model(full_check=True): the graph is valid and its shapes infer.
2. PROBS.json is `cdl predict MODEL --prompt TEXT --probs --json`: the prompt's token ids and
   cdl's distribution of the next token. The ids (at most the graph's T) are padded with 0
   to T and run in onnxruntime as int64 [N][T] (or one-hot float [N][T][vocab] rows, zero
   past the prompt, for a net that reads one-hot tokens; a batch of two when the batch axis is
   dynamic: both rows must agree); the graph's output [N][T][vocab] at the prompt's last position must
   equal cdl's distribution to 1e-5 absolute (a causal net's position t does not read the
   padding after it). Prints the largest difference as "max abs diff X"; exits 1 on any
   failure.
"""

import json
import sys

import numpy as np
import onnx
import onnxruntime

TOLERANCE = 1e-5


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    path, probs_path = sys.argv[1:]
    model = onnx.load(path)
    onnx.checker.check_model(model, full_check=True)
    print(f"{path}: checker passed (onnx {onnx.__version__}, IR {model.ir_version}, "
          f"opset {model.opset_import[0].version})")

    with open(probs_path) as f:
        cdl = json.load(f)
    ids, expected = cdl["ids"], np.asarray(cdl["probs"], dtype=np.float64)
    session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    declared = session.get_inputs()[0]
    one_hot = declared.type == "tensor(float)" and len(declared.shape) == 3
    if not one_hot and (declared.type != "tensor(int64)" or len(declared.shape) != 2):
        sys.exit(f"the graph input is {declared.type} {declared.shape}, not int64 [N][T] ids "
                 "or one-hot float [N][T][vocab]")
    steps = declared.shape[1]
    if not 0 < len(ids) <= steps:
        sys.exit(f"the prompt has {len(ids)} tokens; the graph takes 1 to {steps}")
    if one_hot:  # rows past the prompt stay zero, as in cdl
        row = np.zeros((1, steps, declared.shape[2]), dtype=np.float32)
        row[0, np.arange(len(ids)), ids] = 1
    else:
        row = np.zeros((1, steps), dtype=np.int64)
        row[0, :len(ids)] = ids
    dynamic = not isinstance(declared.shape[0], int)
    batch = np.concatenate([row, row]) if dynamic else row
    out = session.run(None, {declared.name: batch})[0]
    if out.shape[1:] != (steps, len(expected)):
        sys.exit(f"the ONNX output is {list(out.shape)}, not [N][{steps}][{len(expected)}]")
    if dynamic and not np.array_equal(out[0], out[1]):
        sys.exit("the two rows of a batch of two differ")
    got = out[0, len(ids) - 1].astype(np.float64)
    diff = float(np.max(np.abs(got - expected)))
    print(f"max abs diff {diff:.3g} over {len(expected)} tokens after {len(ids)} prompt tokens")
    if not diff <= TOLERANCE:
        sys.exit(f"max abs diff {diff:.3g} exceeds {TOLERANCE}")


if __name__ == "__main__":
    main()
