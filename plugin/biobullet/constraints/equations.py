"""All holonomic constraints of a model over the FULL tree coordinates x: Φ(x, t) = 0.

Used by the multipliers (DAE) formulation and the PyBullet bridge. Rows, in this order:
  joint functions   θ_d − f(z, t) = 0, z = the function's input joint angles (rad or m);
  loops             see constraints.loops (m, or direction cosines for revolute axis rows).
Derivatives: Φ̇ = Φ_x ẋ + Φ_t, Φ̈ = Φ_x ẍ + bias(x, ẋ, t), where bias holds every velocity-product and
explicit-time term (for a function row: −ż ᵀ ∇²f ż with ż = (θ̇_inputs, 1)).
"""
from __future__ import annotations

import weakref

import numpy as np

from .loops import Loop, loop_terms, parse_loops

_cache: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


class ConstraintSet:
    """Stacked constraint rows of one model (immutable; obtain with `constraint_set(model)`)."""

    def __init__(self, model, *, functions: bool = True, loops: bool = True) -> None:
        self._model = weakref.ref(model)
        description = model.description
        slot = {name: k for k, name in enumerate(model.joint_names)}
        self._oq = 7 if model.floating_base else 0
        self._ov = 6 if model.floating_base else 0
        self.functions = tuple((slot[f.joint], tuple(slot[i] for i in f.function.inputs), f.function)
                               for f in description.joint_functions) if functions else ()
        self.loops: tuple[Loop, ...] = parse_loops(description, model.link_names) if loops else ()
        names = [f"{model.joint_names[out]}.function" for out, _, _ in self.functions]
        self.row_slices: dict[str, slice] = {}
        row = len(self.functions)
        for loop in self.loops:
            self.row_slices[loop.name] = slice(row, row + loop.n_equations)
            names.extend(loop.row_names)
            row += loop.n_equations
        self.names: tuple[str, ...] = tuple(names)
        self.n = len(names)
        self.n_tangent = model.n_tangent

    @property
    def model(self):
        return self._model()

    def _function_rows(self, x: np.ndarray, t: float, xd: np.ndarray | None):
        """(values, jacobian, Φ_t, bias) of the function rows."""
        nf = len(self.functions)
        phi, jac = np.zeros(nf), np.zeros((nf, self.n_tangent))
        phi_t, bias = np.zeros(nf), np.zeros(nf)
        theta = x[self._oq:]
        rate = None if xd is None else xd[self._ov:]
        for row, (out, inputs, function) in enumerate(self.functions):
            idx = list(inputs)
            value, grad, hess = function.evaluate(theta[idx], t)
            phi[row] = theta[out] - value
            jac[row, self._ov + out] = 1.0
            for k, i in enumerate(inputs):
                jac[row, self._ov + i] -= grad[k]
            phi_t[row] = -grad[-1]
            if rate is not None:
                z_dot = np.append(rate[idx], 1.0)
                bias[row] = -(z_dot @ hess @ z_dot)
        return phi, jac, phi_t, bias

    def _evaluate(self, x, t, xd=None, *, jacobian=True):
        x = np.asarray(x, dtype=float)
        f_phi, f_jac, f_t, f_bias = self._function_rows(x, t, xd)
        if self.loops:
            l_phi, l_jac, l_bias = loop_terms(self.model, self.loops, x, xd, jacobian=jacobian)
        else:
            l_phi, l_jac, l_bias = np.zeros(0), np.zeros((0, self.n_tangent)), np.zeros(0)
        phi = np.concatenate([f_phi, l_phi])
        jac = np.vstack([f_jac, l_jac]) if jacobian else None
        bias = np.concatenate([f_bias, l_bias]) if xd is not None else None
        phi_t = np.concatenate([f_t, np.zeros(len(l_phi))])
        return phi, jac, phi_t, bias

    def residual(self, x, t: float = 0.0) -> np.ndarray:
        """Φ(x, t) (n)."""
        return self._evaluate(x, t, jacobian=False)[0]

    def jacobian(self, x, t: float = 0.0) -> np.ndarray:
        """Φ_x (n × n_tangent), columns in the velocity (tangent) coordinates ẋ."""
        return self._evaluate(x, t)[1]

    def time_derivative(self, x, t: float = 0.0) -> np.ndarray:
        """Φ_t (n): explicit time dependence of drivers (zero for loops and time-free functions)."""
        return self._evaluate(x, t, jacobian=False)[2]

    def velocity_bias(self, x, xd, t: float = 0.0) -> np.ndarray:
        """bias such that Φ̈ = Φ_x ẍ + bias (velocity products and explicit-time terms)."""
        return self._evaluate(x, t, np.asarray(xd, dtype=float), jacobian=False)[3]

    def all_terms(self, x, xd=None, t: float = 0.0):
        """(Φ, Φ_x, Φ_t, bias) in one pass (bias None without ẋ)."""
        return self._evaluate(x, t, None if xd is None else np.asarray(xd, dtype=float))

    def __repr__(self) -> str:
        return f"ConstraintSet(n={self.n}, functions={len(self.functions)}, loops={len(self.loops)})"


def constraint_set(model, *, functions: bool = True, loops: bool = True) -> ConstraintSet:
    """The (cached, per model) constraint rows of `model`."""
    per_model = _cache.setdefault(model, {})
    key = (functions, loops)
    if key not in per_model:
        per_model[key] = ConstraintSet(model, functions=functions, loops=loops)
    return per_model[key]
