"""Cubic-spline joint function of one input, from a table (x_i, y_i).

XML: ``<joint_function joint="J" type="spline" inputs="A" x="x0 x1 ..." y="y0 y1 ..."
boundary="not-a-knot|natural|clamped|fmm" slopes="s0 sN" extrapolation="cubic|linear" degree="3|1"/>``
(boundary default not-a-knot; `slopes` = end derivatives dθ/dx, required for and only allowed with clamped).
x strictly increasing, at least 2 points.

`boundary="fmm"` is the Forsythe–Malcolm–Moler end condition (the third derivative at each end equals that of
the cubic through the four end points; a parabola through 3 points, a line through 2), computed with OpenSim's
`SimmSpline` algorithm, so `boundary="fmm" extrapolation="linear"` is OpenSim's SimmSpline. `degree="1"` is the
piecewise-linear interpolant (OpenSim's PiecewiseLinearFunction; no boundary). `extrapolation="linear"`
continues the end values with the end slopes (OpenSim's convention) instead of the end cubic pieces.

The interpolant is SciPy's ``CubicSpline`` (C² piecewise cubic). With fewer than 4 points not-a-knot is
under-determined as a cubic, and SciPy then returns the interpolating polynomial of lower degree (a line
through 2 points, a parabola through 3) — we keep that. Outside [x0, xN] the end cubic pieces are
continued (cubic extrapolation, SciPy's default), so θ stays C² but grows like x³ far from the table:
keep the table wider than the motion range.
"""
from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from typing import ClassVar

import numpy as np

from biobullet.core.errors import ModelError, SourceRef
from biobullet.core.attributes import REQUIRED, floats
from biobullet.functions.base import JointFunction, interpolation_table, one_input_jets
from biobullet.functions.registry import register

BOUNDARIES: tuple[str, ...] = ("not-a-knot", "natural", "clamped", "fmm")
EXTRAPOLATIONS: tuple[str, ...] = ("cubic", "linear")
DEGREES: tuple[int, ...] = (3, 1)
#: most table points: each evaluation walks the breaks to its piece (`spline_jets_py`), in Python at a run's cold
#: start (300,000 points, a 3 MB file, cost 25 ms an evaluation); OpenSim's tables have tens of points
MAX_POINTS = 10_000


