"""Per-step arithmetic of `Bridge.apply()`: thin compiled adapters around THE constrained solve
(`biobullet.constraints.solve`), which owns the equations.

    linear_rows   Φ = Φ_x x − c and Φ̇ = Φ_x ẋ for constant rows (linear joint functions, fixed base);
                  returns max |Φ̇| (the velocity residual that decides whether to project).
    linear_torque `constraints.solve`'s null-space kernel: Φ, Φ̇, (TᵀMT) y = … by Cholesky, τ_out = Mẍ + h and λ.
    kkt_torque    `constraints.solve`'s range-space (Schur complement) kernel, then τ_out = τ + Φ_xᵀλ.
    loop_torque   the same with `<loop>` rows (point, planar) after the function rows (`Bridge._rows_stage`).
    rows_torque   explicit joint functions (polynomial, spline, Fourier, linear, expression; `model.joint_jets`):
                  the rows
                  Φ, Φ_x, Φ_t, b, optionally M and h from biobullet's own recursions
                  (`algorithms.compiled_kernels.tree_dynamics`), the step-end target and the Schur solve — one
                  call per step (`Bridge._rows_stage`).
    end_residual  the function rows at the end point x + dt ẋ + c dt² ẍ of the solve's ẍ (Φ and Φ_x written, max
                  |Φ| returned): the check of `Bridge._end_correction`;
    end_newton    that check and its Newton steps on λ (the Schur kernel with h = 0), the whole
                  `Bridge._end_correction` in one call.

The sizes are tiny (n + n_c ≈ 10…40), so the cost of a step is the number of Python → C calls, not flops: with
numba each kernel is one call; with BIOBULLET_NUMBA=0 (debugging) the same functions run by Python. kkt_torque returns a status ≠ 0 when the solve declines (M not positive definite, dependent rows): the
caller then solves by least squares (`constraints.solve.constrained_acceleration(..., redundant="least_squares")`).
"""
from __future__ import annotations

import numpy as np

from biobullet.core import jit
from biobullet.constraints import solve



def _linear_rows_py(jac, offset, x, xd, phi, phi_dot):
    m, n = jac.shape
    worst = 0.0
    for i in range(m):
        a = 0.0
        b = 0.0
        for j in range(n):
            a += jac[i, j] * x[j]
            b += jac[i, j] * xd[j]
        phi[i] = a - offset[i]
        phi_dot[i] = b
        if abs(b) > worst:
            worst = abs(b)
    return worst


def _kkt_torque_py(mass, bias, tau, jac, phi, xd, phi_t, has_phi_t, bias_c, kp, kd, xdd, lam, torque):
    """τ_out = τ + Φ_xᵀλ with λ from the Schur kernel (`_schur`, bound before this compiles); its status."""
    status = _schur(mass, bias, tau, True, solve.ConstraintRows(jac, phi, phi_t, has_phi_t, bias_c, kp, kd), xd,
                    _PIVOT, xdd, lam)
    if status != 0:
        return status
    n, m = mass.shape[0], jac.shape[0]
    for i in range(n):
        s = tau[i]
        for k in range(m):
            s += jac[k, i] * lam[k]
        torque[i] = s
    return 0


_PIVOT = solve.PIVOT_CHECK
_schur = solve.schur_solve   # the Schur kernel: `kernels` binds the compiled one; this serves the Python form


def _rows_torque_py(own, meta, body, gravity, mass, bias, tau, table, inputs, coef, t, base, x, xd, kp, kd, kb,
                    xdd, lam, torque):
    """τ_out = τ + Φ_xᵀλ for explicit function rows at the tree state (x, ẋ) — any base: base = (configuration,
    velocity) entries of the floating base and spherical joints leading x and ẋ (int64 (2,)); own: M, h from the
    tree recursions (the given mass/bias are then overwritten), else the given PyBullet ones. Status 0, or ≠ 0
    when the solve declines (the caller's general path decides)."""
    n = xd.shape[0]
    m = table.shape[0]
    if own:
        m_own, h_own = _tree(meta, body, x, xd, xd, gravity, n, bool(True), bool(True), bool(False))
        for i in range(n):
            bias[i] = h_own[i]
            for j in range(n):
                mass[i, j] = m_own[i, j]
    phi = np.empty(m)
    jac = np.empty((m, n))
    phi_t = np.empty(m)
    bias_c = np.empty(m)
    if _rows(table, inputs, coef, t, base[0], base[1], x, xd, phi, jac, phi_t, bias_c) < 0.0:
        return 4   # an expression not finite here: the general path reports it
    for r in range(m):
        bias_c[r] *= kb
    return _kkt(mass, bias, tau, jac, phi, xd, phi_t, True, bias_c, kp, kd, xdd, lam, torque)




