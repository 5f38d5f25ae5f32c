"""The affine coordinate map x = A q + b, ẋ = A v of linear joint functions, with its compiled twin."""
from __future__ import annotations

import numpy as np

from biobullet.core import jit


def _affine_pair_py(a, b, q, v):
    """(A q + b, A v, all entries finite)."""
    n, k = a.shape
    x = np.empty(n)
    xd = np.empty(n)
    check = 0.0
    for r in range(n):
        s = b[r]
        t = 0.0
        for c in range(k):
            s += a[r, c] * q[c]
            t += a[r, c] * v[c]
        x[r] = s
        xd[r] = t
        check += 0.0 * s + 0.0 * t  # NaN as soon as one entry is NaN or ±inf
    return x, xd, check == 0.0


affine_pair = jit.lazy(_affine_pair_py)