@register
class SplineFunction(JointFunction):
    """θ = S(x) with S a cubic spline; derivatives from the piecewise-polynomial coefficients."""

    type_name: ClassVar[str] = "spline"
    attributes: ClassVar[tuple[str, ...]] = ("x", "y", "boundary", "slopes", "extrapolation", "degree")

    def __init__(self, inputs: Sequence[str], x: Sequence[float], y: Sequence[float],
                 boundary: str = "not-a-knot", slopes: Sequence[float] | None = None,
                 extrapolation: str = "cubic", degree: int = 3) -> None:
        super().__init__(inputs)
        from scipy.interpolate import CubicSpline  # lazy: keep `import biobullet.functions` light

        xs, ys = interpolation_table(self.inputs, x, y, min_points=2, max_points=MAX_POINTS,
                                     expected=f"as many y as x values, at least 2 and at most {MAX_POINTS}")
        if boundary not in BOUNDARIES:
            raise ModelError(f"unknown boundary '{boundary}'", attribute="boundary",
                             expected=" | ".join(BOUNDARIES))
        if extrapolation not in EXTRAPOLATIONS:
            raise ModelError(f"unknown extrapolation '{extrapolation}'", attribute="extrapolation",
                             expected=" | ".join(EXTRAPOLATIONS))
        if degree not in DEGREES:
            raise ModelError(f"unsupported degree {degree}", attribute="degree", expected="3 or 1")
        if boundary == "clamped":
            if slopes is None or len(slopes) != 2 or not np.all(np.isfinite(slopes)):
                raise ModelError("clamped boundary needs two end slopes", attribute="slopes",
                                 expected="two finite numbers s0 sN")
            bc = ((1, float(slopes[0])), (1, float(slopes[1])))
        else:
            if slopes is not None:
                raise ModelError("slopes are only used with boundary='clamped'", attribute="slopes",
                                 expected="no slopes, or boundary='clamped'")
            bc = boundary
        self.x, self.y, self.boundary = xs, ys, boundary
        self.extrapolation, self.degree = extrapolation, degree
        self.slopes = None if slopes is None else tuple(float(s) for s in slopes)
        # a table near the ends of double range (steps of 1e308, knots 1e-300 apart) overflowed here: numpy warnings
        # naming no file, SciPy's ValueError (an internal error) or non-finite pieces — one ModelError instead
        from scipy.linalg import LinAlgWarning
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", LinAlgWarning)
            try:
                # Piece i: θ = Σ_k c[i][k] (x − x_i)^(3−k)
                if degree == 1:
                    slope = np.diff(ys) / np.diff(xs)
                    coefficients = np.column_stack([np.zeros_like(slope), np.zeros_like(slope), slope, ys[:-1]])
                elif boundary == "fmm":
                    b, c, d = simm_spline_coefficients(xs, ys)
                    coefficients = np.column_stack([d[:-1], c[:-1], b[:-1], ys[:-1]])
                else:
                    coefficients = CubicSpline(xs, ys, bc_type=bc, extrapolate=True).c.T
                breaks = xs.tolist()
                pieces = coefficients.tolist()
                if extrapolation == "linear":
                    # one straight piece before x0 and one after xN: the kernels continue the end pieces outside
                    # the breaks, so a straight end piece is linear extrapolation everywhere beyond the table
                    width = max(float(xs[-1] - xs[0]), 1.0)
                    c3, c2, c1, c0 = pieces[-1]
                    h = float(xs[-1] - xs[-2])
                    end_slope = (3.0 * c3 * h + 2.0 * c2) * h + c1
                    start_slope = pieces[0][2]
                    pieces = [[0.0, 0.0, start_slope, float(ys[0]) - width * start_slope], *pieces,
                              [0.0, 0.0, end_slope, float(ys[-1])]]
                    breaks = [breaks[0] - width, *breaks, breaks[-1] + width]
                #: the parameters of `spline_jets_py`: the breaks, then each piece's (c3, c2, c1, c0); a tuple, which
                #: Python indexes faster than an array
                self.jet_parameters = (*(float(b) for b in breaks), *(float(c) for piece in pieces for c in piece))
            except ValueError:
                self.jet_parameters = (math.nan,)
        if not all(math.isfinite(value) for value in self.jet_parameters):
            raise ModelError("the spline's pieces overflow double precision (knots too close together or too far "
                             "apart for the steps between the values)", attribute="y",
                             expected="a table whose slopes and curvatures are finite doubles")
        self.n_breaks = len(breaks)

    @classmethod
    def from_attributes(cls, attributes: Mapping[str, str], inputs: tuple[str, ...],
                        source: SourceRef) -> "SplineFunction":
        cls.check_attributes(attributes, inputs, source, exactly=1)
        xs = floats(source, attributes, "x", min_count=2, max_count=MAX_POINTS)
        ys = floats(source, attributes, "y", count=len(xs))
        boundary = attributes.get("boundary", "not-a-knot").strip()
        slopes = floats(source, attributes, "slopes", REQUIRED if boundary == "clamped" else None, count=2)
        degree_text = attributes.get("degree", "3").strip()
        if degree_text not in ("3", "1"):
            raise source.error("degree", f"unsupported degree {degree_text!r}", "3 (cubic) or 1 (piecewise linear)")
        if degree_text == "1" and "boundary" in attributes:
            raise source.error("boundary", "a piecewise-linear table (degree 1) has no boundary condition",
                               "no boundary with degree=\"1\"")
        try:   # the table, boundary, slopes and extrapolation are checked once, by the constructor
            return cls(inputs, xs, ys, boundary, None if slopes is None else tuple(slopes),
                       attributes.get("extrapolation", "cubic").strip(), int(degree_text))
        except ModelError as exc:
            raise source.error(exc.attribute, exc.detail, exc.expected) from None

    def evaluate(self, x: np.ndarray, t: float) -> tuple[float, np.ndarray, np.ndarray]:
        return one_input_jets(*spline_jets_py(self.jet_parameters, 0, self.n_breaks, float(x[0])))

    @property
    def kinked(self) -> bool:
        """A degree-1 table is a broken line: its slope jumps at the inner knots."""
        return self.degree == 1 and len(self.x) > 2

    def __repr__(self) -> str:
        return (f"SplineFunction(inputs={self.inputs}, points={len(self.x)}, boundary='{self.boundary}', "
                f"extrapolation='{self.extrapolation}', degree={self.degree})")


