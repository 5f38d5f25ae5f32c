"""Multipliers formulation (Lagrange equations of the first kind, paper 003) over the FULL tree coordinates x.

    M(x) ẍ + h(x, ẋ) = τ + Φ_xᵀ λ
    Φ_x ẍ = −bias(x, ẋ, t) − 2α Φ̇ − β² Φ          (index-1 form with Baumgarte stabilization)
with Φ the stacked joint-function and loop rows of `constraints.equations` and Φ̇ = Φ_x ẋ + Φ_t. λ are
constraint forces in the rows' units (N for point/planar loop rows, N·m per unit direction cosine for
revolute axis rows, N·m or N for joint-function rows): Φ_xᵀ λ is the joint-space reaction.
Default Baumgarte gains α = β = 10 s⁻¹ (critically damped drift decay with a 0.1 s time constant); at a
consistent state (Φ = Φ̇ = 0) they have no effect. Use (0, 0) for the pure index-1 DAE.
"""
from __future__ import annotations

import numpy as np
from scipy.linalg.lapack import dpotrf as _potrf, dpotrs as _potrs

from biobullet.constraints.equations import constraint_set
from biobullet.constraints.loops import loop_terms, point_state, tree_kinematics
from biobullet.core.errors import ModelError, SolverError
from biobullet.dynamics.formulation import JOINT, Formulation, register_formulation
from biobullet.algorithms.vectorized import mass_matrix_and_bias

DEFAULT_BAUMGARTE = (10.0, 10.0)
RANK_TOLERANCE = 1e-10     # relative singular value of the scaled constraint Jacobian treated as zero


def _state(x, xd, t) -> str:
    text = f"t = {t:.17g}, x = {np.array2string(np.asarray(x), precision=17, separator=', ')}"
    if xd is not None:
        text += f", xd = {np.array2string(np.asarray(xd), precision=17, separator=', ')}"
    return text


def _check_rank(jac: np.ndarray, names, x, t, xd=None) -> None:
    if not len(jac):
        return
    scale = np.linalg.norm(jac, axis=1)
    if np.any(scale == 0):
        raise SolverError("constraint row(s) " + ", ".join(n for n, s in zip(names, scale) if s == 0)
                          + " do not depend on any coordinate at " + _state(x, xd, t))
    singular = np.linalg.svd(jac / scale[:, None], compute_uv=False)
    if len(jac) > jac.shape[1] or singular[-1] < RANK_TOLERANCE * singular[0]:
        rank = int(np.sum(singular > RANK_TOLERANCE * singular[0]))
        raise SolverError(f"constraint Jacobian is rank deficient ({rank} independent of {len(jac)} rows: "
                          + ", ".join(names) + "); redundant loop equations (use type=\"planar\" for planar "
                          "mechanisms) or a singular (toggle) configuration at " + _state(x, xd, t))


def _cholesky(mass: np.ndarray, x, t) -> np.ndarray:
    factor, info = _potrf(mass, lower=1, clean=1)
    if info != 0:
        raise SolverError("the tree mass matrix is not positive definite (a joint moves no mass) at "
                          + _state(x, None, t))
    return factor


