"""Cubic-spline joint function of one input, from a table (x_i, y_i).

XML: ``<joint_function joint="J" type="spline" inputs="A" x="x0 x1 ..." y="y0 y1 ..."
boundary="not-a-knot|natural|clamped" slopes="s0 sN"/>`` (boundary default not-a-knot; `slopes` = end
derivatives dθ/dx, required for and only allowed with clamped). x strictly increasing, at least 2 points.

The interpolant is SciPy's ``CubicSpline`` (C² piecewise cubic). With fewer than 4 points not-a-knot is
under-determined as a cubic, and SciPy then returns the interpolating polynomial of lower degree (a line
through 2 points, a parabola through 3) — we keep that. Outside [x0, xN] the end cubic pieces are
continued (cubic extrapolation, SciPy's default), so θ stays C² but grows like x³ far from the table:
keep the table wider than the motion range.
"""
from __future__ import annotations

import bisect
from collections.abc import Mapping, Sequence
from typing import ClassVar

import numpy as np

from biobullet.core.errors import ModelError, SourceRef
from biobullet.core.attributes import REQUIRED, check_count, check_known_attributes, floats
from biobullet.functions.base import COMMON_ATTRIBUTES, JointFunction
from biobullet.functions.registry import register

BOUNDARIES: tuple[str, ...] = ("not-a-knot", "natural", "clamped")


@register
class SplineFunction(JointFunction):
    """θ = S(x) with S a cubic spline; derivatives from the piecewise-polynomial coefficients."""

    type_name: ClassVar[str] = "spline"
    attributes: ClassVar[tuple[str, ...]] = ("x", "y", "boundary", "slopes")

    def __init__(self, inputs: Sequence[str], x: Sequence[float], y: Sequence[float],
                 boundary: str = "not-a-knot", slopes: Sequence[float] | None = None) -> None:
        super().__init__(inputs)
        from scipy.interpolate import CubicSpline  # lazy: keep `import biobullet.functions` light

        xs = np.array(x, dtype=float).reshape(-1)
        ys = np.array(y, dtype=float).reshape(-1)
        if len(self.inputs) != 1:
            raise ModelError(f"got {len(self.inputs)} inputs", attribute="inputs", expected="exactly one input")
        if len(xs) < 2 or len(xs) != len(ys):
            raise ModelError(f"{len(xs)} x values and {len(ys)} y values", attribute="y",
                             expected="as many y as x values, at least 2")
        if not (np.all(np.isfinite(xs)) and np.all(np.isfinite(ys))):
            raise ModelError("non-finite table value", attribute="x", expected="finite numbers")
        if np.any(np.diff(xs) <= 0.0):
            raise ModelError("x values are not strictly increasing", attribute="x",
                             expected="strictly increasing x0 < x1 < ...")
        if boundary not in BOUNDARIES:
            raise ModelError(f"unknown boundary '{boundary}'", attribute="boundary",
                             expected=" | ".join(BOUNDARIES))
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
        self.slopes = None if slopes is None else tuple(float(s) for s in slopes)
        self.spline = CubicSpline(xs, ys, bc_type=bc, extrapolate=True)
        # Piece i: θ = Σ_k c[k, i] (x − x_i)^(3−k). Kept as Python lists: the hot loop evaluates one
        # scalar at a time, where list indexing + bisect is much cheaper than a PPoly call.
        self._breaks = xs.tolist()
        self._coefficients = self.spline.c.T.tolist()

    @classmethod
    def from_attributes(cls, attributes: Mapping[str, str], inputs: tuple[str, ...],
                        source: SourceRef) -> "SplineFunction":
        check_known_attributes(source, attributes, (*COMMON_ATTRIBUTES, *cls.attributes))
        check_count(source, "inputs", inputs, exactly=1)
        xs = floats(source, attributes, "x", min_count=2)
        ys = floats(source, attributes, "y", count=len(xs))
        if np.any(np.diff(xs) <= 0.0):
            i = int(np.argmax(np.diff(xs) <= 0.0))
            raise source.error("x", f"not strictly increasing at position {i + 1} ({xs[i]:g} then {xs[i + 1]:g})",
                               "strictly increasing x0 < x1 < ...")
        boundary = attributes.get("boundary", "not-a-knot").strip()
        if boundary not in BOUNDARIES:
            raise source.error("boundary", f"unknown boundary '{boundary}'", " | ".join(BOUNDARIES))
        slopes = floats(source, attributes, "slopes", REQUIRED if boundary == "clamped" else None, count=2)
        if slopes is not None and boundary != "clamped":
            raise source.error("slopes", "slopes are only used with boundary='clamped'",
                               "no slopes, or boundary='clamped'")
        return cls(inputs, xs, ys, boundary, None if slopes is None else tuple(slopes))

    def evaluate(self, x: np.ndarray, t: float) -> tuple[float, np.ndarray, np.ndarray]:
        xv = float(x[0])
        breaks = self._breaks
        # Same piece choice as PPoly: [x_i, x_{i+1}), first/last piece continued outside the table.
        i = min(max(bisect.bisect_right(breaks, xv) - 1, 0), len(breaks) - 2)
        c3, c2, c1, c0 = self._coefficients[i]
        s = xv - breaks[i]
        value = ((c3 * s + c2) * s + c1) * s + c0
        gradient = np.array([(3.0 * c3 * s + 2.0 * c2) * s + c1, 0.0])
        hessian = np.zeros((2, 2))
        hessian[0, 0] = 6.0 * c3 * s + 2.0 * c2
        return value, gradient, hessian

    def __repr__(self) -> str:
        return f"SplineFunction(inputs={self.inputs}, points={len(self.x)}, boundary='{self.boundary}')"
