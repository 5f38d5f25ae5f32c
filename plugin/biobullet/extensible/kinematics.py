"""Planar kinematics of the anthropomorph (paper 004): feet, link ends, centres of mass, energy, angular momentum,
and the generalized force of joint moments. The dynamics (M, h, v̇) are the tree model's (`ChainModel.mass_matrix`,
`model_file`); these closed forms stay because the phases, controllers and studies call them per step and on stacked
samples, where the tree's frame kinematics would cost a pipeline call per state.

Coordinates q = (x, y, φ_1…φ_n, l_1…l_n) (see `chain_model`); σ = −1 on legs / +1 on the trunk, e_j = (cos φ_j,
sin φ_j), C the COM coefficients (`ChainModel.com_coeff`). Q = Bᵀ τ on the φ rows (joint moments,
`ChainModel.joints`) + Σ_feet J_Aᵀ R_A (foot reactions into the x, y, φ AND l rows; the paper writes them in the
x, y rows only). Units SI; gravity potential from y = 0; angles in rad. All functions take one state (arrays of
shape (2n+2,)); the energy, COM and momentum helpers also accept stacked states (T, 2n+2).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from biobullet.core.errors import ModelError
from biobullet.extensible.chain_model import ChainModel


def _split(model: ChainModel, q: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    n = model.n_links
    q = np.asarray(q, dtype=float)
    if q.shape[-1] != 2 * n + 2:
        raise ModelError(f"state has {q.shape[-1]} entries", argument="q", expected=f"{2 * n + 2} = 2n + 2")
    return q[..., :2], q[..., 2:2 + n], q[..., 2 + n:]


def joint_moment_force(model: ChainModel, tau: np.ndarray | None = None,
                       ankle: np.ndarray | None = None) -> np.ndarray:
    """Generalized force of joint moments τ (n−1, N·m, order `model.joints`) and ankle moments (2: ground on the
    foot link of leg 1, leg 2; + counter-clockwise). Returns shape (2n+2,)."""
    n = model.n_links
    Q = np.zeros(2 * n + 2)
    if tau is not None:
        tau = np.asarray(tau, dtype=float)
        if tau.shape != (n - 1,):
            raise ModelError(f"got shape {tau.shape}", argument="tau", expected=f"({n - 1},) joint moments")
        Q[2:2 + n] += model.joint_matrix.T @ tau
    if ankle is not None:
        ankle = np.asarray(ankle, dtype=float)
        if ankle.shape != (2,):
            raise ModelError(f"got shape {ankle.shape}", argument="ankle", expected="(2,) ankle moments")
        Q[2 + model.feet[0]] += ankle[0]
        Q[2 + model.feet[1]] += ankle[1]
    return Q


# ---- points, feet, COM -----------------------------------------------------------------------------------------
def _chain_mask(model: ChainModel, foot: int) -> np.ndarray:
    if foot not in (0, 1):
        raise ModelError(f"foot {foot!r}", argument="foot", expected="0 (leg 1) or 1 (leg 2)")
    return model.leg_masks[foot]


def foot_position(model: ChainModel, q: np.ndarray, foot: int) -> np.ndarray:
    """Foot point A of leg `foot` (0/1): hip − Σ_(leg links) l_j e_j [m]; stacked states give (T, 2)."""
    hip, phi, l = _split(model, q)
    w = _chain_mask(model, foot) * l
    x, y = (w * np.cos(phi)).sum(-1), (w * np.sin(phi)).sum(-1)
    # one state (the integrators' call, ~10⁵ per jump): a 2-vector without np.stack's overhead, same arithmetic
    return hip - (np.array((x, y)) if phi.ndim == 1 else np.stack([x, y], axis=-1))


def foot_jacobian(model: ChainModel, q: np.ndarray, foot: int) -> np.ndarray:
    """J_A = ∂r_A/∂q (2 × (2n+2)); the generalized force of a foot reaction R is J_Aᵀ R."""
    n = model.n_links
    _, phi, l = _split(model, q)
    f = _chain_mask(model, foot)
    s, c = np.sin(phi), np.cos(phi)
    J = np.zeros((2, 2 * n + 2))
    J[0, 0] = J[1, 1] = 1.0
    J[0, 2:2 + n] = f * l * s          # σ = −1:  −l e^⊥ = l (sin, −cos)
    J[1, 2:2 + n] = -f * l * c
    J[0, 2 + n:] = -f * c
    J[1, 2 + n:] = -f * s
    return J


def foot_velocity_product(model: ChainModel, q: np.ndarray, v: np.ndarray, foot: int) -> np.ndarray:
    """J̇_A q̇ = σ Σ_j (2 l̇_j φ̇_j e_j^⊥ − l_j φ̇_j² e_j) over the leg's links (σ = −1) [m/s²]."""
    _, phi, l = _split(model, q)
    _, phid, ld = _split(model, v)
    f = _chain_mask(model, foot)
    a, b = 2.0 * ld * phid * f, l * phid * phid * f
    s, c = np.sin(phi), np.cos(phi)
    return -np.array([(-a * s - b * c).sum(), (a * c - b * s).sum()])


