"""The anthropomorph's support: foot constraints, compliant ground, the constrained solve, the impact map and the
static stance (paper 004). The phase-switching run that uses them is the study's (`biobullet_studies.
anthropomorph_phases.simulate_phases`, on the reference engine's hybrid integrator `integrate.stepper.run_loop`).

Each foot is in one of three states:
  ``free``       no ground force (flight for that leg);
  ``pinned``     holonomic constraint r_A(q) = anchor (`FootConstraint`), multiplier = foot reaction R_A [N],
                 solved with the dynamics by the library's constrained solve (`constrained_accelerations`);
                 constraint drift damped by Baumgarte stabilisation g̈ + 2α ġ + β² g = 0 (α, β owned by the
                 constraint object);
  ``compliant``  a compliant ground contact at the foot point (`CompliantGround`): normal force from a library
                 normal law (`biobullet.contact.normal`, penetration δ = ground − y_A) and friction from a library
                 friction law (`biobullet.contact.friction`, slip = ẋ_A).
A plastic touchdown onto pinned feet is the impact map q̇⁺ = q̇⁻ − M⁻¹Jᵀ(J M⁻¹ Jᵀ)⁻¹ J q̇⁻ (`impact_map`).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import root

from biobullet.contact.base import FrictionLaw, NormalLaw
from biobullet.contact.element import law_potential
from biobullet.contact.friction import Regularized
from biobullet.contact.normal import Flores
from biobullet.constraints.solve import constrained_acceleration
from biobullet.core.errors import ModelError, SolverError
from biobullet.extensible import kinematics as kin
from biobullet.extensible.chain_model import ChainModel

FREE, PINNED, COMPLIANT = "free", "pinned", "compliant"
FOOT_STATES = (FREE, PINNED, COMPLIANT)


@dataclass(frozen=True)
class FootConstraint:
    """Holonomic foot constraint r_A(q) − anchor = 0 with Baumgarte gains (g̈ + 2α ġ + β² g = 0) [1/s]."""

    foot: int
    anchor: tuple[float, float]
    alpha: float = 20.0
    beta: float = 20.0

    def residual(self, model: ChainModel, q: np.ndarray) -> np.ndarray:
        return kin.foot_position(model, q, self.foot) - np.asarray(self.anchor)

    def acceleration_rhs(self, model: ChainModel, q: np.ndarray, v: np.ndarray, J: np.ndarray) -> np.ndarray:
        """Right-hand side γ of J q̈ = γ = −J̇q̇ − 2α J q̇ − β² g."""
        return (-kin.foot_velocity_product(model, q, v, self.foot) - 2.0 * self.alpha * (J @ v)
                - self.beta ** 2 * self.residual(model, q))


@dataclass(frozen=True)
class CompliantGround:
    """Compliant ground y = height under both feet: a library normal law and an optional friction law."""

    normal_law: NormalLaw = field(default_factory=lambda: Flores(stiffness=1.0e6, restitution=0.3))
    friction_law: FrictionLaw | None = field(default_factory=lambda: Regularized(mu=0.8, v0=0.05))
    height: float = 0.0
    foot_lever: float = 0.1   # m: ankle moments on a compliant foot are limited to ± foot_lever · F_N
    release_gap: float = 1e-4  # m: a compliant foot becomes free only this far above the ground (force is 0 there)

    def force(self, model: ChainModel, q: np.ndarray, v: np.ndarray, foot: int,
              impact_velocity: float | None) -> np.ndarray:
        """Ground force on the foot (F_x, F_y) [N]."""
        r = kin.foot_position(model, q, foot)
        rd = kin.foot_jacobian(model, q, foot) @ v
        delta, delta_dot = self.height - r[1], -rd[1]
        vi = impact_velocity if self.normal_law.needs_impact_velocity else None
        fn = float(self.normal_law.force(delta, delta_dot, vi))
        ft = 0.0 if self.friction_law is None else float(self.friction_law.force(float(rd[0]), fn))
        return np.array([ft, fn])

    def potential(self, model: ChainModel, q: np.ndarray, foot: int) -> float:
        return law_potential(self.normal_law, self.height - float(kin.foot_position(model, q, foot)[1]))


Controller = Callable[[float, np.ndarray, np.ndarray, tuple[str, str]], tuple[np.ndarray | None, np.ndarray | None]]


def constrained_accelerations(model: ChainModel, q: np.ndarray, v: np.ndarray, t: float, Q: np.ndarray,
                              constraints: Sequence[FootConstraint]) -> tuple[np.ndarray, np.ndarray]:
    """M q̈ + h = Q + Jᵀ R, J q̈ = γ by the library's constrained solve (`constraints.solve.constrained_acceleration`).
    Returns q̈ and the reactions R, shape (len(constraints), 2) [N] (force of the ground on the foot)."""
    if not constraints:   # flight: the tree's forward dynamics in one call (`ChainModel.forward_dynamics`)
        return model.forward_dynamics(q, v, Q, t), np.zeros((0, 2))
    M, h = model.mass_matrix(q, t), model.bias_forces(q, v, t)
    J = np.vstack([kin.foot_jacobian(model, q, c.foot) for c in constraints])
    gamma = np.concatenate([c.acceleration_rhs(model, q, v, J[2 * i:2 * i + 2]) for i, c in enumerate(constraints)])
    # the whole KKT matrix, not the Schur complement through M⁻¹: M is singular when all links are parallel (the
    # vertical stance: stretching every link about its fixed COM has no inertia) and ill-conditioned near it, the
    # constrained system is not (through M⁻¹ a landing that settles towards the stance took ≈ 10× the evaluations)
    qdd, reactions = constrained_acceleration(M, h, Q, J, gamma, redundant="least_squares", method="kkt")
    return qdd, reactions.reshape(-1, 2)


def impact_map(model: ChainModel, q: np.ndarray, v: np.ndarray, t: float, feet: Sequence[int]) -> tuple[np.ndarray,
                                                                                                         np.ndarray]:
    """Perfectly plastic impact onto the feet `feet`: q̇⁺ = q̇⁻ + M⁻¹JᵀΛ with J q̇⁺ = 0 (the constrained solve with
    M q̇⁺ − M q̇⁻ = JᵀΛ). Returns (q̇⁺, Λ (k, 2) [N·s])."""
    M = model.mass_matrix(q, t)
    J = np.vstack([kin.foot_jacobian(model, q, foot) for foot in feet])
    v_plus, impulses = constrained_acceleration(M, -(M @ v), None, J, np.zeros(len(J)), redundant="least_squares",
                                                method="kkt")
    return v_plus, impulses.reshape(-1, 2)


def stance_configuration(model: ChainModel, *, hip_height: float | None = None) -> np.ndarray:
    """The issue's double-support stance guess: feet at the origin, every link vertical (φ = π/2), rest lengths."""
    n = model.n_links
    L0 = model.rest_lengths
    leg1 = L0[model.chain == 0].sum()
    leg2 = L0[model.chain == 1].sum()
    if hip_height is None and abs(leg1 - leg2) > 1e-12:
        raise ModelError("legs of different rest length cannot both stand vertically at the origin",
                         argument="model")
    return np.concatenate([[0.0, leg1 if hip_height is None else hip_height], np.full(n, np.pi / 2), L0])


