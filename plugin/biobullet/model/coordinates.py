"""θ = f(q, t): from the independent coordinates q to every joint coordinate θ.

Independent joints copy their q. Dependent joints are evaluated in dependency order; derivatives are
propagated forward by the chain rule so that, exactly,
    θ̇ = G q̇ + ∂f/∂t        θ̈ = G q̈ + γ(q, q̇, t)
where G = ∂θ/∂q and γ collects the Hessian and time terms. Later layers (loop closures) add implicit
dependents through the same `Resolver` protocol.
"""
from __future__ import annotations

from dataclasses import dataclass
from math import isfinite as _isfinite
from typing import Protocol, Sequence

import numpy as np

from biobullet.core.errors import EvaluationError


class Resolver(Protocol):
    """Fills the jets of some dependent joints given those of their inputs (in place).

    Resolvers used by second-order formulations (matrix_calculus) also provide
    `resolve_hessians(theta, gradient, hessian, t)`: see `CoordinateMap.evaluate_hessians`.
    """

    outputs: tuple[int, ...]

    def resolve(self, jets: "CoordinateJets", t: float, need_rates: bool) -> None: ...


@dataclass
class CoordinateJets:
    """Joint values θ (n), G (n × nq), θ̇ (n) and γ (n); θ̇ and γ only if rates were requested."""

    theta: np.ndarray
    gradient: np.ndarray
    rate: np.ndarray
    gamma: np.ndarray


def checked_evaluate(function, x: np.ndarray, t: float, source=None) -> tuple[float, np.ndarray, np.ndarray]:
    """`function.evaluate(x, t)` whose value, gradient and Hessian are finite; otherwise an EvaluationError
    naming the function (and, given its `source`, the file and element), its inputs and the time (never a NaN
    passed on into the dynamics)."""
    try:
        with np.errstate(all="ignore"):
            value, grad, hess = function.evaluate(x, t)
            finite = _isfinite(value) and _isfinite(float(np.sum(grad)) + float(np.sum(hess)))
        detail = f"value {value:.6g}" if not _isfinite(value) else "a derivative is not finite"
    except (ArithmeticError, ValueError) as exc:
        finite, detail = False, f"undefined: outside its domain or at a pole ({type(exc).__name__}: {exc})"
    if not finite:
        names = getattr(function, "inputs", ())
        inputs = ", ".join(f"{n} = {float(v):.6g}" for n, v in zip(names, x)) or "no inputs"
        where = f"{source.file}: {source.element}: " if source is not None else ""
        raise EvaluationError(f"{where}joint function {function!r} is undefined or not finite at "
                              f"t = {float(t):.9g} s ({inputs}): {detail}")
    return value, grad, hess


@dataclass(frozen=True)
class ExplicitFunction:
    """One explicit joint function, indices resolved."""

    output: int
    inputs: tuple[int, ...]
    function: object  # functions.base.JointFunction
    source: object = None   # core.errors.SourceRef of its <joint_function> (or <mimic>), named by a failed evaluation

    @property
    def outputs(self) -> tuple[int, ...]:
        return (self.output,)

    def resolve(self, jets: CoordinateJets, t: float, need_rates: bool) -> None:
        idx = list(self.inputs)
        value, grad, hess = checked_evaluate(self.function, jets.theta[idx], t, self.source)
        jets.theta[self.output] = value
        jets.gradient[self.output] = grad[:-1] @ jets.gradient[idx]
        if need_rates:
            z_dot = np.append(jets.rate[idx], 1.0)
            jets.rate[self.output] = grad @ z_dot
            jets.gamma[self.output] = grad[:-1] @ jets.gamma[idx] + z_dot @ hess @ z_dot

    def resolve_hessians(self, theta: np.ndarray, gradient: np.ndarray, hessian: np.ndarray | None,
                         t: float) -> None:
        """Fill value, gradient and (unless None) Hessian over q̃ = (q, t) of the output, in place."""
        idx = list(self.inputs)
        value, grad, hess = checked_evaluate(self.function, theta[idx], t, self.source)
        # input jets over q̃: z = (θ_inputs, t), dz/dq̃ = [G_inputs; e_t], d²z/dq̃² = [H_inputs; 0]
        z_grad = np.zeros((len(idx) + 1, gradient.shape[1]))
        z_grad[:-1] = gradient[idx]
        z_grad[-1, -1] = 1.0
        theta[self.output] = value
        gradient[self.output] = grad @ z_grad
        if hessian is not None:
            size = hessian.shape[1] * hessian.shape[2]
            chained = grad[:-1] @ hessian[idx].reshape(len(idx), size)  # Σ_m ∂f/∂z_m · H(z_m)
            hessian[self.output] = z_grad.T @ hess @ z_grad + chained.reshape(hessian.shape[1:])