def _minv(factor: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    return _potrs(factor, rhs, lower=1)[0]


#: smallest Cholesky pivot of the Schur complement, relative to its diagonal entry (squared sine of the angle
#: between a constraint row and the span of the previous rows, M⁻¹ metric), below which the full rank check
#: (SVD) decides; well above the SVD's RANK_TOLERANCE², so no rank-deficient case passes unchecked
PIVOT_CHECK = 1e-8


def _schur_factor(schur: np.ndarray, jac: np.ndarray, names, x, t, xd) -> np.ndarray | None:
    """Cholesky factor of Φ_x M⁻¹ Φ_xᵀ; rank deficiency is detected from its pivots (SVD only when they are
    suspicious); None = full rank but badly conditioned (solve it by LU)."""
    factor, info = _potrf(schur, lower=1, clean=1)
    if info == 0:
        pivots = factor.diagonal()
        if (pivots * pivots > PIVOT_CHECK * schur.diagonal()).all():
            return factor
    _check_rank(jac, names, x, t, xd)
    return None


def constrained_accelerations(model, x, xd, tau=None, t: float = 0.0, *,
                              baumgarte: tuple[float, float] = DEFAULT_BAUMGARTE) -> tuple[np.ndarray, np.ndarray]:
    """(ẍ, λ) from the KKT system; `tau` = applied joint-space generalized forces (n_tangent), default zero."""
    x, xd = np.asarray(x, dtype=float), np.asarray(xd, dtype=float)
    cset = constraint_set(model)
    mass, h = mass_matrix_and_bias(model, x, xd)
    kernel = _kkt_kernel() if cset.n else None
    if kernel is not None:   # compiled hot path; the numpy path below decides (and raises) when it declines
        alpha, beta = baumgarte
        if cset.functions:
            phi, jac, phi_t, bias = cset.all_terms(x, xd, t)
        else:
            phi, jac, bias = loop_terms(model, cset.loops, x, xd)
            phi_t = None
        tau_arr = _NO_TAU if tau is None else np.asarray(tau, dtype=float)
        status, xdd, lam = kernel(mass, h, tau_arr, tau is not None, jac, bias, phi,
                                  _NO_TAU if phi_t is None else np.asarray(phi_t, dtype=float), phi_t is not None,
                                  xd, float(alpha), float(beta), PIVOT_CHECK)
        if status == 0:
            return xdd, lam
    rhs_dyn = -h if tau is None else np.asarray(tau, dtype=float) - h
    factor = _cholesky(mass, x, t)
    if cset.n == 0:
        return _minv(factor, rhs_dyn), np.zeros(0)
    alpha, beta = baumgarte
    if cset.functions:
        phi, jac, phi_t, bias = cset.all_terms(x, xd, t)
        rhs_con = -bias - 2.0 * alpha * (jac @ xd + phi_t) - beta * beta * phi
    else:   # loops only (no Φ_t): the loop rows directly, without the generic stacking
        phi, jac, bias = loop_terms(model, cset.loops, x, xd)
        rhs_con = -bias - 2.0 * alpha * (jac @ xd) - beta * beta * phi
    # Schur complement of the symmetric KKT matrix [M Φ_xᵀ; Φ_x 0]: (Φ_x M⁻¹ Φ_xᵀ) λ = rhs − Φ_x M⁻¹ (τ − h),
    # both solves with M through its one Cholesky factor
    stacked = np.empty((len(rhs_dyn), len(jac) + 1))
    stacked[:, :-1] = jac.T
    stacked[:, -1] = rhs_dyn
    both = _minv(factor, stacked)
    minv_jt, free = both[:, :-1], both[:, -1]
    schur = jac @ minv_jt
    schur_factor = _schur_factor(schur, jac, cset.names, x, t, xd)
    rhs_lam = rhs_con - jac @ free
    lam = _potrs(schur_factor, rhs_lam, lower=1)[0] if schur_factor is not None else np.linalg.solve(schur, rhs_lam)
    return free + minv_jt @ lam, lam


_NO_TAU = np.zeros(0)


def _kkt_kernel_py(mass, h, tau, has_tau, jac, bias, phi, phi_t, has_phi_t, xd, alpha, beta, pivot_check):
    """(status, ẍ, λ) of the Schur-complement KKT solve of `constrained_accelerations` in one compiled call:
    status 0 = solved; 1 = M not positive definite, 2 = a suspicious Schur pivot (the numpy path then decides,
    with its rank check and messages)."""
    n, m = mass.shape[0], jac.shape[0]
    xdd = np.zeros(n)
    lam = np.zeros(m)
    low = np.zeros((n, n))   # Cholesky factor of M
    if not _cholesky_factor(mass, low, 0.0):
        return 1, xdd, lam
    # columns: Φ_xᵀ (m) and τ − h; solved with M through its factor
    b = np.empty((n, m + 1))
    for i in range(n):
        for r in range(m):
            b[i, r] = jac[r, i]
        b[i, m] = (tau[i] - h[i]) if has_tau else -h[i]
    for c in range(m + 1):
        for i in range(n):
            s = b[i, c]
            for k in range(i):
                s -= low[i, k] * b[k, c]
            b[i, c] = s / low[i, i]
        for i in range(n - 1, -1, -1):
            s = b[i, c]
            for k in range(i + 1, n):
                s -= low[k, i] * b[k, c]
            b[i, c] = s / low[i, i]
    schur = np.empty((m, m))
    rhs = np.empty(m)
    for r in range(m):
        for c in range(m):
            s = 0.0
            for i in range(n):
                s += jac[r, i] * b[i, c]
            schur[r, c] = s
        rate = 0.0
        free = 0.0
        for i in range(n):
            rate += jac[r, i] * xd[i]
            free += jac[r, i] * b[i, m]
        if has_phi_t:
            rate += phi_t[r]
        rhs[r] = -bias[r] - 2.0 * alpha * rate - beta * beta * phi[r] - free
    sl = np.zeros((m, m))   # Cholesky factor of the Schur complement, pivots checked as in `_schur_factor`
    if not _cholesky_factor(schur, sl, pivot_check):
        return 2, xdd, lam
    _cholesky_solve(sl, rhs, lam)
    for i in range(n):
        s = b[i, m]
        for r in range(m):
            s += b[i, r] * lam[r]
        xdd[i] = s
    return 0, xdd, lam


# compiled_kernels' Cholesky kernels, compiled and bound before the KKT kernel compiles
_cholesky_factor = _cholesky_solve = None


def _kkt_kernel():
    """The compiled `_kkt_kernel_py` (numba, cached on disk), or None (the numpy path serves)."""
    global _cholesky_factor, _cholesky_solve
    from biobullet.algorithms.compiled_kernels import _cholesky_factor_py, _cholesky_solve_py
    from biobullet.core import jit
    return jit.compiled(_kkt_kernel_py, bind={"_cholesky_factor": _cholesky_factor_py,
                                              "_cholesky_solve": _cholesky_solve_py})


def project_velocities(model, x, xd, t: float = 0.0) -> np.ndarray:
    """ẋ closest to `xd` in the M(x) metric with Φ_x ẋ + Φ_t = 0."""
    x, xd = np.asarray(x, dtype=float), np.asarray(xd, dtype=float)
    cset = constraint_set(model)
    if cset.n == 0:
        return xd.copy()
    _, jac, phi_t, _ = cset.all_terms(x, None, t)
    _check_rank(jac, cset.names, x, t, xd)
    factor = _cholesky(mass_matrix_and_bias(model, x)[0], x, t)
    minv_jt = _minv(factor, jac.T)
    return xd - minv_jt @ np.linalg.solve(jac @ minv_jt, jac @ xd + phi_t)


def project_positions(model, x, t: float = 0.0, *, tolerance: float = 1e-12,
                      max_iterations: int = 30) -> np.ndarray:
    """x with Φ(x, t) = 0, by Gauss–Newton steps of minimal norm in the M(x) metric (M frozen at the input).

    `tolerance` is on |Φ|∞ relative to the model's length scale (rows in m or rad). SolverError if it fails.
    """
    x = np.array(x, dtype=float)
    cset = constraint_set(model)
    if cset.n == 0:
        return x
    factor = _cholesky(mass_matrix_and_bias(model, x)[0], x, t)
    scale = max([np.linalg.norm(b.translation) for b in model.bodies] + [1.0])
    for _ in range(max_iterations):
        phi, jac, _, _ = cset.all_terms(x, None, t)
        if np.max(np.abs(phi)) <= tolerance * scale:
            return x
        minv_jt = _minv(factor, jac.T)
        try:
            step = -minv_jt @ np.linalg.solve(jac @ minv_jt, phi)
        except np.linalg.LinAlgError:
            break
        x = model.integrate_configuration(x, step, 1.0)
    phi = cset.residual(x, t)
    if np.max(np.abs(phi)) <= tolerance * scale:
        return x
    raise SolverError(f"position projection failed: |Φ|∞ = {np.max(np.abs(phi)):.3g} at " + _state(x, None, t))


def joint_reactions(model, x, lam) -> tuple[np.ndarray, dict[str, dict[str, np.ndarray]]]:
    """(Φ_xᵀ λ, per loop {"point": world point A, "force": N, "moment": N·m}), world axes.

    "force"/"moment" act on link_a at the loop point A (the opposite acts on link_b), from the loop type's
    `reaction` (built-ins: the moment is non-zero only for revolute loops; at non-closed planar states the
    basis-rotation term is neglected; plugin types without `reaction` report zeros).
    """
    x, lam = np.asarray(x, dtype=float), np.asarray(lam, dtype=float)
    cset = constraint_set(model)
    jac = cset.jacobian(x)
    kin = tree_kinematics(model, x)
    per_loop: dict[str, dict[str, np.ndarray]] = {}
    for loop in cset.loops:
        rows = lam[cset.row_slices[loop.name]]
        a = point_state(model, kin, loop.link_a, loop.xyz_a, jacobian=False)
        b = point_state(model, kin, loop.link_b, loop.xyz_b, jacobian=False)
        force, moment = loop.law.reaction(a, b, rows)
        per_loop[loop.name] = {"point": a.position, "force": force, "moment": moment}
    return jac.T @ lam, per_loop


@register_formulation
class MultiplierFormulation(Formulation):
    """Lagrange's equations of the first kind over the whole tree (a DAE of index 1 with Baumgarte gains)."""

    name = "multipliers"
    description = "Lagrange multipliers over the whole tree: KKT solve, Baumgarte stabilisation, projection (paper 003)"
    state_space = JOINT
    can_project = True
    has_multipliers = True

    def mass_matrix(self, model, q, t):
        raise ModelError("formulation 'multipliers' integrates the whole tree with constraint forces: it has no "
                         "reduced mass matrix", argument="formulation",
                         expected="a generalized formulation (reduced, matrix_calculus, …) for M and h")

    bias_forces = mass_and_bias = mass_matrix

    def forward_dynamics(self, model, q, v, tau, t):
        """v̇ of the independent coordinates: ẍ of the tree from the KKT solve, read at their slots (the
        generalized forces Q act on the independent joints, whose rows of G are the identity)."""
        x, xd, _, _ = model.joint_state(q, v, t)
        slots = model.velocity_slots
        torque = None
        if tau is not None:
            torque = np.zeros(model.n_tangent)
            torque[slots] = tau
        return constrained_accelerations(model, x, xd, torque, t)[0][slots]

    def joint_accelerations(self, model, x, xd, tau, t, **options):
        return constrained_accelerations(model, x, xd, tau, t, **options)

    def project_positions(self, model, x, t):
        return project_positions(model, x, t)

    def project_velocities(self, model, x, xd, t):
        return project_velocities(model, x, xd, t)
