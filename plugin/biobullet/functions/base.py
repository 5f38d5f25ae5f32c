"""Base class of joint-function plugins: θ_joint = f(x, t).

x are the values of the function's *input* joint coordinates (by name, in `inputs` order) and t is time.
A plugin returns the value together with its exact first and second derivatives with respect to the
extended argument z = (x_1, …, x_n, t): gradient shape (n+1,), Hessian shape (n+1, n+1), t last.
The model layer composes these jets (chain rule) into θ = f(q, t), G = ∂θ/∂q and γ so that
θ̇ = G q̇ + f_t and θ̈ = G q̈ + γ hold exactly.
Units: SI, angles in radians.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import ClassVar

import numpy as np

from biobullet.core.errors import SourceRef


#: attributes every <joint_function> element may carry, whatever its type
COMMON_ATTRIBUTES: tuple[str, ...] = ("joint", "type", "inputs")


class JointFunction(ABC):
    """One explicit joint function. Subclasses are immutable after construction."""

    type_name: ClassVar[str] = ""
    #: attribute names this type understands besides the common ones ('joint', 'type', 'inputs')
    attributes: ClassVar[tuple[str, ...]] = ()

    def __init__(self, inputs: Sequence[str]) -> None:
        self.inputs: tuple[str, ...] = tuple(inputs)

    @classmethod
    @abstractmethod
    def from_attributes(cls, attributes: Mapping[str, str], inputs: tuple[str, ...],
                        source: SourceRef) -> "JointFunction":
        """Build from the XML attributes; raise `source.error(attribute, message, expected)` on bad input."""

    @abstractmethod
    def evaluate(self, x: np.ndarray, t: float) -> tuple[float, np.ndarray, np.ndarray]:
        """Value, gradient (n+1,) and Hessian (n+1, n+1) with respect to (x, t)."""

    @property
    def uses_time(self) -> bool:
        """True if the value depends on t (drivers); lets the model skip time terms otherwise."""
        return False

    def value(self, x: np.ndarray, t: float = 0.0) -> float:
        return self.evaluate(np.asarray(x, dtype=float), t)[0]

    def __repr__(self) -> str:
        return f"{type(self).__name__}(inputs={self.inputs})"