def spline_jets_py(coef, c0, nc, z):
    """(θ, dθ/dz, d²θ/dz²) at z of the piecewise cubic whose parameters start at coef[c0]: nc breaks, then
    (nc − 1) pieces (c3, c2, c1, c0) in s = z − break. Piece i serves [x_i, x_{i+1}) (PPoly's choice), the end
    pieces continue outside the breaks. The type's one implementation: `evaluate` runs it in Python, the compiled
    joint jets (`model.joint_jets`) inline it."""
    piece = 0
    while piece < nc - 2 and z >= coef[c0 + piece + 1]:
        piece += 1
    s = z - coef[c0 + piece]
    base = c0 + nc + 4 * piece
    a3, a2, a1, a0 = coef[base], coef[base + 1], coef[base + 2], coef[base + 3]
    return (((a3 * s + a2) * s + a1) * s + a0, (3.0 * a3 * s + 2.0 * a2) * s + a1, 6.0 * a3 * s + 2.0 * a2)


#: OpenSim's floor on a knot spacing in SimmSpline (SimmMacros.h TINY_NUMBER)
TINY_SPACING = 1e-7


def simm_spline_coefficients(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """OpenSim's `SimmSpline::calcCoefficients` (same operations, so the same numbers to rounding): the
    Forsythe–Malcolm–Moler cubic spline, a tridiagonal solve for the second derivatives with third-derivative end
    conditions from the divided differences of the end four points. Returns (b, c, d), n each: piece k is
    y_k + b_k s + c_k s² + d_k s³ (s = x − x_k), b_{n−1} the end slope."""
    n = len(x)
    b, c, d = np.zeros(n), np.zeros(n), np.zeros(n)
    if n == 2:
        b[:] = (y[1] - y[0]) / max(TINY_SPACING, x[1] - x[0])
        return b, c, d
    # tridiagonal system of the second derivatives: b diagonal, d off-diagonal, c right-hand side
    d[0] = max(TINY_SPACING, x[1] - x[0])
    c[1] = (y[1] - y[0]) / d[0]
    for i in range(1, n - 1):
        d[i] = max(TINY_SPACING, x[i + 1] - x[i])
        b[i] = 2.0 * (d[i - 1] + d[i])
        c[i + 1] = (y[i + 1] - y[i]) / d[i]
        c[i] = c[i + 1] - c[i]
    b[0], b[n - 1] = -d[0], -d[n - 2]
    c[0] = c[n - 1] = 0.0
    if n > 3:
        d31 = max(TINY_SPACING, x[3] - x[1])
        d20 = max(TINY_SPACING, x[2] - x[0])
        d1 = max(TINY_SPACING, x[n - 1] - x[n - 3])
        d2 = max(TINY_SPACING, x[n - 2] - x[n - 4])
        d30 = max(TINY_SPACING, x[3] - x[0])
        d3 = max(TINY_SPACING, x[n - 1] - x[n - 4])
        c[0] = (c[2] / d31 - c[1] / d20) * d[0] * d[0] / d30
        c[n - 1] = -(c[n - 2] / d1 - c[n - 3] / d2) * d[n - 2] * d[n - 2] / d3
    for i in range(1, n):
        t = d[i - 1] / b[i - 1]
        b[i] -= t * d[i - 1]
        c[i] -= t * c[i - 1]
    c[n - 1] /= b[n - 1]
    for i in range(n - 2, -1, -1):
        c[i] = (c[i] - d[i] * c[i + 1]) / b[i]
    b[n - 1] = (y[n - 1] - y[n - 2]) / d[n - 2] + d[n - 2] * (c[n - 2] + 2.0 * c[n - 1])
    for i in range(n - 1):
        b[i] = (y[i + 1] - y[i]) / d[i] - d[i] * (c[i + 1] + 2.0 * c[i])
        d[i] = (c[i + 1] - c[i]) / d[i]
        c[i] *= 3.0
    c[n - 1] *= 3.0
    d[n - 1] = d[n - 2]
    return b, c, d
