"""Momentum-based inverse dynamics for the extensible anthropomorph in support (used by the paper-004 jump).

In support the ground reaction R_A on each supporting foot is the only external force besides gravity, and the
ankle moments a (ground on the foot link) the only external moments, so — exactly, whatever the joint moments do —

    m a_G = Σ R_A + m g,                 L̇_G = Σ (r_A − G) × R_A + Σ a          (z components, CCW positive).

A take-off with L_G = 0 and ẋ_G = 0 therefore needs, during the push-off, a reaction line through the COM and no net
ankle moment; a landing that settles needs a reaction that brakes the COM. `support_inverse_dynamics` finds the
joint moments τ and ankle moments a that realise such COM / angular-momentum accelerations (plus a posture PD for
the remaining freedom) for the model with its supporting feet held on the ground:

    unknowns  z = (q̈ [2n+2], R [2k], τ [n−1], a [2])
    exactly   M q̈ + h = Bᵀτ + S_aᵀa + Σ J_Aᵀ R_A,   J_A q̈ = −J̇_A q̇ − 2α J_A q̇      (dynamics, feet held)
    weighted  Σ R_x = m ẍ_G*, Σ R_y = m (ÿ_G* + g), Σ (r_A − G) × R_A + Σ a = L̇_G*,  θ̈ = θ̈*  (posture),
              R_1 = R_2 (equal loading), small τ, a, R (regularisation)

(equality-constrained least squares, solved through its KKT system). The feet need not really be pinned: on
compliant ground the same moments are applied and the contact law, not the controller's R, gives the reaction
(the controller's model of the contact is rigid; the feedback laws correct the difference). Units: SI; the task
rows are scaled to newtons (COM rows × m, angular-momentum row ÷ 1 m, posture rows × `posture_inertia` ÷ 1 m) so
that the weights are dimensionless.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from biobullet.core.errors import ModelError
from biobullet.extensible import kinematics as kin
from biobullet.extensible.chain_model import ChainModel


@dataclass(frozen=True)
class SupportTasks:
    """Desired accelerations for `support_inverse_dynamics` (None = no such task).

    com_acc: (ẍ_G*, ÿ_G*) [m/s²] (either entry may be None); momentum_rate: L̇_G* [N·m];
    joint_acc: θ̈* (n−1) [rad/s²] for the relative joint angles (order `model.joints`)."""

    com_acc: tuple[float | None, float | None] = (None, None)
    momentum_rate: float | None = None
    joint_acc: np.ndarray | None = None


@dataclass(frozen=True)
class TaskWeights:
    """Dimensionless weights of the task rows (rows scaled to newtons, see module doc)."""

    com: float = 10.0
    momentum: float = 10.0
    posture: float = 1.0
    equal_loading: float = 0.3
    moments: float = 1e-3        # regularisation of τ and a
    ankle: float = 0.3           # extra penalty on the ankle moments (a point-like foot carries little moment)
    reactions: float = 1e-4
    posture_inertia: float = 2.0  # kg·m²: converts θ̈ [rad/s²] into a moment [N·m] for the posture rows
    alpha: float = 20.0          # 1/s: velocity damping of the held-feet constraint J q̈ = −J̇q̇ − 2α J q̇


@dataclass(frozen=True)
class SupportSolution:
    tau: np.ndarray          # (n−1,) joint moments [N·m]
    ankle: np.ndarray        # (2,) ankle moments [N·m] (0 for a foot not in support)
    reactions: np.ndarray    # (2, 2) reactions the controller's rigid-contact model predicts [N]
    qdd: np.ndarray          # predicted accelerations


def support_inverse_dynamics(model: ChainModel, q: np.ndarray, v: np.ndarray, t: float, feet: Sequence[int],
                             tasks: SupportTasks, weights: TaskWeights = TaskWeights()) -> SupportSolution:
    """Joint and ankle moments realising `tasks` with the feet `feet` (subset of {0, 1}) held (module doc)."""
    feet = list(feet)
    if not feet or any(f not in (0, 1) for f in feet):
        raise ModelError(f"feet {feet!r}", argument="feet", expected="a non-empty subset of {0, 1}")
    n, N = model.n_links, model.dof
    k = len(feet)
    nr, nt = 2 * k, n - 1
    iq, ir, it, ia = 0, N, N + nr, N + nr + nt
    nz = ia + 2
    M, h = model.mass_matrix(q, t), model.bias_forces(q, v, t)
    Js = [kin.foot_jacobian(model, q, f) for f in feet]
    # exact rows: dynamics and held feet
    E = np.zeros((N + nr, nz))
    f = np.zeros(N + nr)
    E[:N, iq:iq + N] = M
    for j, J in enumerate(Js):
        E[:N, ir + 2 * j:ir + 2 * j + 2] = -J.T
        E[N + 2 * j:N + 2 * j + 2, iq:iq + N] = J
        f[N + 2 * j:N + 2 * j + 2] = -kin.foot_velocity_product(model, q, v, feet[j]) - 2.0 * weights.alpha * (J @ v)
    E[2:2 + n, it:it + nt] = -model.joint_matrix.T
    for foot in feet:   # an ankle moment acts only through a foot on the ground
        E[2 + model.feet[foot], ia + foot] = -1.0
    f[:N] = -h
    # weighted rows
    rows, rhs, w = [], [], []

    def add(row: np.ndarray, value: float, weight: float) -> None:
        rows.append(row)
        rhs.append(value)
        w.append(weight)

    mass = model.total_mass
    G = kin.center_of_mass(model, q)
    for axis in (0, 1):
        if tasks.com_acc[axis] is not None:
            row = np.zeros(nz)
            row[ir + axis:ir + nr:2] = 1.0
            add(row, mass * (tasks.com_acc[axis] + (model.gravity if axis == 1 else 0.0)), weights.com)
    if tasks.momentum_rate is not None:
        row = np.zeros(nz)
        for j, foot in enumerate(feet):
            d = kin.foot_position(model, q, foot) - G
            row[ir + 2 * j] = -d[1]           # (d × R)_z = d_x R_y − d_y R_x
            row[ir + 2 * j + 1] = d[0]
        row[ia:ia + 2] = [1.0 if 0 in feet else 0.0, 1.0 if 1 in feet else 0.0]
        add(row, float(tasks.momentum_rate), weights.momentum)
    if tasks.joint_acc is not None:
        for r in range(nt):
            row = np.zeros(nz)
            row[iq + 2:iq + 2 + n] = weights.posture_inertia * model.joint_matrix[r]
            add(row, weights.posture_inertia * float(tasks.joint_acc[r]), weights.posture)
    if k == 2:
        for axis in (0, 1):
            row = np.zeros(nz)
            row[ir + axis], row[ir + 2 + axis] = 1.0, -1.0
            add(row, 0.0, weights.equal_loading)
    for idx, wt in ([(it + r, weights.moments) for r in range(nt)]
                    + [(ia + r, weights.moments + weights.ankle) for r in range(2)]
                    + [(ir + r, weights.reactions) for r in range(nr)]):
        row = np.zeros(nz)
        row[idx] = 1.0
        add(row, 0.0, wt)
    C = np.array(rows) * np.asarray(w)[:, None]
    d = np.asarray(rhs) * np.asarray(w)
    H = C.T @ C + 1e-12 * np.eye(nz)
    ne = E.shape[0]
    K = np.zeros((nz + ne, nz + ne))
    K[:nz, :nz] = H
    K[:nz, nz:] = E.T
    K[nz:, :nz] = E
    z = np.linalg.solve(K, np.concatenate([C.T @ d, f]))[:nz]
    R = np.zeros((2, 2))
    for j, foot in enumerate(feet):
        R[foot] = z[ir + 2 * j:ir + 2 * j + 2]
    ankle = np.zeros(2)
    for foot in feet:
        ankle[foot] = z[ia + foot]
    return SupportSolution(z[it:it + nt].copy(), ankle, R, z[:N].copy())


def com_jacobian(model: ChainModel, q: np.ndarray) -> np.ndarray:
    """J_G = ∂G/∂q (2 × (2n+2)): G = hip + Σ_j σ_j μ_j l_j e_j / m, so ∂G/∂φ_j = σ_j μ_j l_j e_j^⊥ / m and
    ∂G/∂l_j = σ_j μ_j e_j / m (μ_j = m_j ρ_j + mass distal to j)."""
    n = model.n_links
    phi, l = q[2:2 + n], q[2 + n:]
    w = model.sigma * model.mu / model.total_mass
    s, c = np.sin(phi), np.cos(phi)
    J = np.zeros((2, 2 * n + 2))
    J[0, 0] = J[1, 1] = 1.0
    J[0, 2:2 + n], J[1, 2:2 + n] = -w * l * s, w * l * c
    J[0, 2 + n:], J[1, 2 + n:] = w * c, w * s
    return J


def virtual_force_moments(model: ChainModel, q: np.ndarray, feet: Sequence[int], force: np.ndarray,
                          joint_moments: np.ndarray | None = None, ankle_weight: float = 10.0
                          ) -> tuple[np.ndarray, np.ndarray]:
    """Joint moments τ (n−1) and ankle moments a (2) that apply the virtual force `force` [N] (ground → body,
    shared equally by the feet `feet`) between the supporting feet and the COM — a Jacobian-transpose ("virtual
    model") law: the φ rows of Σ_A (J_G − J_A)ᵀ F/k — plus `joint_moments` (e.g. a posture PD). The generalized
    force on the φ rows is realised exactly by Bᵀτ + S_aᵀa (n equations, n+1 unknowns, least ankle use:
    weighted minimum norm; Σ of the φ rows = the force's moment about the feet, which only the ankles can give).
    The l rows (axial springs, not actuated) and the x, y rows (zero: J_G − J_A does not depend on the hip) are
    not touched. Held feet and a static body: F is exactly the ground reaction, e.g. F = m g ŷ compensates gravity."""
    n = model.n_links
    feet = list(feet)
    force = np.asarray(force, dtype=float)
    JG = com_jacobian(model, q)
    Q = np.zeros(n)
    for foot in feet:
        Q += ((JG - kin.foot_jacobian(model, q, foot))[:, 2:2 + n]).T @ force / len(feet)
    if joint_moments is not None:
        Q += model.joint_matrix.T @ np.asarray(joint_moments, dtype=float)
    A = np.zeros((n, n + 1))          # columns: τ (n−1), then one ankle moment shared by the supporting feet
    A[:, :n - 1] = model.joint_matrix.T
    for foot in feet:
        A[model.feet[foot], n - 1] = 1.0 / len(feet)
    W = np.ones(n + 1)
    W[n - 1] = ankle_weight
    # weighted minimum-norm solution of A z = Q (A has full row rank n: B has rank n−1 and the ankle column
    # carries the sum of the rows, which Bᵀ cannot)
    Aw = A / W
    z = np.linalg.lstsq(Aw, Q, rcond=None)[0] / W
    ankle = np.zeros(2)
    for foot in feet:
        ankle[foot] = z[n - 1] / len(feet)
    return z[:n - 1], ankle
