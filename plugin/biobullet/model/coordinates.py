"""θ = f(q, t): from the independent coordinates q to every joint coordinate θ.

Independent joints copy their q. Dependent joints are evaluated in dependency order; derivatives are
propagated forward by the chain rule so that, exactly,
    θ̇ = G q̇ + ∂f/∂t        θ̈ = G q̈ + γ(q, q̇, t)
where G = ∂θ/∂q and γ collects the Hessian and time terms. Later layers (loop closures) add implicit
dependents through the same `Resolver` protocol.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, Sequence

import numpy as np


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


@dataclass(frozen=True)
class ExplicitFunction:
    """One explicit joint function, indices resolved."""

    output: int
    inputs: tuple[int, ...]
    function: object  # functions.base.JointFunction

    @property
    def outputs(self) -> tuple[int, ...]:
        return (self.output,)

    def resolve(self, jets: CoordinateJets, t: float, need_rates: bool) -> None:
        idx = list(self.inputs)
        value, grad, hess = self.function.evaluate(jets.theta[idx], t)
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
        value, grad, hess = self.function.evaluate(theta[idx], t)
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


class CoordinateMap:
    """Maps independent coordinates q (in `independent` joint order) to all joint coordinates θ."""

    def __init__(self, n_joints: int, independent: Sequence[int], resolvers: Sequence[Resolver]) -> None:
        self.n_joints = n_joints
        self.independent = tuple(independent)
        self.resolvers = tuple(resolvers)
        self.identity = not self.resolvers and self.independent == tuple(range(n_joints))
        self.uses_time = any(getattr(getattr(r, "function", None), "uses_time", True) for r in self.resolvers)

    @property
    def nq(self) -> int:
        return len(self.independent)

    def evaluate(self, q: np.ndarray, t: float, q_dot: np.ndarray | None = None) -> CoordinateJets:
        n, nq = self.n_joints, self.nq
        need_rates = q_dot is not None
        jets = CoordinateJets(np.zeros(n), np.zeros((n, nq)), np.zeros(n), np.zeros(n))
        idx = list(self.independent)
        jets.theta[idx] = q
        jets.gradient[idx, np.arange(nq)] = 1.0
        if need_rates:
            jets.rate[idx] = q_dot
        for resolver in self.resolvers:
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
        idx = list(self.independent)
        theta[idx] = q
        gradient[idx, np.arange(nq)] = 1.0
        for resolver in self.resolvers:
            method = getattr(resolver, "resolve_hessians", None)
            if method is None:
                raise NotImplementedError(f"{type(resolver).__name__} provides no resolve_hessians(); "
                                          "second derivatives of its joints are unavailable")
            method(theta, gradient, hessian, t)
        return theta, gradient, hessian
