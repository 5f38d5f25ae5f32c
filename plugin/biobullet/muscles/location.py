"""Functions of one coordinate that place OpenSim's moving path points (`MovingPathPoint` x/y/z_location).

Every function is stored as a row of one flat parameter table so that one numba kernel evaluates all of them:

- `TABLE` (OpenSim's SimmSpline, PiecewiseLinearFunction): breaks x₀ < … < x_{n−1}, piece k on [x_k, x_{k+1}]
  y_k + b_k s + c_k s² + d_k s³ (s = x − x_k), and outside the table OpenSim's linear continuation
  y₀ + b₀ (x − x₀) on the left, y_{n−1} + b_{n−1} (x − x_{n−1}) on the right. Parameters [n, x, y, b, c, d].
- `POLYNOMIAL` (Constant, LinearFunction, PolynomialFunction): coefficients from the highest power down.

SimmSpline's coefficients are those of Forsythe, Malcolm & Moler's `spline` (the cubic whose end third
derivatives match the divided differences of the end four points), which OpenSim computes in
`SimmSpline::calcCoefficients`; a MultiplierFunction's scale is folded into the coefficients (the functions are
linear in y). Units are those of the point coordinates (m) per unit of the coordinate (rad or m).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from biobullet.core.errors import ModelError
from biobullet.functions.spline import TINY_SPACING, simm_spline_coefficients

KERNEL_ERROR_MODEL = "numpy"   # one error model wherever reached (the stage's, by address: core.jit._error_model)

TABLE = 0
POLYNOMIAL = 1


@dataclass(frozen=True)
class LocationFunction:
    """One function of one coordinate: `kind` (TABLE or POLYNOMIAL), its flat parameters (module docstring), and
    its `definition` (type name, x or coefficients, y) from which it was built (written back to files)."""

    kind: int
    params: np.ndarray
    definition: tuple[str, tuple[float, ...], tuple[float, ...]] = ("polynomial", (0.0,), ())

    def scaled(self, scale: float) -> "LocationFunction":
        """scale · f (OpenSim's MultiplierFunction)."""
        name, first, second = self.definition
        if self.kind == POLYNOMIAL:
            return polynomial([c * scale for c in first])
        return FUNCTION_TYPES[name](first, [y * scale for y in second])

    def __call__(self, x: float) -> float:
        return float(location_value_py(self.kind, self.params, float(x))[0])


def polynomial(coefficients) -> LocationFunction:
    """Σ c_i x^(m−1−i), coefficients from the highest power down (OpenSim's PolynomialFunction order)."""
    values = np.array(coefficients, dtype=float).reshape(-1)
    if values.size == 0:
        values = np.zeros(1)
    if not np.all(np.isfinite(values)):
        raise ModelError("non-finite coefficient", attribute="coefficients", expected="finite numbers")
    return LocationFunction(POLYNOMIAL, values, ("polynomial", tuple(values.tolist()), ()))


def piecewise_linear(x, y) -> LocationFunction:
    """OpenSim's PiecewiseLinearFunction: straight pieces, the end slopes continued outside."""
    xs, ys = _table_points(x, y)
    n = xs.size
    b = np.zeros(n)
    for i in range(n - 1):
        b[i] = (ys[i + 1] - ys[i]) / max(TINY_SPACING, xs[i + 1] - xs[i])
    b[n - 1] = b[n - 2]
    return LocationFunction(TABLE, np.concatenate(([n], xs, ys, b, np.zeros(n), np.zeros(n))),
                            ("piecewise_linear", tuple(xs.tolist()), tuple(ys.tolist())))


def simm_spline(x, y) -> LocationFunction:
    """OpenSim's SimmSpline: the Forsythe–Malcolm–Moler cubic spline through (x, y), linear outside
    (`functions.spline.simm_spline_coefficients`)."""
    xs, ys = _table_points(x, y)
    b, c, d = simm_spline_coefficients(xs, ys)
    return LocationFunction(TABLE, np.concatenate(([xs.size], xs, ys, b, c, d)),
                            ("simm_spline", tuple(xs.tolist()), tuple(ys.tolist())))


def _polynomial_from_table(coefficients, _unused=()) -> LocationFunction:
    return polynomial(coefficients)


#: the `type` names of location functions in files (`<x type=...>` of a `<moving_point>`) and their builders
FUNCTION_TYPES = {"simm_spline": simm_spline, "piecewise_linear": piecewise_linear,
                  "polynomial": _polynomial_from_table}
MAX_TABLE_POINTS = 100_000


def _table_points(x, y) -> tuple[np.ndarray, np.ndarray]:
    xs = np.array(x, dtype=float).reshape(-1)
    ys = np.array(y, dtype=float).reshape(-1)
    if xs.size > MAX_TABLE_POINTS:
        raise ModelError(f"{xs.size} table points", attribute="x", expected=f"at most {MAX_TABLE_POINTS}")
    if xs.size != ys.size or xs.size < 2:
        raise ModelError(f"{xs.size} x values and {ys.size} y values", attribute="y",
                         expected="as many y as x values, at least 2")
    if not (np.all(np.isfinite(xs)) and np.all(np.isfinite(ys))):
        raise ModelError("non-finite table value", attribute="x", expected="finite numbers")
    if np.any(np.diff(xs) <= 0.0):
        raise ModelError("x values are not strictly increasing", attribute="x", expected="x0 < x1 < ...")
    return xs, ys


def location_value_py(kind, params, x):
    """(f(x), f'(x)) of one location function (module docstring); x in the coordinate's unit."""
    if kind == POLYNOMIAL:
        value = 0.0
        slope = 0.0
        for i in range(params.shape[0]):
            slope = slope * x + value
            value = value * x + params[i]
        return value, slope
    n = int(params[0])
    xs = params[1:1 + n]
    ys = params[1 + n:1 + 2 * n]
    b = params[1 + 2 * n:1 + 3 * n]
    c = params[1 + 3 * n:1 + 4 * n]
    d = params[1 + 4 * n:1 + 5 * n]
    if x < xs[0]:
        return ys[0] + (x - xs[0]) * b[0], b[0]
    if x > xs[n - 1]:
        return ys[n - 1] + (x - xs[n - 1]) * b[n - 1], b[n - 1]
    low = 0
    high = n - 1
    while high - low > 1:   # binary search: xs[low] <= x <= xs[high]
        middle = (low + high) // 2
        if x < xs[middle]:
            high = middle
        else:
            low = middle
    s = x - xs[low]
    value = ys[low] + s * (b[low] + s * (c[low] + s * d[low]))
    slope = b[low] + s * (2.0 * c[low] + 3.0 * s * d[low])
    return value, slope


__all__ = ["TABLE", "POLYNOMIAL", "FUNCTION_TYPES", "LocationFunction", "polynomial", "piecewise_linear", "simm_spline"]
