"""Natural interpolating spline of odd degree 2m − 1 of one input (OpenSim's GCVSpline without smoothing).

XML: ``<joint_function joint="J" type="natural_spline" inputs="A" x="x0 x1 ..." y="y0 y1 ..." degree="5"/>``
(degree 1, 3, 5 or 7; x strictly increasing, at least m + 1 and at most MAX_POINTS points).

The spline interpolates the table, is C^(2m−2), and its derivatives of orders m … 2m − 2 vanish at both ends (the
natural end conditions: it minimises ∫ (f⁽ᵐ⁾)² dx). Beyond the table it continues as the polynomial of degree
m − 1 given by the end value and first m − 1 derivatives (the natural spline's own continuation; for degree 3
that is linear extrapolation). With zero error variance this is what Woltring's GCVSPL — OpenSim's GCVSpline —
fits. The pieces are found by one dense solve at construction (6 unknowns per interval for degree 5).

Compiled paths: `compiled_jets()` gives `_natural_spline_jets_py` (the same pieces and continuations packed as
parameters), so models with this type run on the compiled right-hand sides.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import ClassVar

import numpy as np

from biobullet.core.attributes import floats
from biobullet.core.errors import ModelError, SourceRef
from biobullet.functions.base import JetsKernel, JointFunction, evaluate_jets, interpolation_table
from biobullet.functions.polynomial import polynomial_jets_py
from biobullet.functions.registry import register

DEGREES: tuple[int, ...] = (1, 3, 5, 7)
#: most table points (the construction is one dense solve of (points − 1)(degree + 1) unknowns)
MAX_POINTS = 200


@register
class NaturalSplineFunction(JointFunction):
    """θ = S(x), S the natural interpolating spline of the given odd degree; exact value, gradient, Hessian."""

    type_name: ClassVar[str] = "natural_spline"
    attributes: ClassVar[tuple[str, ...]] = ("x", "y", "degree")

    def __init__(self, inputs: Sequence[str], x: Sequence[float], y: Sequence[float], degree: int = 5) -> None:
        super().__init__(inputs)
        if degree not in DEGREES:
            raise ModelError(f"unsupported degree {degree}", attribute="degree", expected="1, 3, 5 or 7")
        half = (degree + 1) // 2
        xs, ys = interpolation_table(self.inputs, x, y, min_points=half + 1, max_points=MAX_POINTS, expected=(
            f"as many y as x values, {half + 1} to {MAX_POINTS} for degree {degree}"))
        self.x, self.y, self.degree = xs, ys, degree
        # a table near the ends of double range (knots 1e-300 apart, steps of 2e308) made the solve singular (an
        # internal error) or its pieces inf/nan with numpy warnings naming no file: one ModelError instead
        with np.errstate(all="ignore"):
            try:
                # piece i: θ = Σ_k c[i][k] (x − x_i)^k, k = 0 … degree
                pieces = _pieces(xs, ys, degree)
                # Taylor coefficients of the continuations beyond each end (degree m − 1)
                before = [_derivative(pieces[0], 0.0, k) / math.factorial(k) for k in range(half)]
                after = [_derivative(pieces[-1], float(xs[-1] - xs[-2]), k) / math.factorial(k) for k in range(half)]
                params = np.concatenate([[float(degree), float(len(xs))], xs, pieces.reshape(-1), before, after])
            except (np.linalg.LinAlgError, ValueError, OverflowError):
                params = np.array([math.nan])
        if not np.all(np.isfinite(params)):
            raise ModelError("the spline's pieces overflow double precision (knots too close together or too far "
                             "apart for the steps between the values)", attribute="y",
                             expected="a table whose derivatives are finite doubles")
        self._jets = JetsKernel(_natural_spline_jets_py, params, bind={"_HORNER": polynomial_jets_py})

    @classmethod
    def from_attributes(cls, attributes: Mapping[str, str], inputs: tuple[str, ...],
                        source: SourceRef) -> "NaturalSplineFunction":
        cls.check_attributes(attributes, inputs, source, exactly=1)
        degree_text = attributes.get("degree", "5").strip()
        if degree_text not in ("1", "3", "5", "7"):
            raise source.error("degree", f"unsupported degree {degree_text!r}", "1, 3, 5 or 7")
        xs = floats(source, attributes, "x", min_count=2)
        if len(xs) > MAX_POINTS:
            raise source.error("x", f"{len(xs)} points", f"at most {MAX_POINTS}")
        ys = floats(source, attributes, "y", count=len(xs))
        try:
            return cls(inputs, xs, ys, int(degree_text))
        except ModelError as exc:
            raise source.error(exc.attribute, exc.detail, exc.expected) from None

    def evaluate(self, x: np.ndarray, t: float) -> tuple[float, np.ndarray, np.ndarray]:
        return evaluate_jets(self._jets, x, t)   # the compiled jets' Python form: one implementation

    def compiled_jets(self) -> JetsKernel:
        """`_natural_spline_jets_py` with params [degree, points, breaks, piece coefficients (ascending powers),
        continuation before, continuation after]."""
        return self._jets

    @property
    def kinked(self) -> bool:
        """A degree-1 table is a broken line: its slope jumps at the inner knots."""
        return self.degree == 1 and len(self.x) > 2

    def __repr__(self) -> str:
        return f"NaturalSplineFunction(inputs={self.inputs}, points={len(self.x)}, degree={self.degree})"


def _natural_spline_jets_py(z, params, jet):
    """Compiled jets (functions.base.JETS_KERNEL_SIGNATURE) of a natural spline: z = (x, t); params as
    `NaturalSplineFunction.compiled_jets`. Fills f, ∂f/∂x, ∂f/∂t = 0 and the Hessian's upper triangle."""
    degree = int(params[0])
    points = int(params[1])
    half = (degree + 1) // 2
    breaks, pieces = 2, 2 + points
    before = pieces + (points - 1) * (degree + 1)
    value = z[0]
    if value < params[breaks]:   # the continuations of degree m − 1 beyond each end
        start, count, s = before, half, value - params[breaks]
    elif value > params[breaks + points - 1]:
        start, count, s = before + half, half, value - params[breaks + points - 1]
    else:
        piece = 0
        while piece < points - 2 and value >= params[breaks + piece + 1]:
            piece += 1
        start, count, s = pieces + piece * (degree + 1), degree + 1, value - params[breaks + piece]
    f, first, second = _HORNER(params, start, count, s)
    for k in range(6):
        jet[k] = 0.0
    jet[0], jet[1], jet[3] = f, first, second
    return 0


