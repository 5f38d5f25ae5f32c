"""The compiled constraint rows of explicit joint functions (`model.joint_jets.function_rows`, used by
`constraints.equations.ConstraintSet` and therefore by the multiplier formulation and the PyBullet bridge) against
the per-row plug-in path (each function's own value, gradient and Hessian) and against finite differences.

Rows at OFF-manifold random states (the bridge evaluates them at PyBullet's drifting state): a spline, a Fourier
driver, a linear function of a spline's output (its row must read the ACTUAL state of that joint, not f of it) and
a polynomial, on fixed and floating bases; the same with an expression driver and an expression of the spline's
output (composed, time-dependent). Runs with and without numba (the Python twin gives the same numbers).
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integrate"))

import biobullet  # noqa: E402
from biobullet.constraints.equations import ConstraintSet  # noqa: E402
from test_compiled_explicit import _chain, _expression_chain  # noqa: E402


@pytest.mark.parametrize("base", ["fixed", "floating"])
@pytest.mark.parametrize("driver", [True, False, "expression"])
def test_compiled_rows_equal_plugin_rows(tmp_path, base, driver):
    """driver "expression": j3 an expression driver of t, j4 an expression of j1 and of j2 = spline(j1)."""
    model = biobullet.load_model(_expression_chain(tmp_path, base) if driver == "expression"
                                 else _chain(tmp_path, base=base, driver=driver))
    compiled = ConstraintSet(model)
    generic = ConstraintSet(model)
    generic._table = None
    assert compiled._table is not None and len(compiled.functions) == 3
    rng = np.random.default_rng(4)
    for _ in range(5):
        q = rng.normal(size=model.nq)
        x = model.joint_state(q, np.zeros(model.nv), 0.0)[0].copy()
        off_q, off_v = (7, 6) if base == "floating" else (0, 0)
        x[off_q:] += rng.normal(scale=0.3, size=model.n_tangent - off_v)   # off the manifold
        xd = rng.normal(size=model.n_tangent)
        t = float(rng.uniform(0, 2))
        got = compiled.all_terms(x, xd, t)
        want = generic.all_terms(x, xd, t)
        for a, b in zip(got, want):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
        # independent: the joint columns of Φ_x and Φ_t by central differences of Φ (O(h²) ≈ 1e-10)
        phi, jac, phi_t, _ = got
        h = 1e-6
        for k in range(model.n_tangent - off_v):
            e = np.zeros_like(x)
            e[off_q + k] = h
            fd = (compiled.residual(x + e, t) - compiled.residual(x - e, t)) / (2 * h)
            np.testing.assert_allclose(jac[:, off_v + k], fd, atol=1e-8)
        fd_t = (compiled.residual(x, t + h) - compiled.residual(x, t - h)) / (2 * h)
        np.testing.assert_allclose(phi_t, fd_t, atol=1e-8)


@pytest.mark.parametrize("expression", [False, True])
def test_velocity_bias_is_second_derivative_along_a_path(tmp_path, expression):
    """b = Φ̈ − Φ_x ẍ: with ẍ = 0 and x(s) = x + s ẋ, t(s) = t + s, Φ(s)'' at s = 0 is the bias."""
    model = biobullet.load_model(_expression_chain(tmp_path) if expression else _chain(tmp_path))
    rows = ConstraintSet(model)
    rng = np.random.default_rng(7)
    x = rng.normal(size=model.n_config)
    xd = rng.normal(size=model.n_tangent)
    t, h = 0.3, 1e-4
    second = (rows.residual(x + h * xd, t + h) - 2 * rows.residual(x, t) + rows.residual(x - h * xd, t - h)) / h**2
    # central second difference: error h^2 Φ''''/12 (about 1e-7 relative for the Fourier row's ω^4 terms)
    np.testing.assert_allclose(rows.velocity_bias(x, xd, t), second, rtol=1e-6, atol=1e-6)


def test_undefined_expression_row_reports_the_evaluation_error(tmp_path):
    """An expression outside its domain: the compiled rows decline (−1) and the per-row path raises the
    EvaluationError naming the expression — never NaN rows."""
    from biobullet.core.errors import EvaluationError
    from nonlinear_pendulum import pendulum_text
    path = tmp_path / "sqrt_pendulum.urdf"
    path.write_text(pendulum_text("sqrt(j1) + 0.3*j2**2"))
    rows = ConstraintSet(biobullet.load_model(path))
    assert rows._table is not None
    with pytest.raises(EvaluationError, match=r"sqrt\(j1\).*j1 = -0.2"):
        rows.all_terms(np.array([-0.2, 0.1, 0.0]), np.zeros(3), 0.0)


@pytest.mark.parametrize("driver", [True, "expression"])
def test_value_only_rows_equal_plugin_residual(tmp_path, driver):
    """The bridge's step-end check (`joint_jets.function_values_kernel`: values alone, an expression's value-first
    tape prefix) against each function's own value on the per-row plug-in path (`evaluate`: the whole tape), at
    off-manifold states; a state outside an expression's domain is not needed here (the kernel returns −1 there)."""
    from biobullet.model.joint_jets import function_table, function_values_kernel
    model = biobullet.load_model(_expression_chain(tmp_path, "fixed") if driver == "expression"
                                 else _chain(tmp_path, base="fixed", driver=driver))
    generic = ConstraintSet(model)
    generic._table = None
    functions = function_table(generic.functions)
    values = function_values_kernel()
    rng = np.random.default_rng(7)
    for _ in range(5):
        x = model.joint_state(rng.normal(size=model.nq), np.zeros(model.nv), 0.0)[0].copy()
        x += rng.normal(scale=0.3, size=x.shape)
        t = float(rng.uniform(0, 2))
        phi = np.empty(len(generic.functions))
        worst = values(functions, t, x, phi)
        want = generic.residual(x, t)
        np.testing.assert_allclose(phi, want, rtol=1e-12, atol=1e-12)
        assert worst == pytest.approx(np.abs(want).max(), rel=1e-12)
