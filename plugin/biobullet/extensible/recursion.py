"""The corrected general recursion of paper 004 (digest) for any chain lengths: M q̈ + h = Q.

Coordinates q = (x, y, φ_1…φ_n, l_1…l_n) (see `chain_model`). With σ = −1 on legs / +1 on the trunk, ρ the COM
fraction from the proximal joint, S_i the mass distal to link i, μ_i = m_i ρ_i + S_i, and
K_ij = m_i ρ_i² + S_i (i = j), μ_(the more distal of i, j) (same chain), 0 (different chains):

  M[x,x] = M[y,y] = Σm, M[x,y] = 0
  M[x,φj] = −σ μ_j l_j sin φ_j     M[y,φj] = σ μ_j l_j cos φ_j
  M[x,lj] =  σ μ_j cos φ_j         M[y,lj] = σ μ_j sin φ_j
  M[φi,φj] = δ_ij I_i + K_ij l_i l_j cos(φ_i − φ_j)
  M[li,lj] = K_ij cos(φ_i − φ_j)   M[φi,lj] = K_ij l_i sin(φ_j − φ_i)

h = velocity terms (only φ̇_j² and l̇_j φ̇_j, independent of ẋ, ẏ) + gravity + springs k_i (l_i − L0_i) + dampers
c_i l̇_i + İ_i φ̇_i (the time-varying inertia, from d/dt(I_i φ̇_i)):
  x:  Σ σ μ_j (−2 l̇_j φ̇_j sin φ_j − l_j φ̇_j² cos φ_j)
  y:  Σ σ μ_j ( 2 l̇_j φ̇_j cos φ_j − l_j φ̇_j² sin φ_j)  + g Σm
  φi: l_i Σ_j K_ij (2 l̇_j φ̇_j cos(φ_i−φ_j) + l_j φ̇_j² sin(φ_i−φ_j)) + g σ μ_i l_i cos φ_i + İ_i φ̇_i
  li: Σ_j K_ij (2 l̇_j φ̇_j sin(φ_i−φ_j) − l_j φ̇_j² cos(φ_i−φ_j)) + g σ μ_i sin φ_i + k_i Δl_i + c_i l̇_i
Q = Bᵀ τ on the φ rows (joint moments, `ChainModel.joints`) + Σ_feet J_Aᵀ R_A (foot reactions into the x, y, φ AND
l rows; the paper writes them in the x, y rows only).

Units SI; gravity potential from y = 0; angles in rad. All functions take one state (arrays of shape (2n+2,));
the energy and momentum helpers also accept stacked states (T, 2n+2).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from scipy.linalg import cho_factor, cho_solve

from biobullet.core import jit
from biobullet.core.errors import ModelError, SolverError
from biobullet.extensible.chain_model import ChainModel


def _split(model: ChainModel, q: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    n = model.n_links
    q = np.asarray(q, dtype=float)
    if q.shape[-1] != 2 * n + 2:
        raise ModelError(f"state has {q.shape[-1]} entries", argument="q", expected=f"{2 * n + 2} = 2n + 2")
    return q[..., :2], q[..., 2:2 + n], q[..., 2 + n:]


def mass_matrix(model: ChainModel, q: np.ndarray, t: float = 0.0) -> np.ndarray:
    """Symmetric positive-definite M(q, t) [(2n+2)², SI units], from the closed-form general recursion."""
    return dynamics_terms(model, q, np.zeros(model.dof), t)[0]


def bias_forces(model: ChainModel, q: np.ndarray, v: np.ndarray, t: float = 0.0) -> np.ndarray:
    """h(q, q̇, t) of M q̈ + h = Q."""
    return dynamics_terms(model, q, v, t)[1]


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
    return _constants(model)["masks"][foot]


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
    # ½ q̇ᵀ M q̇ = Σ ½ m_k |ṙ_Ck|² + ½ Σ I_k φ̇_k²  (identical to the mass-matrix form; vectorised over samples)
    kinetic = 0.5 * np.einsum("k,...kd->...", m, rd * rd) + 0.5 * (inertia * phid * phid).sum(-1)
    y_com = com_positions(model, q)[..., 1]
    _, _, l = _split(model, q)
    dl = l - model.rest_lengths
    return Energy(kinetic, model.gravity * (y_com @ m), 0.5 * (dl * dl) @ model.stiffness)


def forward_dynamics(model: ChainModel, q: np.ndarray, v: np.ndarray, tau: np.ndarray | None = None,
                     t: float = 0.0) -> np.ndarray:
    """q̈ = M⁻¹ (Q − h) (Cholesky); `tau` = the generalized force Q (2n+2), default zero (joint and ankle moments
    enter through `joint_moment_force`, foot forces through the foot Jacobians)."""
    Q = 0.0 if tau is None else np.asarray(tau, dtype=float)
    if tau is not None and Q.shape != (model.dof,):
        raise ModelError(f"got shape {Q.shape}", argument="tau", expected=f"({model.dof},) generalized forces")
    M, h = dynamics_terms(model, q, v, t)
    rhs = Q - h
    try:
        factor = cho_factor(M)
        # a round-off-sized pivot means M is singular (Cholesky of a semidefinite matrix may still "succeed")
        if np.min(np.diag(factor[0])) ** 2 <= 1e-12 * np.max(np.diag(M)):
            raise np.linalg.LinAlgError
        return cho_solve(factor, rhs)
    except np.linalg.LinAlgError:
        raise SolverError("mass matrix not positive definite: all links parallel? (stretching every link about its "
                          "fixed COM then has no inertia; see docs/anthropomorph.md)") from None


# ---- M and h: one kernel (compiled by numba; its Python form is the same function) ---------------------------------
class RecursionConstants(NamedTuple):
    """A model's constant parameters as the kernel takes them (SI units; arrays per link, paper order)."""

    smu: np.ndarray         # σ_j μ_j
    K: np.ndarray           # K_ij (n × n)
    stiffness: np.ndarray   # k_j
    rest: np.ndarray        # L0_j
    damping: np.ndarray     # c_j
    gravity: float
    total_mass: float