def _loop_torque_py(own, meta, body, gravity, mass, bias, tau, table, inputs, coef, t, base, x, xd, loop_rows,
                    body_ancestry, spring_bodies, spring_points, spring_params, zero_length, kp, kd, kb, xdd, lam,
                    torque):
    """τ_out = τ + τ_springs + Φ_xᵀλ for explicit function rows (table, possibly empty) followed by `<loop>` rows
    (point, planar and revolute loops: `constraints.loop_kernels`, on the compiled tree kinematics), in `ConstraintSet`
    order; point-to-point springs (`forces.compiled._spring_kernel_py`, rows of spring_*: end b first) from the
    same kinematics; own: M, h from the tree recursions; base as in `_rows_torque_py`. Status 0, or ≠ 0 when the
    solve declines or a spring has zero length (the general path then decides and reports)."""
    n = xd.shape[0]
    nf = table.shape[0]
    n_rows = loop_rows.n_rows[0] if loop_rows.n_rows.shape[0] else 0
    m = nf + n_rows
    phi = np.empty(m)
    jac = np.empty((m, n))
    phi_t = np.zeros(m)
    bias_c = np.empty(m)
    if nf > 0:
        f_phi = np.empty(nf)
        f_jac = np.empty((nf, n))
        f_t = np.empty(nf)
        f_bias = np.empty(nf)
        if _rows(table, inputs, coef, t, base[0], base[1], x, xd, f_phi, f_jac, f_t, f_bias) < 0.0:
            return 4   # an expression not finite here: the general path reports it
        for r in range(nf):
            phi[r] = f_phi[r]
            phi_t[r] = f_t[r]
            bias_c[r] = f_bias[r]
            for c in range(n):
                jac[r, c] = f_jac[r, c]
    rot, pos, sub, vel, acc = _kin(meta, body, x, xd, n, bool(True))
    total = tau.copy()
    status, _ = _spring_forces(rot, pos, sub, body_ancestry, xd, spring_bodies, spring_points, spring_params,
                               zero_length, total)
    if status != 0:
        return 3
    if n_rows:
        l_phi, l_jac, l_bias = _loop_rows(loop_rows, int(0), (rot, pos, sub, vel, acc), bool(True), bool(True))
    for r in range(n_rows):
        phi[nf + r] = l_phi[r]
        bias_c[nf + r] = l_bias[r]
        for c in range(n):
            jac[nf + r, c] = l_jac[r, c]
    for r in range(m):
        bias_c[r] *= kb
    if own:
        m_own, h_own = _tree(meta, body, x, xd, xd, gravity, n, bool(True), bool(True), bool(False))
        for i in range(n):
            bias[i] = h_own[i]
            for j in range(n):
                mass[i, j] = m_own[i, j]
    return _kkt(mass, bias, total, jac, phi, xd, phi_t, True, bias_c, kp, kd, xdd, lam, torque)




def loop_torque_kernel():
    """The compiled `_loop_torque_py`, or None (numba missing or disabled: the bridge's general path serves)."""
    from biobullet.constraints.loop_kernels import loop_kernels
    fused = rows_torque_kernel()   # compiles and binds the shared callees
    loops = loop_kernels()
    if fused is None or loops is None:
        return None
    from biobullet.algorithms.compiled_kernels import tree_dynamics_kernel
    from biobullet.forces.compiled import spring_forces_kernel
    from biobullet.model.joint_jets import function_rows_kernel
    springs = spring_forces_kernel()
    if springs is None:
        return None
    kkt = jit.compiled(_kkt_torque_py, bind={"_schur": solve.schur_kernel()})
    return jit.compiled(_loop_torque_py, bind={"_tree": tree_dynamics_kernel(), "_rows": function_rows_kernel(),
                                               "_kkt": kkt,
                                               "_kin": loops[0], "_loop_rows": loops[1],
                                               "_spring_forces": springs})


def rows_torque_kernel():
    """The compiled `_rows_torque_py`, or None (numba missing or disabled: the bridge's general path serves)."""
    from biobullet.algorithms.compiled_kernels import tree_dynamics_kernel
    from biobullet.model.joint_jets import function_rows_kernel
    schur = solve.schur_kernel()
    tree, rows = tree_dynamics_kernel(), function_rows_kernel()
    if schur is None or tree is None or rows is None:
        return None
    kkt = jit.compiled(_kkt_torque_py, bind={"_schur": schur})
    if kkt is None:
        return None
    return jit.compiled(_rows_torque_py, bind={"_tree": tree, "_rows": rows, "_kkt": kkt})


