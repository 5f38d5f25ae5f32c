"""THE constrained solve: accelerations and multipliers of a tree under holonomic constraint rows.

    M ẍ + h = τ + Φ_xᵀ λ
    Φ_x ẍ   = a*,        a* = −k_b b − K_d Φ̇ − K_p Φ     (Φ̇ = Φ_x ẋ + Φ_t, b: velocity-product terms of Φ̈)

The corrector gains (K_p, K_d) belong to the constraint object (`Corrector`, as Pinocchio's constraint models own
their `corrector.Kp`/`Kd`); Baumgarte's (α, β) are K_d = 2α, K_p = β². Every caller — the multiplier
formulation (`dynamics.multipliers`), the PyBullet bridge (`bridge.kernels`), the anthropomorph's foot
constraints (`extensible.phases`) and special-purpose studies — solves through this module; there is no other KKT
solve in the library.

Two methods, one set of equations:

* range space (Schur complement): M = L Lᵀ by Cholesky, then (Φ_x M⁻¹ Φ_xᵀ) λ = a* − Φ_x M⁻¹(τ − h) by a second
  Cholesky — the kernel `_schur_kernel_py` (one call, status codes instead of errors; `schur_kernel` compiled,
  `schur_solve` compiled on first call or its Python form), and around it `constrained_acceleration` (rank
  diagnostics, errors, a least-squares fallback for redundant rows or a singular M where the kernel declines);
* null space, for constant rows Φ = A x − c of full row rank (linear joint functions): ẍ = T y + P a* with
  A T = 0, A P = I, (TᵀMT) y = Tᵀ(τ − h − M P a*) — `null_space_kernel` (compiled) with the constants from
  `null_space_basis`. Better conditioned than the KKT matrix when some links carry (almost) no mass.

Pure-Python twins have the suffix `_py` and are what numba compiles (`core.jit.compiled`,
the library's one jit helper); with BIOBULLET_NUMBA=0 (debugging) the same functions run by Python.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from biobullet.algorithms.compiled_kernels import cholesky_factor, cholesky_kernels, cholesky_solve
from biobullet.core import jit

from biobullet.core.errors import ModelError, SolverError
from biobullet.spatial.dense import (MASS_PIVOT_RATIO, coordinate_floor, massless_coordinate, massless_coordinates,
                                     massless_text)

#: relative singular value of the row-scaled constraint Jacobian treated as zero (rank diagnostics)
RANK_TOLERANCE = 1e-10
#: smallest Cholesky pivot of the Schur complement, relative to its diagonal entry (squared sine of the angle
#: between a row and the span of the previous rows in the M⁻¹ metric), below which the full rank check decides;
#: well above RANK_TOLERANCE², so no rank-deficient case passes unchecked
PIVOT_CHECK = 1e-8


@dataclass(frozen=True)
class Corrector:
    """Drift-correction gains of a constraint set: a* = −kb b − kd Φ̇ − kp Φ (kp in 1/s², kd in 1/s, kb ∈ [0, 1]
    the weight of the rows' velocity-product term b; 1 = the exact Φ̈ = 0 when Φ = Φ̇ = 0).

    `Corrector.baumgarte(α, β)` gives kd = 2α, kp = β² (critically damped for α = β); `step_end(dt)` the gains
    kp = 1/dt², kd = 1/dt, kb = ½: −Φ(x + dt ẋ, t + dt)/dt² by Taylor's formula, the target that puts the end of a
    semi-implicit Euler step on the manifold (the PyBullet bridge's default); `Corrector()` = no correction (the
    pure index-1 DAE)."""

    kp: float = 0.0
    kd: float = 0.0
    kb: float = 1.0

    def __post_init__(self) -> None:
        for name in ("kp", "kd", "kb"):
            value = getattr(self, name)
            if not isinstance(value, (int, float, np.floating, np.integer)) or not math.isfinite(value) or value < 0:
                raise SolverError(f"corrector gain {name} = {value!r}: expected a finite number ≥ 0")

    @classmethod
    def baumgarte(cls, alpha: float, beta: float) -> "Corrector":
        return cls(kp=float(beta) ** 2, kd=2.0 * float(alpha))

    @classmethod
    def step_end(cls, dt: float, weight: float = 1.0) -> "Corrector":
        """The step-end target for a step of dt (s) whose end position moves by `weight` · dt² ẍ (c of PyBullet's
        sub-steps, `bridge.substep_weight`; 1 for one semi-implicit Euler step): every gain is divided by it."""
        return cls(kp=1.0 / (weight * dt * dt), kd=1.0 / (weight * dt), kb=0.5 / weight)

    @property
    def alpha(self) -> float:
        return 0.5 * self.kd

    @property
    def beta(self) -> float:
        return math.sqrt(self.kp)

    def target(self, phi: np.ndarray, phi_dot: np.ndarray, bias: np.ndarray) -> np.ndarray:
        """a* = −kb b − kd Φ̇ − kp Φ (the acceleration the rows must have)."""
        return (-self.kb * np.asarray(bias, float) - self.kd * np.asarray(phi_dot, float)
                - self.kp * np.asarray(phi, float))


# ------------------------------------------------------------------------------------------- numpy reference path
def state_text(x, xd, t) -> str:
    if x is None:
        return "the given state"
    text = f"t = {t:.17g}, x = {np.array2string(np.asarray(x), precision=17, separator=', ')}"
    if xd is not None:
        text += f", xd = {np.array2string(np.asarray(xd), precision=17, separator=', ')}"
    return text


def check_rank(jac: np.ndarray, names=None, x=None, t: float = 0.0, xd=None) -> None:
    """SolverError naming the rows if Φ_x has a zero row or dependent rows (relative tolerance RANK_TOLERANCE)."""
    if not len(jac):
        return
    names = tuple(names) if names is not None else tuple(f"row {k}" for k in range(len(jac)))
    scale = np.linalg.norm(jac, axis=1)
    if np.any(scale == 0):
        raise SolverError("constraint row(s) " + ", ".join(n for n, s in zip(names, scale) if s == 0)
                          + " do not depend on any coordinate at " + state_text(x, xd, t))
    singular = np.linalg.svd(jac / scale[:, None], compute_uv=False)
    if len(jac) > jac.shape[1] or singular[-1] < RANK_TOLERANCE * singular[0]:
        rank = int(np.sum(singular > RANK_TOLERANCE * singular[0]))
        raise SolverError(f"constraint Jacobian is rank deficient ({rank} independent of {len(jac)} rows: "
                          + ", ".join(names) + "); redundant loop equations (use type=\"planar\" for planar "
                          "mechanisms) or a singular (toggle) configuration at " + state_text(x, xd, t))


def try_mass_factor(mass: np.ndarray) -> np.ndarray | None:
    """Lower Cholesky factor of M, None where M is singular to round-off (a pivot² not above MASS_PIVOT_RATIO × its
    diagonal entry) or not positive definite."""
    from scipy.linalg.lapack import dpotrf
    factor, info = dpotrf(mass, lower=1, clean=1)
    if info != 0 or not np.all(np.diagonal(factor) ** 2 > MASS_PIVOT_RATIO * np.diagonal(mass)):
        return None
    return factor


def mass_factor(mass: np.ndarray, x=None, t: float = 0.0) -> np.ndarray:
    """Lower Cholesky factor of M (SolverError if M is singular to round-off or not positive definite)."""
    factor = try_mass_factor(mass)
    if factor is None:
        raise SolverError("the tree mass matrix is singular to round-off or not positive definite (a joint moves no "
                          "mass) at "
                          + state_text(x, None, t))
    return factor


def factor_solve(factor: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """(L Lᵀ)⁻¹ rhs for a lower Cholesky factor L (rhs a vector or a matrix)."""
    from scipy.linalg.lapack import dpotrs
    return dpotrs(factor, rhs, lower=1)[0]


def constrained_acceleration(mass: np.ndarray, bias: np.ndarray, tau: np.ndarray | None, jac: np.ndarray,
                             target: np.ndarray, *, names=None, x=None, xd=None, t: float = 0.0,
                             redundant: str = "raise", method: str = "schur",
                             mass_ratio: float = 0.0,
                             tree: "TreeDirections | None" = None) -> tuple[np.ndarray, np.ndarray]:
    """(ẍ, λ) of M ẍ + h = τ + Φ_xᵀλ, Φ_x ẍ = target (see the module docstring; target from `Corrector.target`).

    mass (n × n), bias h (n), tau (n or None = 0), jac Φ_x (m × n), target a* (m). Range-space method with two
    Cholesky factorizations, the Schur kernel (`schur_solve`: compiled, or its Python form); where it declines
    (M not positive definite, a suspicious Schur pivot), Python decides. redundant: "raise" → SolverError naming the rows (`names`) and the state (x, xd, t)
    for dependent rows; "least_squares" → the minimum-norm solution of the full KKT system (also used when M is
    singular), for callers that tolerate redundant rows (PyBullet's massless links, doubled loop equations).
    method: "schur" (the above) or "kkt": the whole KKT matrix at once (LU, least squares if singular) — for an M
    that is near-singular while the constrained system is not (the anthropomorph's nearly parallel links: the Schur
    complement through M⁻¹ loses cond(M)·ε there, and an adaptive integrator then crawls).
    mass_ratio > 0 (`dynamics.multipliers`): the Schur kernel's factor of M also chooses the method — where its
    smallest pivot² is below mass_ratio × M's largest diagonal entry, dependent rows are refused (`check_rank`) and
    the KKT matrix is solved as by method "kkt" (M is factorised once per call either way).
    tree (with mass_ratio > 0): where M itself is singular (the kernel's status 1), the KKT matrix is solved wherever
    it is regular — M positive definite on the null space of Φ_x (`unheld_direction`: a massless root link whose
    motion a prescribed joint holds) — and refused naming the tree directions (`tree.names`) where it is not; only
    this rare path pays for the test.
    """
    mass, bias, jac, target = (np.asarray(a, float) for a in (mass, bias, jac, target))
    tau = None if tau is None else np.asarray(tau, float)
    if method not in ("schur", "kkt"):
        raise ModelError(f"unknown method {method!r}", argument="method", expected="'schur' or 'kkt'")
    if method == "kkt":
        return _least_squares(mass, jac, -bias if tau is None else tau - bias, target)
    n, m = len(bias), len(jac)
    xdd, lam = np.empty(n), np.empty(m)
    # the Schur kernel forms a* = −bias − kd Φ̇ − kp Φ: here the rows' bias is −a* and the gains zero
    rows = ConstraintRows(jac, np.zeros(m), _NO_VALUES, False, -target, 0.0, 0.0)
    status = schur_solve(mass, bias, _NO_VALUES if tau is None else tau, tau is not None, rows, np.zeros(n),
                         PIVOT_CHECK, mass_ratio, xdd, lam)
    if status == 0 or status == 3:   # solved, or a non-finite result the caller's divergence check reports
        return xdd, lam
    rhs_dyn = -bias if tau is None else tau - bias
    if status == 1 and mass_ratio > 0.0 and tree is not None:
        refuse_unheld(mass, jac, tree, x, xd, t)
        check_rank(jac, names, x, t, xd)
        return _least_squares(mass, jac, rhs_dyn, target)
    if status == 4 or (status == 1 and mass_ratio > 0.0 and _positive_definite(mass)):
        # M too ill-conditioned for M⁻¹ (the caller's mass_ratio; a pivot the kernel's relative test declined on a
        # positive definite M is below it too): the whole KKT matrix
        check_rank(jac, names, x, t, xd)
        return _least_squares(mass, jac, rhs_dyn, target)
    if redundant == "least_squares":   # M singular, or redundant rows: the minimum-norm KKT solution
        return _least_squares(mass, jac, rhs_dyn, target)
    factor = mass_factor(mass, x, t)   # raises where M is not positive definite (status 1)
    check_rank(jac, names, x, t, xd)   # raises for dependent rows; else full rank but badly conditioned: LU
    minv_jt, free = factor_solve(factor, jac.T), factor_solve(factor, rhs_dyn)
    lam = np.linalg.solve(jac @ minv_jt, target - jac @ free)
    return free + minv_jt @ lam, lam


def _positive_definite(mass: np.ndarray) -> bool:
    """Whether LAPACK's Cholesky factorisation of M succeeds (no relative pivot test)."""
    from scipy.linalg.lapack import dpotrf
    return dpotrf(mass, lower=1, clean=1)[1] == 0


class TreeDirections(NamedTuple):
    """What deciding and naming a singular tree mass matrix takes: each tree direction's name, its mass floor
    (`CompiledModel.mass_floor_root`, √(MASS_FLOOR_RATIO × bound)) and the text an error starts with (file,
    formulation)."""
    names: tuple
    floor_root: np.ndarray
    source: str


def unheld_direction(mass: np.ndarray, jac: np.ndarray, floor_root: np.ndarray) -> np.ndarray | None:
    """The unit tree direction along which the KKT matrix [[M, Φ_xᵀ], [Φ_x, 0]] is singular, None where it is
    regular: M positive definite on the null space of Φ_x (held by the rows wherever M itself is singular).

    Where tree directions move no mass themselves (their own diagonal entry not above its floor,
    `spatial.dense.massless_coordinate_py`: their rows of M are round-off, |M_kj| ≤ √(M_kk M_jj)), M is singular
    along each of them and every combination, and the KKT matrix is regular only where Φ_x is injective on their
    span (each held by the rows: a massless coupler inside a loop, a massless joint driven by a joint function).
    The test, cheap enough per evaluation (one compare per entry, an SVD of the massless columns): those columns
    of the row-normalised Φ_x have full rank (smallest singular value above RANK_TOLERANCE) — None —, else the unit
    vector of the massless direction with the largest component along the unheld combination (the right singular
    vector of the smallest singular value): a direction the error names as a joint that moves no mass.

    Then (where they are held, or there are none) a sufficient test, one Cholesky factorisation, cheap enough per
    evaluation too: M + ρ Φ̂ᵀΦ̂ (Φ̂ the row-normalised Φ_x, ρ M's largest diagonal entry) passes the relative pivot
    test of `try_mass_factor` — vᵀ(M + ρ Φ̂ᵀΦ̂)v = vᵀMv on ker Φ_x — : None (the anthropomorph's held massless links
    and held combinations pass it at every call). Where it fails, the whole test, O(n³) (an SVD and an
    eigen-decomposition): with
    N an orthonormal basis of ker Φ_x (row-normalised, rank at RANK_TOLERANCE as `check_rank`), Nᵀ M N is
    tested as the pipeline tests its Gᵀ M G: each diagonal entry above its floor through N ((Σ_a |N_ac| √floor_a)²,
    `spatial.dense.massless_coordinate`: a basis direction that moves no mass) and each Cholesky pivot² above
    MASS_PIVOT_RATIO × its diagonal entry (a combination that moves none: the base's x minus a slider along it). A
    declined pivot along a direction v that moves mass (vᵀMv above its floor) on an M — or an Nᵀ M N, where M itself
    is singular along directions the rows hold (a massless link) — that LAPACK factorises is a near-singular posture,
    not a massless motion: None (the KKT matrix is solved, as for `mass_ratio`)."""
    n = mass.shape[0]
    if len(jac):   # (row-normalised Φ_x)
        scale = np.linalg.norm(jac, axis=1)
        rows = jac / np.where(scale > 0.0, scale, 1.0)[:, None]
    massless = massless_coordinates(mass, floor_root, None)
    if massless:
        held = False
        if len(jac):
            _, singular, vectors = np.linalg.svd(rows[:, massless])   # (vectors: all |massless| right singular vectors)
            held = len(singular) == len(massless) and singular[-1] > RANK_TOLERANCE
        if not held:
            unit = np.zeros(n)
            unit[massless[int(np.argmax(np.abs(vectors[-1])))] if len(jac) else massless[0]] = 1.0
            return unit
    if len(jac) and try_mass_factor(mass + np.max(np.diagonal(mass)) * (rows.T @ rows)) is not None:
        return None
    if len(jac):
        _, singular, vt = np.linalg.svd(rows)
        rank = int(np.sum(singular > RANK_TOLERANCE * singular[0])) if singular[0] > 0.0 else 0
        basis = vt[rank:].T
    else:
        basis = np.eye(n)
    if basis.shape[1] == 0:
        return None
    reduced = basis.T @ mass @ basis
    index = massless_coordinate(reduced, floor_root, basis)
    if index is not None:
        direction = basis[:, index]
    else:
        low = np.linalg.cholesky(reduced) if _positive_definite(reduced) else None
        if low is not None and np.all(np.diagonal(low) ** 2 > MASS_PIVOT_RATIO * np.diagonal(reduced)):
            return None
        root = np.sqrt(np.maximum(np.diagonal(reduced), np.finfo(float).tiny))
        weights = np.linalg.eigh(reduced / np.outer(root, root))[1][:, 0] / root   # (Jacobi-scaled: unit-free)
        direction = basis @ weights
        direction /= np.linalg.norm(direction)
        floor = float(np.abs(direction) @ floor_root) ** 2
        if float(direction @ mass @ direction) > floor and (low is not None or _positive_definite(mass)):
            return None
    return direction / np.linalg.norm(direction)


def refuse_unheld(mass: np.ndarray, jac: np.ndarray, tree: TreeDirections, x=None, xd=None, t: float = 0.0) -> None:
    """SolverError naming the tree directions along which the KKT matrix is singular (`unheld_direction`): a joint that moves no mass and no row holds, or the motion; nothing where it is regular; a
    non-finite M gets `mass_factor`'s error (the caller's divergence, not a direction)."""
    if not np.all(np.isfinite(mass)):
        mass_factor(mass, x, t)
    direction = unheld_direction(mass, jac, tree.floor_root)
    if direction is None:
        return
    if np.count_nonzero(direction) == 1:   # one tree direction that moves no mass itself: named as a joint
        index = int(np.flatnonzero(direction)[0])
        text = massless_text(tree.names, index, mass[index, index], coordinate_floor(tree.floor_root, None, index))
        raise SolverError(f"{tree.source}{text}; no constraint row holds it, at " + state_text(x, xd, t))
    kept = [(c, name) for c, name in zip(direction, tree.names) if abs(c) >= 0.05 * np.max(np.abs(direction))]
    motion = " ".join(f"{c:+.3g}·{name}" for c, name in kept)
    joints = ", ".join(repr(name) for _, name in kept)
    raise SolverError(f"{tree.source}the tree mass matrix is singular along the motion {motion} of {joints} "
                      "(together they move no mass), and no constraint "
                      "row holds that motion: the KKT matrix is singular and no acceleration of it is defined (give "
                      "the bodies it moves mass, prescribe or fix one of these joints) at " + state_text(x, xd, t))


_NO_VALUES = np.zeros(0)


def _least_squares(mass, jac, rhs_dyn, target) -> tuple[np.ndarray, np.ndarray]:
    """Minimum-norm solution of [[M, Φ_xᵀ], [Φ_x, 0]] [ẍ; −λ] = [τ − h; a*] (redundant rows, singular M)."""
    n, m = mass.shape[0], len(jac)
    kkt = np.zeros((n + m, n + m))
    kkt[:n, :n] = mass
    kkt[:n, n:] = jac.T
    kkt[n:, :n] = jac
    rhs = np.concatenate([rhs_dyn, target])
    try:
        solution = np.linalg.solve(kkt, rhs)
    except np.linalg.LinAlgError:
        solution = np.linalg.lstsq(kkt, rhs, rcond=1e-13)[0]
    if not np.all(np.isfinite(solution)):
        solution = np.linalg.lstsq(kkt, rhs, rcond=1e-13)[0]
    if not np.all(np.isfinite(solution)):
        raise SolverError("the constraint (KKT) system has no solution")
    return solution[:n], -solution[n:]


def velocity_projection(mass: np.ndarray, jac: np.ndarray, xd: np.ndarray, phi_t: np.ndarray | None = None,
                        **options) -> np.ndarray:
    """ẋ closest to `xd` in the M metric with Φ_x ẋ + Φ_t = 0: the same KKT system with τ − h = M ẋ_in."""
    phi_t = np.zeros(len(jac)) if phi_t is None else phi_t
    return constrained_acceleration(mass, -(mass @ xd), None, jac, -np.asarray(phi_t, float), **options)[0]


def null_space_basis(jac: np.ndarray, offset: np.ndarray) -> np.ndarray | None:
    """`const` of `null_space_kernel` for constant rows Φ = A x − c (A = jac, m × n): rows [A; c; Tᵀ; Pᵀ] with T an
    orthonormal basis of ker A (k = n − m columns) and P = A⁺ (A P = I; λ = Pᵀ(τ_out − τ)). None if A has
    dependent rows (or none, or as many as columns): then the range-space solve is used."""
    m, n = jac.shape
    if m == 0 or m >= n:
        return None
    u, sigma, vt = np.linalg.svd(jac)
    if sigma[-1] <= 1e-10 * sigma[0]:
        return None
    const = np.zeros((2 * m + (n - m) + 1, n))
    const[:m] = jac
    const[m, :m] = offset
    const[m + 1:n + 1] = vt[m:]                          # Tᵀ
    const[n + 1:] = (u / sigma) @ vt[:m]                 # Pᵀ = (V Σ⁻¹ Uᵀ)ᵀ = U Σ⁻¹ Vᵀ
    return const


# ------------------------------------------------------------------------------------------- compiled twins
class ConstraintRows(NamedTuple):
    """The constraint rows at one state and their corrector gains, as `_schur_kernel_py` takes them: Φ_x (m, n),
    Φ (m), Φ_t (m; read only when `has_phi_t`), b (m, the velocity-product terms of Φ̈) and K_p (1/s²), K_d (1/s)."""
    jac: np.ndarray
    phi: np.ndarray
    phi_t: np.ndarray
    has_phi_t: bool
    bias: np.ndarray
    kp: float
    kd: float


def _schur_kernel_py(mass, h, tau, has_tau, rows, xd, pivot_check, mass_ratio, xdd, lam):
    """Range-space solve in one compiled call, a* = −bias − kd(Φ_x ẋ + Φ_t) − kp Φ formed inside; writes ẍ, λ.
    Status 0 = solved; 1 = M not positive definite; 2 = a suspicious Schur pivot (`constrained_acceleration` then
    decides, with its rank check and messages); 3 = non-finite result; 4 = M's smallest Cholesky pivot² is below
    mass_ratio × its largest diagonal entry (M too ill-conditioned for a solve through M⁻¹: the caller solves the
    KKT matrix, `dynamics.multipliers.SCHUR_PIVOT_RATIO`; 0: no such test) — decided on the one factor of M."""
    jac, bias, phi, phi_t, has_phi_t, kp, kd = (rows.jac, rows.bias, rows.phi, rows.phi_t, rows.has_phi_t,
                                                 rows.kp, rows.kd)
    n, m = mass.shape[0], jac.shape[0]
    low = np.zeros((n, n))   # Cholesky factor of M
    if not _cholesky_factor(mass, low, _MASS_PIVOT_RATIO):
        return 1
    if mass_ratio > 0.0:
        smallest, largest = np.inf, 0.0
        for i in range(n):
            smallest = min(smallest, low[i, i] * low[i, i])
            largest = max(largest, mass[i, i])
        if smallest < mass_ratio * largest:
            return 4
    b = np.empty((m + 1, n))   # rows: Φ_x (m) and τ − h, each solved with M through its factor (M⁻¹Φ_xᵀ, M⁻¹(τ − h))
    for i in range(n):
        for r in range(m):
            b[r, i] = jac[r, i]
        b[m, i] = (tau[i] - h[i]) if has_tau else -h[i]
    for c in range(m + 1):
        _cholesky_solve(low, b[c], b[c])
    schur = np.empty((m, m))
    rhs = np.empty(m)
    for r in range(m):
        for c in range(m):
            s = 0.0
            for i in range(n):
                s += jac[r, i] * b[c, i]
            schur[r, c] = s
        rate = 0.0
        free = 0.0
        for i in range(n):
            rate += jac[r, i] * xd[i]
            free += jac[r, i] * b[m, i]
        if has_phi_t:
            rate += phi_t[r]
        rhs[r] = -bias[r] - kd * rate - kp * phi[r] - free
    sl = np.zeros((m, m))
    if not _cholesky_factor(schur, sl, pivot_check):
        return 2
    _cholesky_solve(sl, rhs, lam)
    for i in range(n):
        s = b[m, i]
        for r in range(m):
            s += b[r, i] * lam[r]
        if not np.isfinite(s):
            return 3
        xdd[i] = s
    return 0


def _null_space_kernel_py(mass, bias, tau, const, state, kp, kd, limit, work, out):
    """Constant rows Φ = A x − c (full row rank) by the null-space method: ẍ = T y + P a* with A T = 0 (T
    orthonormal), A P = I and a* = −kd Φ̇ − kp Φ; (TᵀMT) y = Tᵀ(τ − h − M P a*) by Cholesky; τ_out = M ẍ + h and
    λ = Pᵀ(τ_out − τ) (the torque PyBullet must apply, and the multipliers, for M ẍ + h = τ + Aᵀλ).

    Arguments are packed (each array argument costs ~0.13 µs to pass): const = `null_space_basis` (rows
    [A (m); c (1 row, first m entries); Tᵀ (k); Pᵀ (m)], n columns, k = n − m), state = [x; ẋ] (2 × n),
    work (n + k + 1) × n, out = [τ_out (n), λ (m)]. Status 0, −1 (nothing computed: max|Φ̇| > limit),
    1 (TᵀMT not positive definite) or 2 (non-finite torque)."""
    n = mass.shape[0]
    m = const.shape[0] - n - 1
    k = n - m
    c_row, t_row, p_row = m, m + 1, m + 1 + k          # first rows of c, Tᵀ, Pᵀ in const
    r_row, w_row = n, n + k                            # first rows of TᵀMT and w in work (M T: rows 0…n−1)
    worst = 0.0
    for i in range(m):                                 # a* = −kd Φ̇ − kp Φ, kept in out[n + i] until λ is known
        a = 0.0
        b = 0.0
        for j in range(n):
            a += const[i, j] * state[0, j]
            b += const[i, j] * state[1, j]
        if abs(b) > worst:
            worst = abs(b)
        out[n + i] = -kd * b - kp * (a - const[c_row, i])
    if worst > limit:
        return -1
    for i in range(n):                                 # w = P a* (the particular acceleration)
        s = 0.0
        for j in range(m):
            s += const[p_row + j, i] * out[n + j]
        work[w_row, i] = s
    for i in range(n):                                 # out[:n] = τ − h − M P a* (scratch)
        s = tau[i] - bias[i]
        for j in range(n):
            s -= mass[i, j] * work[w_row, j]
        out[i] = s
    for i in range(n):                                 # M T
        for c in range(k):
            s = 0.0
            for j in range(n):
                s += mass[i, j] * const[t_row + c, j]
            work[i, c] = s
    y = np.empty(k)
    for r in range(k):                                 # TᵀMT (lower triangle) and y = Tᵀ(τ − h − M P a*)
        for c in range(r + 1):
            s = 0.0
            for j in range(n):
                s += const[t_row + r, j] * work[j, c]
            work[r_row + r, c] = s
        s = 0.0
        for j in range(n):
            s += const[t_row + r, j] * out[j]
        y[r] = s
    low = np.zeros((k, k))                             # (TᵀMT) y = Tᵀ(…) by Cholesky
    if not _cholesky_factor(work[r_row:r_row + k], low, _MASS_PIVOT_RATIO):
        return 1
    _cholesky_solve(low, y, y)
    for i in range(n):                                 # ẍ = T y + P a*
        s = work[w_row, i]
        for c in range(k):
            s += const[t_row + c, i] * y[c]
        work[w_row, i] = s
    for i in range(n):                                 # τ_out = M ẍ + h
        s = bias[i]
        for j in range(n):
            s += mass[i, j] * work[w_row, j]
        if not np.isfinite(s):
            return 2
        out[i] = s
    for r in range(m):                                 # λ = Pᵀ(τ_out − τ)
        s = 0.0
        for j in range(n):
            s += const[p_row + r, j] * (out[j] - tau[j])
        out[n + r] = s
    return 0


# compiled_kernels' Cholesky kernels: `schur_kernel` and `null_space_kernel` bind the compiled ones before their
# kernel compiles;
# these defaults serve the Python form (numba disabled: debugging)
_cholesky_factor, _cholesky_solve, _MASS_PIVOT_RATIO = cholesky_factor, cholesky_solve, MASS_PIVOT_RATIO


def _cholesky_bindings() -> dict:
    """The compiled Cholesky kernels under the names the solve kernels call them by."""
    factor, solve = cholesky_kernels()
    return {"_cholesky_factor": factor, "_cholesky_solve": solve, "_MASS_PIVOT_RATIO": MASS_PIVOT_RATIO}


def schur_kernel():
    """The compiled `_schur_kernel_py` (numba, cached on disk)."""
    return jit.compiled(_schur_kernel_py, bind=_cholesky_bindings)


def null_space_kernel():
    """The compiled `_null_space_kernel_py` (its uncompiled form with BIOBULLET_NUMBA=0: debugging)."""
    return jit.compiled(_null_space_kernel_py, bind=_cholesky_bindings)


#: `_schur_kernel_py`, compiled on its first call, or run by Python (numba disabled: debugging)
schur_solve = jit.lazy(_schur_kernel_py, bind=_cholesky_bindings)



__all__ = ["ConstraintRows", "Corrector", "PIVOT_CHECK", "RANK_TOLERANCE", "check_rank", "constrained_acceleration",
           "factor_solve", "mass_factor", "null_space_basis", "null_space_kernel", "refuse_unheld", "schur_kernel",
           "schur_solve", "TreeDirections", "try_mass_factor", "unheld_direction",
           "velocity_projection"]