def _terms_py(phi, l, phid, ld, inertia, inertia_rate, c, M, h):
    """Fill M and h (the module-docstring formulas) for link angles φ, lengths l, their rates, I(t), İ(t) and the
    model's `RecursionConstants` c. M is exactly symmetric (its lower triangle copied from the upper one)."""
    n = phi.shape[0]
    smu, K, g, mtot = c.smu, c.K, c.gravity, c.total_mass
    for a in range(2 * n + 2):
        h[a] = 0.0
    M[0, 0] = mtot
    M[1, 1] = mtot
    M[0, 1] = 0.0
    M[1, 0] = 0.0
    h[1] = g * mtot
    for j in range(n):
        s, co = np.sin(phi[j]), np.cos(phi[j])
        pj, lj = 2 + j, 2 + n + j
        aj, bj = 2.0 * ld[j] * phid[j], l[j] * phid[j] * phid[j]
        M[0, pj] = M[pj, 0] = -smu[j] * l[j] * s
        M[1, pj] = M[pj, 1] = smu[j] * l[j] * co
        M[0, lj] = M[lj, 0] = smu[j] * co
        M[1, lj] = M[lj, 1] = smu[j] * s
        h[0] += smu[j] * (-aj * s - bj * co)
        h[1] += smu[j] * (aj * co - bj * s)
        h[pj] += g * smu[j] * l[j] * co + inertia_rate[j] * phid[j]
        h[lj] += g * smu[j] * s + c.stiffness[j] * (l[j] - c.rest[j]) + c.damping[j] * ld[j]
        for i in range(n):
            pi, li = 2 + i, 2 + n + i
            kij = K[i, j]
            if kij == 0.0:
                M[pi, pj] = 0.0
                M[li, lj] = 0.0
                M[pi, lj] = 0.0
                continue
            d = phi[i] - phi[j]
            cd, sd = np.cos(d), np.sin(d)
            M[pi, pj] = kij * l[i] * l[j] * cd
            M[li, lj] = kij * cd
            M[pi, lj] = -kij * l[i] * sd
            h[pi] += l[i] * kij * (aj * cd + bj * sd)
            h[li] += kij * (aj * sd - bj * cd)
        M[pj, pj] += inertia[j]
    for i in range(n):
        for j in range(n):
            M[2 + n + j, 2 + i] = M[2 + i, 2 + n + j]
            if j > i:
                M[2 + j, 2 + i] = M[2 + i, 2 + j]
                M[2 + n + j, 2 + n + i] = M[2 + n + i, 2 + n + j]


_terms = jit.lazy(_terms_py)


def dynamics_terms(model: ChainModel, q: np.ndarray, v: np.ndarray, t: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """(M, h) of M q̈ + h = Q in one pass of the kernel `_terms_py`."""
    n = model.n_links
    _split(model, q)
    _split(model, v)
    c = _constants(model)
    inertia = c["inertia"] if not model.time_varying_inertia else model.inertia(t)
    irate = c["zeros"] if not model.time_varying_inertia else model.inertia_rate(t)
    M = np.empty((2 * n + 2, 2 * n + 2))
    h = np.empty(2 * n + 2)
    q = np.ascontiguousarray(q, dtype=float)
    v = np.ascontiguousarray(v, dtype=float)
    _terms(q[2:2 + n], q[2 + n:], v[2:2 + n], v[2 + n:], inertia, irate, c["kernel"], M, h)
    return M, h


def _constants(model: ChainModel) -> dict:
    """Per-model contiguous parameter arrays for the kernel, kept in the (immutable) model's `derived` dict."""
    c = model.derived.get("recursion_constants")
    if c is None:
        kernel = RecursionConstants(np.ascontiguousarray(model.sigma * model.mu), np.ascontiguousarray(model.K),
                                    model.stiffness, model.rest_lengths, model.damping, float(model.gravity),
                                    float(model.total_mass))
        c = {"kernel": kernel, "inertia": model.inertia(0.0), "zeros": np.zeros(model.n_links),
             "masks": ((model.chain == 0).astype(float), (model.chain == 1).astype(float))}
        model.derived["recursion_constants"] = c
    return c
