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

from biobullet.constraints.loops import Loop, loop_terms, parse_loops

_SETS = "equations.constraint_sets"   # key of the model's constraint sets in `Model.derived`


class ConstraintSet:
    """Stacked constraint rows of one model (immutable; obtain with `constraint_set(model)`)."""

    def __init__(self, model, *, functions: bool = True, loops: bool = True) -> None:
        self._model = weakref.ref(model)
        description = model.description
        slot = {name: k for k, name in enumerate(model.joint_names)}
        self._oq = model.base_nq   # floating base and multi-DOF joints come first
        self._ov = model.base_nv
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
        self._prepare_functions()

    @property
    def model(self):
        return self._model()

    def _prepare_functions(self) -> None:
        """What the function rows need, built once (the rows are evaluated every bridge step): the compiled rows'
        table where a function is not linear (`model.joint_jets`; one compiled call for every row; None for
        plug-in types without compiled jets, which take the per-row path), and the constant form of a set of
        linear rows alone (`linear_form`)."""
        from biobullet.functions.linear import LinearFunction
        from biobullet.model.joint_jets import function_table
        self._f_out = np.array([out for out, _, _ in self.functions], dtype=np.intp)
        self._inputs = tuple(np.array(inputs, dtype=np.intp) for _, inputs, _ in self.functions)
        self._jet_cache: tuple = (None, [])
        linear = all(type(f) is LinearFunction for _, _, f in self.functions)
        self._table = None if linear else function_table(self.functions)
        # every row linear (no loops, only linear functions): Φ = A θ − c with constant A and c
        self._linear = None
        if linear and self.functions and not self.loops:
            a = np.zeros((len(self.functions), self.n_tangent - self._ov))
            offset = np.array([f.offset for _, _, f in self.functions], dtype=float)
            for r, (out, inputs, f) in enumerate(self.functions):
                a[r, out] = 1.0
                np.subtract.at(a[r], list(inputs), f.coefficients)
            a.flags.writeable = False
            offset.flags.writeable = False
            self._linear = (a, offset)

    def linear_form(self):
        """(A, c) with Φ(x, t) = A θ − c (θ: the joint coordinates, x without a base block; A n × n_joints) if
        every row is linear and time-free (linear joint functions, no loops): then Φ_x = [0 | A], Φ_t = 0 and
        the bias is 0. None otherwise. The arrays are read-only."""
        return self._linear

    def _jets(self, theta: np.ndarray, t: float) -> list:
        """[(value, gradient, Hessian)] of every function at (θ, t), each from its own `evaluate`, cached for the
        last call (the bridge's second pass, the velocity bias after the projection, has the same θ and t)."""
        key = (float(t), theta.tobytes())
        cached_key, jets = self._jet_cache
        if key != cached_key:
            jets = [function.evaluate(theta[idx], t) for idx, (_, _, function) in zip(self._inputs, self.functions)]
            self._jet_cache = (key, jets)   # one assignment: key and jets never disagree
        return jets

    def _function_rows(self, x: np.ndarray, t: float, xd: np.ndarray | None, jacobian: bool = True):
        """(values, jacobian, Φ_t, bias) of the function rows (jacobian None if not asked)."""
        nf = len(self.functions)
        if not nf:
            return (np.zeros(0), np.zeros((0, self.n_tangent)) if jacobian else None, np.zeros(0),
                    np.zeros(0))
        if self._table is not None and len(x) == self._oq + self.n_tangent - self._ov:
            rows = self._compiled_rows(x, t, xd, jacobian)
            if rows is not None:
                return rows
            # a function's jets are not finite: the per-row path below raises its clear EvaluationError
        theta = x[self._oq:]
        rate = None if xd is None else xd[self._ov:]
        phi = theta[self._f_out].copy()
        jac = np.zeros((nf, self.n_tangent)) if jacobian else None
        phi_t, bias = np.zeros(nf), np.zeros(nf)
        for row, (idx, (value, grad, hess)) in enumerate(zip(self._inputs, self._jets(theta, t))):
            phi[row] -= value
            phi_t[row] = -grad[-1]
            if jacobian:
                jac[row, self._ov + self._f_out[row]] = 1.0
                np.subtract.at(jac[row], self._ov + idx, grad[:-1])
            if rate is not None:
                z_dot = np.append(rate[idx], 1.0)
                bias[row] = -(z_dot @ hess @ z_dot)
        return phi, jac, phi_t, bias

    def _compiled_rows(self, x: np.ndarray, t: float, xd: np.ndarray | None, jacobian: bool):
        """`_function_rows` in one call of `model.joint_jets.function_rows` (compiled with numba); None when a
        function's jets are not finite."""
        from biobullet.model.joint_jets import function_rows
        nf = len(self.functions)
        phi, jac, phi_t, bias = np.empty(nf), np.empty((nf, self.n_tangent)), np.empty(nf), np.empty(nf)
        rate = np.zeros(self.n_tangent) if xd is None else np.ascontiguousarray(xd, dtype=float)
        if function_rows(*self._table, t, self._oq, self._ov, np.ascontiguousarray(x, dtype=float), rate, phi, jac,
                         phi_t, bias) < 0.0:
            return None
        if xd is None:
            bias[:] = 0.0
        return phi, (jac if jacobian else None), phi_t, bias

    def _evaluate(self, x, t, xd=None, *, jacobian=True):
        x = np.asarray(x, dtype=float)
        f_phi, f_jac, f_t, f_bias = self._function_rows(x, t, xd, jacobian)
        if self.loops:
            l_phi, l_jac, l_bias = loop_terms(self.model, self.loops, x, xd, jacobian=jacobian)
        else:
            l_phi, l_jac, l_bias = np.zeros(0), np.zeros((0, self.n_tangent)), np.zeros(0)
        phi = np.concatenate([f_phi, l_phi]) if self.loops else f_phi
        jac = (np.vstack([f_jac, l_jac]) if self.loops else f_jac) if jacobian else None
        if xd is None:
            bias = None
        else:
            bias = np.concatenate([f_bias, l_bias]) if self.loops else f_bias
        phi_t = np.concatenate([f_t, np.zeros(len(l_phi))]) if self.loops else f_t
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
    per_model = model.derived.setdefault(_SETS, {})
    key = (functions, loops)
    if key not in per_model:
        per_model[key] = ConstraintSet(model, functions=functions, loops=loops)
    return per_model[key]