def _end_residual_py(table, inputs, coef, t, x, xd, xdd, dt, c, x_end, zero, phi, jac, phi_t, bias):
    """max |Φ(x_end, t)| of the function rows at x_end = x + dt ẋ + c dt² ẍ (written into x_end, with Φ and Φ_x
    into phi and jac); −1 when a function's jets are not finite."""
    h = c * dt * dt
    for i in range(x.shape[0]):
        x_end[i] = x[i] + dt * xd[i] + h * xdd[i]
    if _rows(table, inputs, coef, t, 0, 0, x_end, zero, phi, jac, phi_t, bias) < 0.0:
        return -1.0
    worst = 0.0
    for r in range(phi.shape[0]):
        if abs(phi[r]) > worst:
            worst = abs(phi[r])
    return worst


def end_residual_kernel():
    """The compiled `_end_residual_py`, or None (numba missing or disabled: `Bridge._rows_at` serves)."""
    from biobullet.model.joint_jets import function_rows_kernel
    rows = function_rows_kernel()
    if rows is None:
        return None
    return jit.compiled(_end_residual_py, bind={"_rows": rows})


def _end_newton_py(table, inputs, coef, t, x, xd, xdd, dt, c, tolerance, iterations, mass, x_end, zero, phi, jac,
                   phi_t, bias, step, delta, torque, lam):
    """`Bridge._end_correction` in one call: up to `iterations` times, the function rows at the end point
    x + dt ẋ + c dt² ẍ (`_end_residual_py`) and, while max |Φ| > tolerance, the Newton step on the constraint
    forces Δλ = −(Φ_x M⁻¹ Φ_xᵀ)⁻¹ Φ/(c dt²) — the Schur kernel with h = 0, no τ and the target −Φ/(c dt²), which
    also gives M⁻¹Φ_xᵀΔλ — added to ẍ, τ and λ in place. 0, or ≠ 0 when a jet is not finite or the Schur kernel
    declines (the caller's numpy loop then decides, with its clear errors)."""
    n, m = xd.shape[0], phi.shape[0]
    gain = 1.0 / (c * dt * dt)
    none_n, none_m = np.zeros(n), np.zeros(m)
    for _ in range(iterations):
        worst = _end(table, inputs, coef, t, x, xd, xdd, dt, c, x_end, zero, phi, jac, phi_t, bias)
        if worst < 0.0:
            return 1
        if worst <= tolerance:
            return 0
        rows = solve.ConstraintRows(jac, phi, none_m, bool(False), none_m, gain, 0.0)
        if _schur(mass, none_n, none_n, bool(False), rows, none_n, _PIVOT, step, delta) != 0:
            return 2
        for i in range(n):
            xdd[i] += step[i]
            s = 0.0
            for r in range(m):
                s += jac[r, i] * delta[r]
            torque[i] += s
        for r in range(m):
            lam[r] += delta[r]
    return 0


def end_newton_kernel():
    """The compiled `_end_newton_py`, or None (numba missing or disabled: `Bridge._end_correction`'s numpy loop
    serves)."""
    end, schur = end_residual_kernel(), solve.schur_kernel()
    if end is None or schur is None:
        return None
    return jit.compiled(_end_newton_py, bind={"_end": end, "_schur": schur})


def _linear_own_py(meta, body, gravity, tau, null, flat, kp, kd, limit, work, out):
    """`linear_torque` (the null-space kernel) with M and h from the tree recursions, in one call (status as
    the null-space kernel's); flat = [x, ẋ] (2n, as read from PyBullet: no reshape per step in Python)."""
    n = tau.shape[0]
    state = flat.reshape((2, n))
    mass, bias = _tree(meta, body, state[0], state[1], state[1], gravity, n, bool(True), bool(True), bool(False))
    return _null(mass, bias, tau, null, state, kp, kd, limit, work, out)




def linear_own_kernel():
    """The compiled `_linear_own_py`, or None (numba missing or disabled)."""
    from biobullet.algorithms.compiled_kernels import tree_dynamics_kernel
    tree = tree_dynamics_kernel()
    if tree is None:   # numba disabled: the bridge's general path serves
        return None
    return jit.compiled(_linear_own_py, bind={"_tree": tree, "_null": solve.null_space_kernel()})


def kernels():
    """(linear_rows, kkt_torque, linear_torque): numba-compiled (cached on disk), or the same functions run by
    Python with BIOBULLET_NUMBA=0 (debugging)."""
    schur = solve.schur_kernel()
    kkt = jit.compiled(_kkt_torque_py, bind={"_schur": schur}) if schur is not None else None
    return (jit.compiled(_linear_rows_py) or _linear_rows_py, kkt or _kkt_torque_py, solve.null_space_kernel())


pack_linear = solve.null_space_basis

__all__ = ["end_newton_kernel", "end_residual_kernel", "kernels", "linear_own_kernel", "loop_torque_kernel",
           "pack_linear", "rows_torque_kernel"]
