"""The in-place forms of the loop kernels (the trajectory output's Newton pass calls them with buffers allocated
once): `_loop_rows_into_py` writes every row into the caller's arrays and keeps nothing between calls — from
buffers full of NaN it gives exactly what the allocating `_loop_rows_kernel_py` gives, on point loops (four-bar)
and on Andrews' squeezer — and `_lu_solve_into_py` / `_lu_solve_py` solve as numpy's LAPACK solve does, with row
pivoting, and report a singular matrix."""
from __future__ import annotations

import biobullet
import numpy as np
import pytest
from biobullet.constraints import loop_kernels, newton_kernel
from biobullet.core import jit
from biobullet.model.bundled import bundled_model


@pytest.mark.parametrize("name", ["fourbar_knee.urdf", "andrews_squeezer.urdf"])
def test_rows_into_buffers_equal_the_allocating_kernel(name):
    model = biobullet.load_model(bundled_model(name))
    resolver = next(r for r in model.coordinate_map.resolvers if type(r).__name__ == "LoopResolver")
    lean = resolver._lean
    if lean is None:
        pytest.skip("numba disabled: the loop's compiled kernels are off")
    _, meta, body, n_tangent, rows_data = lean
    ancestry, point_body, offset, basis, kinds, row_start, n_rows = rows_data
    kinematics, _ = loop_kernels._kernels()
    rows_into = loop_kernels.rows_into_kernel()
    rng = np.random.default_rng(3)
    for _ in range(5):
        theta, rate = rng.uniform(-1, 1, n_tangent), rng.uniform(-2, 2, n_tangent)
        rot, pos, sub, vel, acc = kinematics(meta, body, theta, rate, n_tangent, True)
        for with_jac, with_bias in ((True, False), (False, True), (True, True)):
            expected = loop_kernels._loop_rows_kernel_py(rot, pos, sub, vel, acc, ancestry, point_body, offset,
                                                          basis, kinds, row_start, n_rows, with_jac, with_bias)
            for kernel in (loop_kernels._loop_rows_into_py, rows_into):
                phi = np.full(n_rows, np.nan)
                jac = np.full((n_rows, n_tangent) if with_jac else (0, n_tangent), np.nan)
                bias = np.full(n_rows if with_bias else 0, np.nan)
                kernel(rot, pos, sub, vel, acc, ancestry, point_body, offset, basis, kinds, row_start, with_jac,
                       with_bias, phi, jac, bias, np.full((6, 2, 3), np.nan), np.full((2, 3, n_tangent), np.nan))
                np.testing.assert_array_equal(phi, expected[0])
                np.testing.assert_array_equal(jac, expected[1])
                np.testing.assert_array_equal(bias, expected[2])


def test_lu_solve_in_place_matches_lapack():
    rng = np.random.default_rng(7)
    kernels = [newton_kernel._lu_solve_into_py]
    if jit.ENABLED:
        kernels.append(jit.compiled(newton_kernel._lu_solve_into_py, inline=True))
    for n in (1, 2, 3, 5):
        a = rng.normal(size=(n, n))
        if n > 1:
            a[0, 0] = 0.0   # the first pivot must come from another row
        b = rng.normal(size=(n, 3))
        expected = np.linalg.solve(a, b)
        x, ok = newton_kernel._lu_solve_py(a, b)
        assert ok
        np.testing.assert_allclose(x, expected, rtol=1e-12, atol=1e-12)
        for kernel in kernels:
            work, x = a.copy(), b.copy()
            assert kernel(work, x)
            np.testing.assert_allclose(x, expected, rtol=1e-12, atol=1e-12)
    singular = np.array([[1.0, 2.0], [2.0, 4.0]])
    for kernel in kernels:
        assert not kernel(singular.copy(), np.ones((2, 1)))