class LinearBlock:
    """Consecutive explicit *linear* joint functions fused into one map (same Resolver protocol):
    θ[outputs] = C θ[inputs] + d, with C and d composed at build time (a function of the block may take an
    earlier output of the block as input). G, θ̇ and γ follow with one matrix product each (Hessian zero)."""

    def __init__(self, functions: Sequence[ExplicitFunction]) -> None:
        self.functions = tuple(functions)
        produced: dict[int, tuple[dict[int, float], float]] = {}
        external: list[int] = []
        for f in self.functions:
            row: dict[int, float] = {}
            const = float(f.function.offset)
            for joint, coefficient in zip(f.inputs, f.function.coefficients):
                if joint in produced:
                    inner, inner_const = produced[joint]
                    for k, c in inner.items():
                        row[k] = row.get(k, 0.0) + float(coefficient) * c
                    const += float(coefficient) * inner_const
                else:
                    if joint not in external:
                        external.append(joint)
                    row[joint] = row.get(joint, 0.0) + float(coefficient)
            produced[f.output] = (row, const)
        self.outputs: tuple[int, ...] = tuple(f.output for f in self.functions)
        self.inputs: tuple[int, ...] = tuple(external)
        position = {joint: k for k, joint in enumerate(external)}
        self.matrix = np.zeros((len(self.outputs), len(external)))
        self.offset = np.zeros(len(self.outputs))
        for r, out in enumerate(self.outputs):
            row, const = produced[out]
            for joint, c in row.items():
                self.matrix[r, position[joint]] = c
            self.offset[r] = const
        self._out = np.array(self.outputs, dtype=np.intp)
        self._in = np.array(self.inputs, dtype=np.intp)
        self.uses_time = False

    def resolve(self, jets: CoordinateJets, t: float, need_rates: bool) -> None:
        c, inp, out = self.matrix, self._in, self._out
        jets.theta[out] = c @ jets.theta[inp] + self.offset
        jets.gradient[out] = c @ jets.gradient[inp]
        if need_rates:
            jets.rate[out] = c @ jets.rate[inp]
            jets.gamma[out] = c @ jets.gamma[inp]

    def resolve_hessians(self, theta: np.ndarray, gradient: np.ndarray, hessian: np.ndarray | None,
                         t: float) -> None:
        c, inp, out = self.matrix, self._in, self._out
        theta[out] = c @ theta[inp] + self.offset
        gradient[out] = c @ gradient[inp]
        if hessian is not None:
            shape = hessian.shape[1:]
            hessian[out] = (c @ hessian[inp].reshape(len(inp), -1)).reshape((len(out),) + shape)


def _is_linear(resolver) -> bool:
    from biobullet.functions.linear import LinearFunction
    return isinstance(resolver, ExplicitFunction) and type(resolver.function) is LinearFunction


def _fuse_linear(resolvers: Sequence[Resolver]) -> tuple:
    """Evaluation plan: runs of consecutive linear explicit functions become one LinearBlock each."""
    plan: list = []
    run: list = []
    for resolver in resolvers:
        if _is_linear(resolver):
            run.append(resolver)
            continue
        if run:
            plan.append(LinearBlock(run) if len(run) > 1 else run[0])
            run = []
        plan.append(resolver)
    if run:
        plan.append(LinearBlock(run) if len(run) > 1 else run[0])
    return tuple(plan)


def readonly(array: np.ndarray) -> np.ndarray:
    """`array`, made read-only (shared arrays the callers must not modify)."""
    array.setflags(write=False)
    return array


_FINITE_WEIGHTS: dict[int, np.ndarray] = {}


def finite_weights(size: int) -> np.ndarray:
    """Read-only weights 1e-300 of length `size`: x·w is finite for finite x (no overflow possible), NaN or ±inf
    otherwise — a whole vector's finiteness in one dot product."""
    weights = _FINITE_WEIGHTS.get(size)
    if weights is None:
        weights = _FINITE_WEIGHTS[size] = readonly(np.full(size, 1e-300))
    return weights


