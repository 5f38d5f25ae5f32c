"""Values and derivatives of the built-in joint functions against independent formulas.

Independent references: numpy polyval, scipy CubicSpline evaluated directly (and its own derivative
evaluation), hand-written sums; derivatives against central finite differences (check_derivatives).
"""
from __future__ import annotations

import numpy as np
import pytest
from scipy.interpolate import CubicSpline

from biobullet.core.errors import SourceRef
from biobullet.functions import check_derivatives, get
from biobullet.functions.fourier import fourier_coefficients
from biobullet.functions.linear import LinearFunction

SRC = SourceRef("test.urdf", '<joint_function joint="J">')
RNG_SEED = 20240611
# Values are computed by a few flops of the same formula in another order: agreement to ~1e-12
# relative (a few hundred ulps) is what rounding allows.
VALUE_RTOL = 1e-12


def build(type_name: str, inputs: tuple[str, ...], **attributes: str):
    return get(type_name).from_attributes({"joint": "J", "type": type_name, "inputs": " ".join(inputs),
                                           **attributes}, inputs, SRC)


def test_linear_value_gradient_and_mimic() -> None:
    f = build("linear", ("A", "B", "C"), coefficients="0.5 -2 1e-3", offset="0.25")
    rng = np.random.default_rng(RNG_SEED)
    for _ in range(5):
        x, t = rng.uniform(-3, 3, 3), rng.uniform(0, 2)
        value, gradient, hessian = f.evaluate(x, t)
        assert value == pytest.approx(0.25 + 0.5 * x[0] - 2 * x[1] + 1e-3 * x[2], rel=VALUE_RTOL, abs=1e-15)
        np.testing.assert_array_equal(gradient, [0.5, -2.0, 1e-3, 0.0])
        np.testing.assert_array_equal(hessian, np.zeros((4, 4)))
        assert check_derivatives(f, x, t).ok
    assert not f.uses_time
    m = LinearFunction.mimic("hip", multiplier=-0.5, offset=0.1)
    assert m.inputs == ("hip",)
    assert m.value(np.array([0.8])) == pytest.approx(-0.5 * 0.8 + 0.1, rel=VALUE_RTOL)


def test_linear_offset_defaults_to_zero() -> None:
    f = build("linear", ("A",), coefficients="2")
    assert f.value(np.array([1.5])) == 3.0


def test_polynomial_matches_numpy_polyval() -> None:
    coefficients = [0.1, -0.7, 0.3, 0.05, -0.02]
    f = build("polynomial", ("A",), coefficients=" ".join(map(str, coefficients)))
    p = np.polynomial.Polynomial(coefficients)
    rng = np.random.default_rng(RNG_SEED)
    for x in rng.uniform(-2.5, 2.5, 10):
        value, gradient, hessian = f.evaluate(np.array([x]), 0.0)
        assert value == pytest.approx(np.polyval(coefficients[::-1], x), rel=VALUE_RTOL, abs=1e-14)
        assert gradient[0] == pytest.approx(p.deriv(1)(x), rel=VALUE_RTOL, abs=1e-14)
        assert hessian[0, 0] == pytest.approx(p.deriv(2)(x), rel=VALUE_RTOL, abs=1e-14)
        assert gradient[1] == 0.0 and not hessian[1].any() and not hessian[:, 1].any()
        assert check_derivatives(f, [x]).ok


def test_polynomial_constant_has_zero_derivatives() -> None:
    f = build("polynomial", ("A",), coefficients="1.25")
    value, gradient, hessian = f.evaluate(np.array([3.0]), 0.0)
    assert value == 1.25 and not gradient.any() and not hessian.any()


@pytest.mark.parametrize("boundary,slopes",
                         [("not-a-knot", None), ("natural", None), ("clamped", (0.3, -1.0))])