#: the polynomial type's value and first two derivatives by Horner (its Python form; inlined where this compiles)
_HORNER = polynomial_jets_py


def _derivative(coefficients: Sequence[float], s: float, order: int) -> float:
    """d^order/ds^order of Σ_k c_k s^k at s."""
    total = 0.0
    for k in range(len(coefficients) - 1, order - 1, -1):
        total = total * s + coefficients[k] * math.factorial(k) / math.factorial(k - order)
    return total


def _pieces(x: np.ndarray, y: np.ndarray, degree: int) -> np.ndarray:
    """Coefficients (pieces × (degree + 1), ascending powers of x − x_i) of the natural interpolating spline:
    interpolation at both ends of each piece, continuity of derivatives 1 … 2m − 2 at interior knots, and
    derivatives m … 2m − 2 zero at both ends."""
    half, size = (degree + 1) // 2, degree + 1
    pieces = len(x) - 1
    matrix = np.zeros((pieces * size, pieces * size))
    rhs = np.zeros(pieces * size)

    def row(piece: int, s: float, order: int) -> np.ndarray:
        out = np.zeros(pieces * size)
        for k in range(order, size):
            out[piece * size + k] = math.factorial(k) / math.factorial(k - order) * s ** (k - order)
        return out

    rows = []
    for i in range(pieces):
        width = x[i + 1] - x[i]
        rows += [(row(i, 0.0, 0), y[i]), (row(i, width, 0), y[i + 1])]
    for i in range(pieces - 1):
        width = x[i + 1] - x[i]
        rows += [(row(i, width, order) - row(i + 1, 0.0, order), 0.0) for order in range(1, 2 * half - 1)]
    for order in range(half, 2 * half - 1):
        rows += [(row(0, 0.0, order), 0.0), (row(pieces - 1, x[-1] - x[-2], order), 0.0)]
    for k, (coefficients, value) in enumerate(rows):
        matrix[k], rhs[k] = coefficients, value
    return np.linalg.solve(matrix, rhs).reshape(pieces, size)
