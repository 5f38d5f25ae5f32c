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
        """Index arrays for the function rows, built once (the rows are evaluated every bridge step).

        Linear functions (couplings, rhythms, mimics) have a constant Jacobian row, zero Φ_t and zero bias:
        their values come from one gather + row sum, their Jacobian rows from a precomputed template.
        Every other function is evaluated by its plugin (one call per row and step) and scattered with
        precomputed (row, column) index arrays; its jet is cached for the last (x, t) so the bridge's second
        pass (velocity bias after the velocity projection, same x and t) costs no plugin call.
        """
        from biobullet.functions.linear import LinearFunction
        nf, ov = len(self.functions), self._ov
        self._f_out = np.array([out for out, _, _ in self.functions], dtype=np.intp)
        linear = [r for r, (_, _, f) in enumerate(self.functions) if type(f) is LinearFunction]
        other = [r for r in range(nf) if r not in set(linear)]
        width = max([len(self.functions[r][1]) for r in linear], default=0)
        self._lin_rows = np.array(linear, dtype=np.intp)
        self._lin_idx = np.zeros((len(linear), width), dtype=np.intp)
        self._lin_coef = np.zeros((len(linear), width))
        self._lin_offset = np.array([self.functions[r][2].offset for r in linear], dtype=float)
        template = np.zeros((nf, self.n_tangent))
        for k, r in enumerate(linear):
            out, inputs, function = self.functions[r]
            self._lin_idx[k, :len(inputs)] = inputs
            self._lin_coef[k, :len(inputs)] = function.coefficients
            template[r, ov + out] = 1.0
            for c, i in zip(function.coefficients, inputs):
                template[r, ov + i] -= c
        for r in other:
            template[r, ov + self.functions[r][0]] = 1.0
        self._jac_template = template
        self._other = tuple((r, np.array(self.functions[r][1], dtype=np.intp), self.functions[r][2]) for r in other)
        rows = [r for r, idx, _ in self._other for _ in idx]
        cols = [ov + i for _, idx, _ in self._other for i in idx]
        self._other_rows = np.array(rows, dtype=np.intp)
        self._other_cols = np.array(cols, dtype=np.intp)
        self._other_unique = len(set(zip(rows, cols))) == len(rows)
        self._other_index = np.array([r for r, _, _ in self._other], dtype=np.intp)
        self._jet_cache: tuple = (None, [])
        # non-linear rows of explicit types (polynomial, spline, Fourier, expression, with the linear ones): one
        # compiled call for every function row (`model.joint_jets`); plug-in types keep the per-row path
        from biobullet.model.joint_jets import function_table
        self._table = function_table(self.functions) if self._other else None
        # every row linear (no loops, only linear functions): Φ = A θ − c with constant A and c
        self._linear = None
        if not self.loops and not self._other:
            offset = np.zeros(nf)
            offset[self._lin_rows] = self._lin_offset
            a = np.ascontiguousarray(template[:, ov:])
            a.flags.writeable = False
            offset.flags.writeable = False
            self._linear = (a, offset)

    def linear_form(self):
        """(A, c) with Φ(x, t) = A θ − c (θ: the joint coordinates, x without a base block; A n × n_joints) if
        every row is linear and time-free (linear joint functions, no loops): then Φ_x = [0 | A], Φ_t = 0 and
        the bias is 0. None otherwise. The arrays are read-only."""
        return self._linear

    def _other_jets(self, theta: np.ndarray, t: float) -> list:
        """[(value, gradient, Hessian)] of the non-linear functions at (θ, t), cached for the last call."""
        key = (float(t), theta.tobytes())
        cached_key, jets = self._jet_cache
        if key != cached_key:
            jets = [function.evaluate(theta[idx], t) for _, idx, function in self._other]
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
        phi = theta[self._f_out].copy()
        if len(self._lin_rows):
            phi[self._lin_rows] -= self._lin_offset + (self._lin_coef * theta[self._lin_idx]).sum(axis=1)
        jac = self._jac_template.copy() if jacobian else None
        phi_t, bias = np.zeros(nf), np.zeros(nf)
        if self._other:
            jets = self._other_jets(theta, t)
            rate = None if xd is None else xd[self._ov:]
            for (row, idx, _), (value, grad, hess) in zip(self._other, jets):
                phi[row] -= value
                phi_t[row] = -grad[-1]
                if rate is not None:
                    z_dot = np.empty(len(idx) + 1)
                    z_dot[:-1] = rate[idx]
                    z_dot[-1] = 1.0
                    bias[row] = -(z_dot @ hess @ z_dot)
            if jacobian and len(self._other_rows):
                grads = np.concatenate([np.asarray(grad, dtype=float)[:-1] for _, grad, _ in jets])
                if self._other_unique:
                    jac[self._other_rows, self._other_cols] -= grads
                else:
                    np.subtract.at(jac, (self._other_rows, self._other_cols), grads)
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
