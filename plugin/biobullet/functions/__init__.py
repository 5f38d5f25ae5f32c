"""Joint-function plugins: θ_joint = f(x, t) with exact gradient and Hessian.

Light on import: the built-in types (and SciPy/SymPy) load on first registry lookup or first access
of a class name below.
"""
from __future__ import annotations

from biobullet.core.lazy import lazy_attributes
from biobullet.functions.base import JointFunction
from biobullet.functions.check import DerivativeCheck, check_derivatives
from biobullet.functions.registry import get, names, register

__all__ = ["JointFunction", "register", "get", "names", "check_derivatives", "DerivativeCheck",
           "LinearFunction", "PolynomialFunction", "SplineFunction", "FourierFunction",
           "ExpressionFunction", "fourier_coefficients"]

# `from biobullet.functions import SplineFunction` works without `import biobullet.functions` importing every
# built-in module
__getattr__ = lazy_attributes(__name__, {
    "LinearFunction": ".linear", "PolynomialFunction": ".polynomial", "SplineFunction": ".spline",
    "FourierFunction": ".fourier", "fourier_coefficients": ".fourier", "ExpressionFunction": ".expression"})
