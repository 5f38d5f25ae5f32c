"""Linear joint function θ = c + Σ a_i x_i (couplings, shoulder rhythms, URDF <mimic>).

XML: ``<joint_function joint="J" type="linear" inputs="A B" coefficients="a b" offset="c"/>``
(offset optional, default 0). Units follow the coordinates: rad per rad (or m per m / rad per m).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar

import numpy as np

from biobullet.core.errors import ModelError, SourceRef
from biobullet.core.attributes import floats, number
from biobullet.functions.base import JointFunction
from biobullet.functions.registry import register


def linear_jets_py(coef, c0, n, values, base, inputs, i0):
    """θ = offset + Σ_k a_k z_k with a = coef[c0 : c0 + n], the offset coef[c0 + n], and z_k = values[base +
    inputs[i0 + k]] (the function's inputs gathered from a state vector). Its gradient is a and its Hessian zero.
    The type's one implementation: `evaluate` runs it in Python, the compiled joint jets (`model.joint_jets`)
    inline it."""
    value = coef[c0 + n]
    for k in range(n):
        value += coef[c0 + k] * values[base + inputs[i0 + k]]
    return value


@register
class LinearFunction(JointFunction):
    """θ = offset + coefficients · x; gradient constant, Hessian zero."""

    type_name: ClassVar[str] = "linear"
    attributes: ClassVar[tuple[str, ...]] = ("coefficients", "offset")

    def __init__(self, inputs: Sequence[str], coefficients: Sequence[float], offset: float = 0.0) -> None:
        super().__init__(inputs)
        coefficients = np.array(coefficients, dtype=float).reshape(-1)
        if len(coefficients) != len(self.inputs) or not self.inputs:
            raise ModelError(f"{len(coefficients)} coefficient(s) for {len(self.inputs)} input(s)",
                             attribute="coefficients", expected="one coefficient per input, at least one")
        if not (np.all(np.isfinite(coefficients)) and np.isfinite(offset)):
            raise ModelError("non-finite coefficient or offset", attribute="coefficients",
                             expected="finite numbers")
        coefficients.flags.writeable = False
        self.coefficients = coefficients
        self.offset = float(offset)
        n = len(self.inputs)
        #: the parameters of `linear_jets_py`: the coefficients, then the offset
        self.jet_parameters = (*(float(a) for a in coefficients), self.offset)
        self._positions = tuple(range(n))
        # Precomputed once: the jet of a linear map does not depend on (x, t).
        self._gradient = np.append(coefficients, 0.0)
        self._gradient.flags.writeable = False
        self._hessian = np.zeros((n + 1, n + 1))
        self._hessian.flags.writeable = False

    @classmethod
    def from_attributes(cls, attributes: Mapping[str, str], inputs: tuple[str, ...],
                        source: SourceRef) -> "LinearFunction":
        cls.check_attributes(attributes, inputs, source, at_least=1)
        coefficients = floats(source, attributes, "coefficients", count=len(inputs))
        offset = number(source, attributes, "offset", 0.0)
        return cls(inputs, coefficients, offset)

    @classmethod
    def mimic(cls, joint: str, multiplier: float = 1.0, offset: float = 0.0) -> "LinearFunction":
        """URDF ``<mimic joint=.. multiplier=.. offset=..>``: θ = multiplier · θ_joint + offset."""
        return cls((joint,), (float(multiplier),), float(offset))

    def evaluate(self, x: np.ndarray, t: float) -> tuple[float, np.ndarray, np.ndarray]:
        value = linear_jets_py(self.jet_parameters, 0, len(self._positions), x, 0, self._positions, 0)
        return float(value), self._gradient.copy(), self._hessian.copy()

    def __repr__(self) -> str:
        return (f"LinearFunction(inputs={self.inputs}, coefficients={self.coefficients.tolist()}, "
                f"offset={self.offset})")
