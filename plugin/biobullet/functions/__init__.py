"""Joint-function plugins: θ_joint = f(x, t) with exact gradient and Hessian.

Light on import: the built-in types (and SciPy/SymPy) load on first registry lookup or first access
of a class name below.
"""
from __future__ import annotations

from typing import Any

from biobullet.functions.base import JointFunction
from biobullet.functions.check import DerivativeCheck, check_derivatives
from biobullet.functions.registry import get, names, register

__all__ = ["JointFunction", "register", "get", "names", "check_derivatives", "DerivativeCheck",
           "LinearFunction", "PolynomialFunction", "SplineFunction", "FourierFunction",
           "ExpressionFunction", "fourier_coefficients"]

_LAZY = {"LinearFunction": "linear", "PolynomialFunction": "polynomial", "SplineFunction": "spline",
         "FourierFunction": "fourier", "fourier_coefficients": "fourier",
         "ExpressionFunction": "expression"}


def __getattr__(name: str) -> Any:
    # PEP 562 lazy attributes: `from biobullet.functions import SplineFunction` works without making
    # `import biobullet.functions` import every built-in module.
    if name in _LAZY:
        from importlib import import_module

        return getattr(import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
