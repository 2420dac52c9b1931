"""Writer of the .ref fixture format read by tests/unit/ref_fixture.c, shared by the fixture generators.

Format: the line "CDLREF 1", then per tensor a line "NAME NDIM D0 D1 ..." followed by its
float32 little-endian values in C order.
"""
import numpy as np


def write_ref(path, tensors):
    """Writes (name, torch tensor) pairs to path; names are unique, under 64 chars, no spaces."""
    names = set()
    with open(path, "wb") as f:
        f.write(b"CDLREF 1\n")
        for name, t in tensors:
            assert name not in names and len(name) < 64 and " " not in name, name
            names.add(name)
            a = np.ascontiguousarray(t.detach().cpu().numpy().astype("<f4"))
            assert 1 <= a.ndim <= 8
            assert np.all(np.isfinite(a)), name
            f.write(("%s %d %s\n" % (name, a.ndim, " ".join(str(d) for d in a.shape))).encode())
            f.write(a.tobytes(order="C"))
