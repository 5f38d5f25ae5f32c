"""Constraint equations Φ(x, t) = 0 the bridge enforces on PyBullet's tree (joint functions, loop closures).

Tree configuration x and velocity ẋ as in `model.tree` (base block first if floating, then θ in URDF order);
Jacobians are n_c × n_tangent, and Φ̈ = Φ_x ẍ + bias(x, ẋ, t).

The loops engineer's `constraints.equations.constraint_set(model, functions=True, loops=True)` provides exactly
this interface. Until it exists (or when a model has no loops), `JointFunctionRows` below implements the
joint-function rows alone:  Φ_k = θ_k − f_k(θ_inputs, t).
"""
from __future__ import annotations

from typing import Protocol

import numpy as np

from biobullet.core.errors import ModelError


class ConstraintRows(Protocol):
    n: int
    names: tuple[str, ...]

    def residual(self, x: np.ndarray, t: float) -> np.ndarray: ...

    def jacobian(self, x: np.ndarray, t: float) -> np.ndarray: ...

    def velocity_bias(self, x: np.ndarray, xd: np.ndarray, t: float) -> np.ndarray: ...

    def time_derivative(self, x: np.ndarray, t: float) -> np.ndarray: ...


class JointFunctionRows:
    """Rows Φ_k = θ_k − f_k(z_k) with z_k = (θ_inputs, t): one per `<joint_function>`.

    Φ_x has +1 at the output joint and −∂f/∂θ_m at each input; Φ_t = −∂f/∂t; the bias is
    −żᵀ H ż with ż = (θ̇_inputs, 1) (H: the function's Hessian over (inputs, t)).
    """

    def __init__(self, model) -> None:
        slot = {name: k for k, name in enumerate(model.joint_names)}
        self.n_tangent = model.n_tangent
        self._xo = 7 if model.floating_base else 0   # offset of θ in x
        self._vo = 6 if model.floating_base else 0   # offset of θ̇ in ẋ
        self._rows = [(slot[f.joint], [slot[i] for i in f.function.inputs], f.function)
                      for f in model.description.joint_functions]
        self.n = len(self._rows)
        self.names = tuple(f"function:{f.joint}" for f in model.description.joint_functions)

    def _jets(self, x: np.ndarray, t: float):
        theta = np.asarray(x, dtype=float)[self._xo:]
        for out, inputs, function in self._rows:
            value, grad, hess = function.evaluate(theta[inputs], t)
            yield out, inputs, theta[out] - value, np.asarray(grad, float), np.asarray(hess, float)

    def residual(self, x: np.ndarray, t: float) -> np.ndarray:
        return np.array([phi for _, _, phi, _, _ in self._jets(x, t)])

    def jacobian(self, x: np.ndarray, t: float) -> np.ndarray:
        jac = np.zeros((self.n, self.n_tangent))
        for row, (out, inputs, _, grad, _) in enumerate(self._jets(x, t)):
            jac[row, self._vo + out] += 1.0
            np.add.at(jac[row], self._vo + np.asarray(inputs, int), -grad[:-1])
        return jac

    def time_derivative(self, x: np.ndarray, t: float) -> np.ndarray:
        return np.array([-grad[-1] for _, _, _, grad, _ in self._jets(x, t)])

    def velocity_bias(self, x: np.ndarray, xd: np.ndarray, t: float) -> np.ndarray:
        theta_dot = np.asarray(xd, dtype=float)[self._vo:]
        out = np.zeros(self.n)
        for row, (_, inputs, _, _, hess) in enumerate(self._jets(x, t)):
            z_dot = np.append(theta_dot[inputs], 1.0)
            out[row] = -(z_dot @ hess @ z_dot)
        return out


class StackedRows:
    """Several row sets stacked (e.g. joint functions + loops)."""

    def __init__(self, parts: list) -> None:
        self.parts = [p for p in parts if p.n]
        self.n = sum(p.n for p in self.parts)
        self.names = tuple(name for p in self.parts for name in p.names)

    def _stack(self, method: str, *args) -> np.ndarray:
        if not self.parts:
            return np.zeros(0)
        return np.concatenate([np.atleast_1d(getattr(p, method)(*args)) for p in self.parts], axis=0)

    def residual(self, x, t):
        return self._stack("residual", x, t)

    def jacobian(self, x, t):
        if not self.parts:
            return np.zeros((0, 0))
        return np.vstack([p.jacobian(x, t) for p in self.parts])

    def time_derivative(self, x, t):
        return self._stack("time_derivative", x, t)

    def velocity_bias(self, x, xd, t):
        return self._stack("velocity_bias", x, xd, t)


def bridge_constraints(model, *, native_loops: bool) -> ConstraintRows:
    """The rows the bridge enforces with forces: joint functions, and loops unless PyBullet closes them natively.

    Uses `constraints.equations.constraint_set` when available (HOOK: switch happens automatically); falls
    back to `JointFunctionRows` for joint functions. A model with loops and neither `constraint_set` nor
    `native_loops=True` is rejected with a ModelError.
    """
    has_loops = bool(model.description.elements_of("loop"))
    try:
        from biobullet.constraints.equations import constraint_set  # type: ignore[import-not-found]
    except ImportError:
        constraint_set = None
    if constraint_set is not None:
        return constraint_set(model, functions=True, loops=has_loops and not native_loops)
    if has_loops and not native_loops:
        raise ModelError("the model has <loop> elements but biobullet.constraints.equations is not available; "
                         "use Bridge(..., native_loops=True) for PyBullet's own point-to-point constraints",
                         file=model.file, element="<loop>", attribute="native_loops")
    return JointFunctionRows(model)