class CoordinateMap:
    """Maps independent coordinates q (in `independent` joint order) to all joint coordinates θ.

    `kind` is "identity" (θ = q), "affine" (only linear joint functions: θ = A q + b with constant A = G, γ = 0;
    `affine_matrix`, `affine_offset`) or "general" (resolvers evaluated in order, linear runs fused).
    """

    def __init__(self, n_joints: int, independent: Sequence[int], resolvers: Sequence[Resolver]) -> None:
        self.n_joints = n_joints
        self.independent = tuple(independent)
        self.resolvers = tuple(resolvers)
        self.identity = not self.resolvers and self.independent == tuple(range(n_joints))
        self.uses_time = any(getattr(getattr(r, "function", None), "uses_time", True) for r in self.resolvers)
        nq = len(self.independent)
        self._plan = _fuse_linear(self.resolvers)
        self._idx = np.array(self.independent, dtype=np.intp)
        self._eye_cols = np.arange(nq)
        self.affine_matrix = self.affine_offset = None
        if self.identity:
            self.kind = "identity"
        elif all(_is_linear(r) for r in self.resolvers):
            self.kind = "affine"
            # θ = A q + b: evaluate the plan on the unit columns once
            theta, gradient, _ = self.evaluate_hessians(np.zeros(nq), 0.0, with_hessian=False)
            self.affine_matrix = readonly(np.ascontiguousarray(gradient[:, :nq]))
            self.affine_offset = readonly(theta.copy())
        else:
            self.kind = "general"
        self._eye = readonly(np.eye(n_joints)) if self.identity else None

    @property
    def nq(self) -> int:
        return len(self.independent)

    def evaluate(self, q: np.ndarray, t: float, q_dot: np.ndarray | None = None) -> CoordinateJets:
        n = self.n_joints
        need_rates = q_dot is not None
        if self.kind == "identity":
            return CoordinateJets(np.array(q, dtype=float), self._eye.copy(),
                                  np.array(q_dot, dtype=float) if need_rates else np.zeros(n), np.zeros(n))
        if self.kind == "affine":
            a = self.affine_matrix
            return CoordinateJets(a @ q + self.affine_offset, a.copy(), a @ q_dot if need_rates else np.zeros(n),
                                  np.zeros(n))
        nq = len(self.independent)
        jets = CoordinateJets(np.zeros(n), np.zeros((n, nq)), np.zeros(n), np.zeros(n))
        idx = self._idx
        jets.theta[idx] = q
        jets.gradient[idx, self._eye_cols] = 1.0
        if need_rates:
            jets.rate[idx] = q_dot
        for resolver in self._plan:
            resolver.resolve(jets, t, need_rates)
        return jets

    def evaluate_hessians(self, q: np.ndarray, t: float, *, with_hessian: bool = True
                          ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """θ (n), gradient (n × (nq+1)) and Hessian (n × (nq+1) × (nq+1)) over the extended q̃ = (q, t).

        Time is the last coordinate, so with q̃̇ = (q̇, 1) and q̃̈ = (q̈, 0):
        θ̇ = ∇θ · q̃̇ and θ̈ = ∇θ · q̃̈ + q̃̇ᵀ H q̃̇ exactly, drivers' ∂f/∂t and ∂²f/∂t∂q included.
        Resolvers provide `resolve_hessians(theta, gradient, hessian, t)` (in place, like `resolve`; hessian None
        when `with_hessian` is False, then the Hessian returned is None too).
        """
        n, nq = self.n_joints, self.nq
        theta, gradient = np.zeros(n), np.zeros((n, nq + 1))
        hessian = np.zeros((n, nq + 1, nq + 1)) if with_hessian else None
        idx = self._idx
        theta[idx] = q
        gradient[idx, self._eye_cols] = 1.0
        for resolver in self._plan:
            method = getattr(resolver, "resolve_hessians", None)
            if method is None:
                raise NotImplementedError(f"{type(resolver).__name__} provides no resolve_hessians(); "
                                          "second derivatives of its joints are unavailable")
            method(theta, gradient, hessian, t)
        return theta, gradient, hessian