def link_endpoints(model: ChainModel, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Proximal and distal end of every link, each shape (..., n, 2) [m] (for drawing)."""
    hip, phi, l = _split(model, q)
    e = np.stack([np.cos(phi), np.sin(phi)], axis=-1) * (model.sigma * l)[..., None]
    prox = hip[..., None, :] + np.einsum("kj,...jd->...kd", model.proximal, e)
    return prox, prox + e


def com_positions(model: ChainModel, q: np.ndarray) -> np.ndarray:
    """Link centres of mass r_Ck = hip + σ_k Σ_j C_kj l_j e_j, shape (..., n, 2) [m]."""
    hip, phi, l = _split(model, q)
    e = np.stack([np.cos(phi), np.sin(phi)], axis=-1) * (model.sigma * l)[..., None]
    return hip[..., None, :] + np.einsum("kj,...jd->...kd", model.com_coeff, e)


def com_velocities(model: ChainModel, q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """ṙ_Ck = ṗ + σ_k Σ_j C_kj (l̇_j e_j + l_j φ̇_j e_j^⊥), shape (..., n, 2) [m/s]."""
    hip, phi, l = _split(model, q)
    hipd, phid, ld = _split(model, v)
    s, c = np.sin(phi), np.cos(phi)
    w = np.stack([ld * c - l * phid * s, ld * s + l * phid * c], axis=-1) * model.sigma[:, None]
    return hipd[..., None, :] + np.einsum("kj,...jd->...kd", model.com_coeff, w)


def center_of_mass(model: ChainModel, q: np.ndarray, v: np.ndarray | None = None):
    """Whole-body COM G (..., 2) [m], and Ġ if v is given."""
    m = model.masses
    G = np.einsum("k,...kd->...d", m, com_positions(model, q)) / m.sum()
    if v is None:
        return G
    return G, np.einsum("k,...kd->...d", m, com_velocities(model, q, v)) / m.sum()


def angular_momentum_about_com(model: ChainModel, q: np.ndarray, v: np.ndarray,
                               t: float | np.ndarray = 0.0) -> np.ndarray:
    """L_G = Σ m_k (r_k − G) × ṙ_k + Σ I_k(t) φ̇_k [kg·m²/s], z component, counter-clockwise positive."""
    m = model.masses
    r, rd = com_positions(model, q), com_velocities(model, q, v)
    G, Gd = center_of_mass(model, q, v)
    rel, reld = r - G[..., None, :], rd - Gd[..., None, :]
    orbital = np.einsum("k,...k->...", m, rel[..., 0] * reld[..., 1] - rel[..., 1] * reld[..., 0])
    _, phid, _ = _split(model, v)
    inertia = np.stack([lk.inertia.value(t) + 0.0 * np.asarray(t, dtype=float) for lk in model.links], axis=-1)
    return orbital + (inertia * phid).sum(-1)


@dataclass(frozen=True)
class Energy:
    """Energy components [J]: kinetic ½ q̇ᵀ M q̇, gravity g Σ m_k y_Ck (zero at y = 0), spring ½ Σ k Δl²."""

    kinetic: np.ndarray
    gravity: np.ndarray
    spring: np.ndarray

    @property
    def total(self) -> np.ndarray:
        return self.kinetic + self.gravity + self.spring


def energy(model: ChainModel, q: np.ndarray, v: np.ndarray, t: float | np.ndarray = 0.0) -> Energy:
    """Energy components for one state or stacked states (T, 2n+2) with times t (T,)."""
    m = model.masses
    rd = com_velocities(model, q, v)
    _, phid, _ = _split(model, v)
    inertia = np.stack([lk.inertia.value(t) + 0.0 * np.asarray(t, dtype=float) for lk in model.links], axis=-1)
    # ½ q̇ᵀ M q̇ = Σ ½ m_k |ṙ_Ck|² + ½ Σ I_k φ̇_k² (vectorised over samples). The tree model's kinetic energy adds
    # ½ m_k ḋ_k² for a time-varying I_k(t) (its two point masses at ±d(t), `model_file`): a known function of t
    kinetic = 0.5 * np.einsum("k,...kd->...", m, rd * rd) + 0.5 * (inertia * phid * phid).sum(-1)
    y_com = com_positions(model, q)[..., 1]
    _, _, l = _split(model, q)
    dl = l - model.rest_lengths
    return Energy(kinetic, model.gravity * (y_com @ m), 0.5 * (dl * dl) @ model.stiffness)
