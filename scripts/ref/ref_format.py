"""Shared by the fixture generators: the writer of the .ref format read by tests/unit/ref_fixture.c,
the float32 rounding of the values the C side starts from, seeding, and the fixture paths.

Format: the line "CDLREF 1", then per tensor a line "NAME NDIM D0 D1 ..." followed by its
float32 little-endian values in C order. A fixture NAME is tests/ref/NAME.cfg (the net) and
tests/ref/NAME.ref (its tensors), relative to the repository that holds this script.

torch is imported only where it is used, so that a script run by a Python without it
(make_detection_map.py, by the Python that has pycocotools) can write numpy arrays.
"""
import os

import numpy as np


def f32(x):
    """Rounds to float32-representable values (the C side starts from these), kept in float64:
    a tensor stays a float64 tensor, a Python float a float."""
    import torch
    if isinstance(x, float):
        return float(torch.tensor(x, dtype=torch.float32))
    return x.to(torch.float32).to(torch.float64)


def seed_torch(seed):
    """One CPU thread (reductions in a fixed order) and a fixed seed: fixtures regenerate byte-identical."""
    import torch
    torch.set_num_threads(1)
    torch.manual_seed(seed)


def fixture_dir():
    """tests/ref of this repository, created if missing."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    outdir = os.path.join(root, "tests", "ref")
    os.makedirs(outdir, exist_ok=True)
    return outdir


def write_cfg(name, cfg_text):
    """Writes tests/ref/NAME.cfg with LF line ends on every platform."""
    with open(os.path.join(fixture_dir(), name + ".cfg"), "w", newline="\n") as f:
        f.write(cfg_text)


def write_ref(path, tensors, finite=True):
    """Writes (name, torch tensor or numpy array) pairs to path; names are unique, under 64 chars,
    no spaces.
    finite=False lets infinities and NaNs through (fixtures of rounding edge cases)."""
    names = set()
    with open(path, "wb") as f:
        f.write(b"CDLREF 1\n")
        for name, t in tensors:
            assert name not in names and len(name) < 64 and " " not in name, name
            names.add(name)
            a = t if isinstance(t, np.ndarray) else t.detach().cpu().numpy()
            a = np.ascontiguousarray(a.astype("<f4"))
            assert 1 <= a.ndim <= 8
            assert not finite or np.all(np.isfinite(a)), name
            f.write(("%s %d %s\n" % (name, a.ndim, " ".join(str(d) for d in a.shape))).encode())
            f.write(a.tobytes(order="C"))


def write_fixture(name, cfg_text, tensors):
    """Writes tests/ref/NAME.cfg and tests/ref/NAME.ref."""
    write_cfg(name, cfg_text)
    write_ref(os.path.join(fixture_dir(), name + ".ref"), tensors)
