"""Checks the ONNX export of a sequence-to-sequence model against `cdl predict --sources --json`.

Usage:
    python3 scripts/ref/onnx_seq2seq_check.py PREFIX TARGETS.json [BOS EOS]

1. onnx.checker.check_model(full_check=True) on PREFIX.encoder.onnx and PREFIX.decoder.onnx.
2. TARGETS.json is `cdl predict MODEL --sources FILE --json`: each source's token ids and cdl's
   greedy target (ids and summed log-probability). All the sources run as one batch, padded with
   -1 to the encoder's S rows: the encoder once, then the decoder step per target row from the
   start mark BOS (the decoder's metadata "bos_id" and "eos_id", which an export of a trained
   model holds; BOS and EOS on the command line otherwise), with empty past keys and values at
   row 0 and each step's present ones after, each row's next token the most probable (the lowest id on ties), until the end mark
   EOS or the decoder's T rows (its position table's) are full.
   Every target must be cdl's, ids exactly, log-probability (the end mark's included where it
   came) to 1e-4 absolute. Prints the largest difference as "max abs diff X"; exits 1 on any
   failure.
"""

import json
import sys

import numpy as np
import onnx
import onnxruntime

TOLERANCE = 1e-4


def load(path):
    model = onnx.load(path)
    onnx.checker.check_model(model, full_check=True)
    print(f"{path}: checker passed (onnx {onnx.__version__}, IR {model.ir_version}, "
          f"opset {model.opset_import[0].version})")
    return model, onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])


def target_rows(decoder):
    """T: the rows of the position table that the step's "position" gathers from."""
    tables = {t.name: t.dims[0] for t in decoder.graph.initializer if t.dims}
    for node in decoder.graph.node:
        if node.op_type == "Gather" and node.input[1] == "position":
            return tables[node.input[0]]
    sys.exit("the decoder step reads no position table")


def main():
    if len(sys.argv) not in (3, 5):
        sys.exit(__doc__)
    prefix, targets_path = sys.argv[1:3]
    _, encoder = load(prefix + ".encoder.onnx")
    decoder_model, decoder = load(prefix + ".decoder.onnx")
    metadata = {p.key: p.value for p in decoder_model.metadata_props}
    if len(sys.argv) == 5:
        bos, eos = (int(v) for v in sys.argv[3:5])
    elif "bos_id" in metadata and "eos_id" in metadata:
        bos, eos = int(metadata["bos_id"]), int(metadata["eos_id"])
    else:
        sys.exit("the decoder names no bos_id and eos_id: give BOS and EOS")
    with open(targets_path) as f:
        rows = json.load(f)
    rows = rows if isinstance(rows, list) else [rows]
    n, s = len(rows), encoder.get_inputs()[0].shape[1]
    source = np.full((n, s), -1, dtype=np.int64)
    for k, r in enumerate(rows):
        source[k, :len(r["source_ids"])] = r["source_ids"]
    memory = encoder.run(None, {"source": source})[0]

    past = {}
    for i in decoder.get_inputs():
        if i.name.startswith("past."):
            past[i.name] = np.zeros((n, i.shape[1], 0, i.shape[3]), dtype=np.float32)
    outputs = [o.name for o in decoder.get_outputs()]
    token = np.full((n, 1), bos, dtype=np.int64)
    ids, log_probs, done = [[] for _ in rows], np.zeros(n), np.zeros(n, dtype=bool)
    for t in range(target_rows(decoder_model)):
        feed = {"token": token, "position": np.array([t], dtype=np.int64), "memory": memory,
                "source": source, **past}
        got = dict(zip(outputs, decoder.run(None, feed)))
        next_ids = np.argmax(got["log_probs"], axis=1)
        for k in np.flatnonzero(~done):
            log_probs[k] += got["log_probs"][k, next_ids[k]]
            done[k] = next_ids[k] == eos
            if not done[k]:
                ids[k].append(int(next_ids[k]))
        if done.all():
            break
        token = next_ids.reshape(n, 1).astype(np.int64)
        past = {name: got["present." + name[len("past."):]] for name in past}

    worst = 0.0
    for k, r in enumerate(rows):
        if ids[k] != r["ids"]:
            sys.exit(f"source {r['source']!r}: ONNX decodes ids {ids[k]}, cdl {r['ids']}")
        worst = max(worst, abs(log_probs[k] - r["log_prob"]))
    print(f"max abs diff {worst:.3g} over the log-probabilities of {n} targets")
    if not worst <= TOLERANCE:
        sys.exit(f"max abs diff {worst:.3g} exceeds {TOLERANCE}")


if __name__ == "__main__":
    main()