def test_spline_matches_scipy_cubic_spline(boundary: str, slopes) -> None:
    xs = np.array([-1.0, -0.2, 0.5, 1.1, 2.0, 3.2])
    ys = np.array([0.3, -0.4, 0.8, 0.1, 1.5, 0.9])
    attributes = {"x": " ".join(repr(float(v)) for v in xs), "y": " ".join(repr(float(v)) for v in ys), "boundary": boundary}
    bc = boundary if slopes is None else ((1, slopes[0]), (1, slopes[1]))
    if slopes is not None:
        attributes["slopes"] = f"{slopes[0]} {slopes[1]}"
    f = build("spline", ("A",), **attributes)
    reference = CubicSpline(xs, ys, bc_type=bc, extrapolate=True)
    rng = np.random.default_rng(RNG_SEED)
    # inside the table, at the knots and outside (end-piece cubic extrapolation)
    points = np.concatenate([rng.uniform(-2.0, 4.0, 20), xs])
    for x in points:
        value, gradient, hessian = f.evaluate(np.array([x]), 0.7)
        # 1e-10 absolute: piece-choice at a knot may differ from PPoly; C² continuity makes both agree
        # up to rounding of the cubic coefficients (values are O(1)).
        assert value == pytest.approx(float(reference(x)), abs=1e-10)
        assert gradient[0] == pytest.approx(float(reference(x, 1)), abs=1e-10)
        assert hessian[0, 0] == pytest.approx(float(reference(x, 2)), abs=1e-9)
    for x in rng.uniform(-2.0, 4.0, 8):
        assert check_derivatives(f, [x], 0.7).ok
    np.testing.assert_allclose([f.value(np.array([x])) for x in xs], ys, atol=1e-12)  # interpolates


def test_spline_clamped_slopes_and_short_tables() -> None:
    f = build("spline", ("A",), x="0 1 2", y="0 1 0", boundary="clamped", slopes="2 -2")
    assert f.evaluate(np.array([0.0]), 0)[1][0] == pytest.approx(2.0, abs=1e-12)
    assert f.evaluate(np.array([2.0]), 0)[1][0] == pytest.approx(-2.0, abs=1e-12)
    # not-a-knot fallback: 2 points → the line through them, 3 points → the parabola through them
    line = build("spline", ("A",), x="0 2", y="1 5")
    assert line.value(np.array([3.0])) == pytest.approx(1 + 2 * 3.0, abs=1e-12)
    parabola = build("spline", ("A",), x="-1 0 1", y="1 0 1")
    for x in (-2.0, 0.5, 1.7):
        assert parabola.value(np.array([x])) == pytest.approx(x * x, abs=1e-12)


def test_fourier_matches_hand_written_sum() -> None:
    period, a0, a, b = 1.7, 0.2, [0.5, -0.1, 0.03], [0.25, 0.07, -0.02]
    f = build("fourier", (), period=str(period), a0=str(a0), a=" ".join(map(str, a)), b=" ".join(map(str, b)))
    assert f.uses_time and f.inputs == ()
    rng = np.random.default_rng(RNG_SEED)
    for t in rng.uniform(-3, 5, 10):
        w = 2 * np.pi / period
        expected = a0 + sum(a[k] * np.cos((k + 1) * w * t) + b[k] * np.sin((k + 1) * w * t) for k in range(3))
        rate = sum((k + 1) * w * (-a[k] * np.sin((k + 1) * w * t) + b[k] * np.cos((k + 1) * w * t))
                   for k in range(3))
        value, gradient, hessian = f.evaluate(np.zeros(0), t)
        assert value == pytest.approx(expected, rel=VALUE_RTOL, abs=1e-14)
        assert gradient.shape == (1,) and hessian.shape == (1, 1)
        assert gradient[0] == pytest.approx(rate, rel=1e-11, abs=1e-13)
        assert check_derivatives(f, [], t).ok
        assert f.value(np.zeros(0), t + period) == pytest.approx(value, abs=1e-12)  # periodic


def test_fourier_missing_sine_terms_are_zero() -> None:
    f = build("fourier", (), period="2", a="1")
    assert f.value(np.zeros(0), 0.5) == pytest.approx(np.cos(np.pi * 0.5), abs=1e-15)


def test_fourier_coefficients_recover_a_known_series() -> None:
    period, a0, a, b = 0.9, -0.3, np.array([1.0, 0.2, -0.05]), np.array([-0.4, 0.1, 0.02])
    t = np.random.default_rng(RNG_SEED).uniform(0.0, 2.0, 40)  # irregular sampling
    w = 2 * np.pi / period
    samples = a0 + sum(a[k] * np.cos((k + 1) * w * t) + b[k] * np.sin((k + 1) * w * t) for k in range(3))
    fa0, fa, fb = fourier_coefficients(t, samples, period, 3)
    # exact data, well-conditioned 40x7 least squares: recovery to ~1e-13 (conditioning × eps)
    assert fa0 == pytest.approx(a0, abs=1e-12)
    np.testing.assert_allclose(fa, a, atol=1e-12)
    np.testing.assert_allclose(fb, b, atol=1e-12)
