"""Formulations of the reduced equations M(q, t) q̈ + h(q, v, t) = Q, behind one base class and a registry.

Built in: "reduced" (projection through θ = f(q, t) on our batched spatial algorithms), "reduced_recursive"
(the same on our body-frame CRBA/RNEA recursions), "reduced_pinocchio" (the same
projection on Pinocchio's C++ CRBA/RNEA: the fast backend), "matrix_calculus" (paper 000's Kronecker recursion),
"link_segment" (paper 001's per-segment Newton–Euler system; it also offers `forward_dynamics`, a direct solve
that `Model.forward_dynamics` uses when a formulation has one).
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar

import numpy as np

from biobullet.core.errors import ModelError

DEFAULT_FORMULATION = "reduced"
_registry: dict[str, type["Formulation"]] = {}
_instances: dict[str, "Formulation"] = {}


class Formulation(ABC):
    name: ClassVar[str] = ""
    description: ClassVar[str] = ""

    @abstractmethod
    def mass_matrix(self, model, q: np.ndarray, t: float) -> np.ndarray: ...

    @abstractmethod
    def bias_forces(self, model, q: np.ndarray, v: np.ndarray, t: float) -> np.ndarray: ...

    def mass_and_bias(self, model, q: np.ndarray, v: np.ndarray, t: float) -> tuple[np.ndarray, np.ndarray]:
        """(M, h) together; formulations override this to share work between the two."""
        return self.mass_matrix(model, q, t), self.bias_forces(model, q, v, t)


def register_formulation(cls: type[Formulation]) -> type[Formulation]:
    _registry[cls.name] = cls
    return cls


def _load_builtin() -> None:
    from biobullet.dynamics import link_segment, matrix_calculus, reduced  # noqa: F401  (register)
    try:
        from biobullet.dynamics import reduced_pinocchio  # noqa: F401
    except ImportError:  # pinocchio missing: the fast backend is simply unavailable
        pass


def formulation_names() -> list[str]:
    _load_builtin()
    return sorted(_registry)


def get_formulation(name: str | None) -> Formulation:
    name = name or DEFAULT_FORMULATION
    if name not in _instances:
        _load_builtin()
        if name not in _registry:
            raise ModelError(f"unknown formulation {name!r}", argument="formulation",
                             expected="one of " + ", ".join(sorted(_registry)))
        _instances[name] = _registry[name]()
    return _instances[name]