@dataclass(frozen=True)
class StaticStance:
    """Static double-support equilibrium: q, foot reactions (2, 2) [N] and signed Δl = l − L0 [m]."""

    q: np.ndarray
    reactions: np.ndarray
    compressions: np.ndarray
    residual: float

    @property
    def hip_height(self) -> float:
        return float(self.q[1])


def static_stance(model: ChainModel, q_guess: np.ndarray | None = None,
                  anchors: Sequence[Sequence[float]] = ((0.0, 0.0), (0.0, 0.0)), tol: float = 1e-10,
                  generalized_force: Callable[[np.ndarray], np.ndarray] | None = None) -> StaticStance:
    """Solve ∂(V_g + V_s)/∂q = Q(q) + Σ J_Aᵀ R_A, r_A(q) = anchor_A (2n+2+4 equations) by a Newton-type root finder
    from `q_guess` (default `stance_configuration`); Q(q) = `generalized_force` (e.g. holding joint moments), 0
    by default."""
    n, N = model.n_links, model.dof
    q0 = stance_configuration(model) if q_guess is None else np.asarray(q_guess, dtype=float)
    zero = np.zeros(N)
    anchors = np.asarray(anchors, dtype=float)

    def residual(z):
        q, R = z[:N], z[N:].reshape(2, 2)
        h = model.bias_forces(q, zero)
        if generalized_force is not None:
            h = h - generalized_force(q)
        for i in range(2):
            h = h - kin.foot_jacobian(model, q, i).T @ R[i]
        g = np.concatenate([kin.foot_position(model, q, i) - anchors[i] for i in range(2)])
        return np.concatenate([h / model.total_mass, g])

    w = model.total_mass * model.gravity / 2.0
    sol = root(residual, np.concatenate([q0, [0.0, w, 0.0, w]]), method="hybr", options={"xtol": 1e-14})
    res = float(np.max(np.abs(residual(sol.x)))) * model.total_mass
    if not np.isfinite(res) or res > tol * model.total_mass * model.gravity * 100:
        raise SolverError(f"static stance did not converge (residual {res:.3g} N)")
    q = sol.x[:N]
    return StaticStance(q, sol.x[N:].reshape(2, 2), q[2 + n:] - model.rest_lengths, res)
