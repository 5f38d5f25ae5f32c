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
from biobullet.functions.base import JointFunction
from biobullet.functions.registry import register


def _horner(coefficients: tuple[float, ...], x: float) -> float:
    # Plain-Python Horner: for the short tables used here it beats numpy's call overhead.
    result = 0.0
    for c in reversed(coefficients):
        result = result * x + c
    return result


@register
class PolynomialFunction(JointFunction):
    """θ = c0 + c1 x + c2 x² + …; gradient and Hessian from the differentiated coefficient lists."""

    type_name: ClassVar[str] = "polynomial"
    attributes: ClassVar[tuple[str, ...]] = ("coefficients",)

    def __init__(self, inputs: Sequence[str], coefficients: Sequence[float]) -> None:
        super().__init__(inputs)
        c = np.array(coefficients, dtype=float).reshape(-1)
        if len(self.inputs) != 1:
            raise ModelError(f"got {len(self.inputs)} inputs", attribute="inputs", expected="exactly one input")
        if len(c) < 1 or not np.all(np.isfinite(c)):
            raise ModelError("need at least one finite coefficient", attribute="coefficients",
                             expected="finite numbers c0 c1 ...")
        self.coefficients = tuple(float(v) for v in c)
        k = np.arange(len(c), dtype=float)
        self._d1 = tuple(float(v) for v in (c * k)[1:]) or (0.0,)
        self._d2 = tuple(float(v) for v in (c * k * (k - 1))[2:]) or (0.0,)

    @classmethod
    def from_attributes(cls, attributes: Mapping[str, str], inputs: tuple[str, ...],
                        source: SourceRef) -> "PolynomialFunction":
        cls.check_attributes(attributes, inputs, source, exactly=1)
        coefficients = floats(source, attributes, "coefficients", min_count=1)
        return cls(inputs, coefficients)

    def evaluate(self, x: np.ndarray, t: float) -> tuple[float, np.ndarray, np.ndarray]:
        xv = float(x[0])
        gradient = np.array([_horner(self._d1, xv), 0.0])
        hessian = np.zeros((2, 2))
        hessian[0, 0] = _horner(self._d2, xv)
        return _horner(self.coefficients, xv), gradient, hessian

    def __repr__(self) -> str:
        return f"PolynomialFunction(inputs={self.inputs}, coefficients={list(self.coefficients)})"
