"""The loop Newton's small dense solver: `_lu_solve_into_py` (and its compiled twin) solves as numpy's LAPACK solve does,
with row pivoting, and report a singular matrix."""
from __future__ import annotations

import numpy as np
from biobullet.constraints import newton_kernel
from biobullet.core import jit


def test_lu_solve_in_place_matches_lapack():
    rng = np.random.default_rng(7)
    kernels = [newton_kernel._lu_solve_into_py, jit.compiled(newton_kernel._lu_solve_into_py, inline=True)]
    for n in (1, 2, 3, 5):
        a = rng.normal(size=(n, n))
        if n > 1:
            a[0, 0] = 0.0   # the first pivot must come from another row
        b = rng.normal(size=(n, 3))
        expected = np.linalg.solve(a, b)
        for kernel in kernels:
            work, x = a.copy(), b.copy()
            assert kernel(work, x)
            np.testing.assert_allclose(x, expected, rtol=1e-12, atol=1e-12)
    singular = np.array([[1.0, 2.0], [2.0, 4.0]])
    for kernel in kernels:
        assert not kernel(singular.copy(), np.ones((2, 1)))
