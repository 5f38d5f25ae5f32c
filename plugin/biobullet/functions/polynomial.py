"""Polynomial joint function of one input: θ = Σ_k c_k x^k.

XML: ``<joint_function joint="J" type="polynomial" inputs="A" coefficients="c0 c1 c2 ..."/>``
(ascending powers, c0 first). Exactly one input; time is not an argument.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar

import numpy as np

from biobullet.core.errors import ModelError, SourceRef
from biobullet.core.attributes import floats
from biobullet.functions.base import JointFunction, one_input_jets
from biobullet.functions.registry import register

#: most coefficients (degree + 1): each evaluation is one Horner pass over them, in Python at a run's cold start;
#: beyond degree ~20 a polynomial in doubles is round-off, not a joint coupling
MAX_COEFFICIENTS = 100


def polynomial_jets_py(coef, c0, nc, z):
    """(θ, dθ/dz, d²θ/dz²) of θ = Σ_k coef[c0 + k] z^k (k < nc, ascending powers) at z: one Horner pass for the
    value and both derivatives. The type's one implementation: `evaluate` runs it in Python, the compiled joint
    jets (`model.joint_jets`) inline it."""
    f = 0.0
    d1 = 0.0
    d2 = 0.0
    for k in range(nc - 1, -1, -1):
        d2 = d2 * z + 2.0 * d1
        d1 = d1 * z + f
        f = f * z + coef[c0 + k]
    return f, d1, d2


@register
class PolynomialFunction(JointFunction):
    """θ = c0 + c1 x + c2 x² + …; value, gradient and Hessian from `polynomial_jets_py`."""

    type_name: ClassVar[str] = "polynomial"
    attributes: ClassVar[tuple[str, ...]] = ("coefficients",)

    def __init__(self, inputs: Sequence[str], coefficients: Sequence[float]) -> None:
        super().__init__(inputs)
        c = np.array(coefficients, dtype=float).reshape(-1)
        if len(self.inputs) != 1:
            raise ModelError(f"got {len(self.inputs)} inputs", attribute="inputs", expected="exactly one input")
        if len(c) > MAX_COEFFICIENTS:
            raise ModelError(f"{len(c)} coefficients", attribute="coefficients",
                             expected=f"at most {MAX_COEFFICIENTS} coefficients")
        if len(c) < 1 or not np.all(np.isfinite(c)):
            raise ModelError("need at least one finite coefficient", attribute="coefficients",
                             expected="finite numbers c0 c1 ...")
        self.coefficients = tuple(float(v) for v in c)

    @classmethod
    def from_attributes(cls, attributes: Mapping[str, str], inputs: tuple[str, ...],
                        source: SourceRef) -> "PolynomialFunction":
        cls.check_attributes(attributes, inputs, source, exactly=1)
        coefficients = floats(source, attributes, "coefficients", min_count=1, max_count=MAX_COEFFICIENTS)
        return cls(inputs, coefficients)

    def evaluate(self, x: np.ndarray, t: float) -> tuple[float, np.ndarray, np.ndarray]:
        return one_input_jets(*polynomial_jets_py(self.coefficients, 0, len(self.coefficients), float(x[0])))

    def __repr__(self) -> str:
        return f"PolynomialFunction(inputs={self.inputs}, coefficients={list(self.coefficients)})"
