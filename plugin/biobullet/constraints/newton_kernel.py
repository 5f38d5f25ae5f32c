"""`LoopResolver._resolve_lean` (constraints.implicit) in one compiled call, and the Newton constants both share.

The right-hand side of a reduced closed-loop model spends most of its time here, and in numpy the ~100 small array
operations of Newton, `_finish` and the rates cost ~10× the kinematics and loop-row kernels they call. Same
algorithm and tests as `LoopResolver._newton`/`_finish`/`resolve`. Compiled with cache=True (8 s to compile,
~0.1 s to load): numba's on-disk cache is keyed on this file only, so after editing the kernels of
constraints.loop_kernels that it calls, touch this file (and integrate/compiled_rhs.py, which calls this one).
"""
from __future__ import annotations

import numpy as np

from biobullet.core import jit

NEWTON_MAX_ITERATIONS = 50
STEP_TOLERANCE = 1e-13   # rad (or m): a Newton step this small has converged to round-off
CONTINUATION_STEP = 0.1  # rad (or m): input change above which the first Newton step is checked (continuation)
KANTOROVICH = 0.25       # cond₁(Φ_dep)·‖first Newton step‖₁ above which a large input change uses continuation


def _lu_solve_py(a, b):
    """Solve a x = b (b: n × m) by Gaussian elimination with partial pivoting; (x, ok) — ok False if singular."""
    x = b.copy()
    return x, _lu_solve_into(a.copy(), x)


def _lu_solve_into_py(a, x):
    """`_lu_solve_py` in place: a is overwritten by its elimination, x (n × m, the right-hand sides on entry) by
    the solution; returns ok (False if singular, x then undefined)."""
    n = a.shape[0]
    m = x.shape[1]
    for k in range(n):
        p = k
        big = abs(a[k, k])
        for i in range(k + 1, n):
            if abs(a[i, k]) > big:
                big, p = abs(a[i, k]), i
        if big == 0.0:
            return False
        if p != k:
            for j in range(n):
                a[k, j], a[p, j] = a[p, j], a[k, j]
            for j in range(m):
                x[k, j], x[p, j] = x[p, j], x[k, j]
        for i in range(k + 1, n):
            f = a[i, k] / a[k, k]
            if f != 0.0:
                for j in range(k + 1, n):
                    a[i, j] -= f * a[k, j]
                for j in range(m):
                    x[i, j] -= f * x[k, j]
    for k in range(n - 1, -1, -1):
        for j in range(m):
            s = x[k, j]
            for i in range(k + 1, n):
                s -= a[k, i] * x[i, j]
            x[k, j] = s / a[k, k]
    return True


_lu_solve_into = _lu_solve_into_py   # the compiled twin inside compiled callers (bound where they compile)


def _dependent_part_py(inverse, jk, known_values, extra):
    """−Φ_dep⁻¹ (Φ_kn v_kn + extra): the dependent joints' share of a derivative (G column, θ̇, γ) from the known
    joints' (`inverse` = Φ_dep⁻¹, `jk` = Φ_kn)."""
    nd, nk = jk.shape
    tmp = np.empty(nd)
    for i in range(nd):
        s = extra[i]
        for j in range(nk):
            s += jk[i, j] * known_values[j]
        tmp[i] = s
    out = np.empty(nd)
    for i in range(nd):
        s = 0.0
        for k in range(nd):
            s += inverse[i, k] * tmp[k]
        out[i] = -s
    return out


def _lean_kernel_py(meta, body, n_tangent, theta, rate, gradient, gamma, dep, known, known0, dep0, sensitivity,
                    u0, h0, anchor, tolerance, loose, warm_condition, revolute, condition_limit,
                    ancestry, point_body, offset, basis, kinds, row_start, n_rows):
    nd, nk, nq = dep.shape[0], known.shape[0], gradient.shape[1]
    no_rates = np.zeros(0)
    no_motion = np.zeros((1, 6))
    empty3 = np.zeros((0, 3, 3))
    saved = np.empty(nd)
    for i in range(nd):
        saved[i] = theta[dep[i]]
    fail = (1, np.inf, np.zeros((nd, nk)), np.zeros(nd), np.zeros(0), np.zeros(0), np.zeros(0), empty3,
            np.zeros((0, 3)), np.zeros((6, 0)), np.zeros((0, 6)), np.zeros((0, 6)))
    # input change: above CONTINUATION_STEP the Kantorovich test of `solve` guards the first step, and the
    # declared initial solution (anchor) is used by the generic path when it is nearer
    delta = np.empty(nk)
    jump, anchor_jump = 0.0, 0.0
    for j in range(nk):
        delta[j] = theta[known[j]] - known0[j]
        jump = max(jump, abs(delta[j]))
        if anchor.shape[0] == nk:
            anchor_jump = max(anchor_jump, abs(theta[known[j]] - anchor[j]))
    guard = jump > CONTINUATION_STEP
    if guard and anchor.shape[0] == nk and anchor_jump < jump:
        return fail
    # prediction: first order from the cached solution, second order along the cached known rate u0
    guess = dep0.copy()
    for i in range(nd):
        s = 0.0
        for j in range(nk):
            s += sensitivity[i, j] * delta[j]
        guess[i] += s
    if u0.shape[0] == nk and nk > 0:
        uu, ud = 0.0, 0.0
        for j in range(nk):
            uu += u0[j] * u0[j]
            ud += u0[j] * delta[j]
        along = ud / uu
        for i in range(nd):
            guess[i] += 0.5 * along * along * h0[i]
    for i in range(nd):
        theta[dep[i]] = guess[i]
    rot, pos, sub, _, _ = _KIN(meta, body, theta, no_rates, n_tangent, bool(False))
    phi, jac, _ = _ROWS(rot, pos, sub, no_motion, no_motion, ancestry, point_body, offset, basis, kinds,
                        row_start, n_rows, True, False)
    norm = np.sqrt(np.sum(phi * phi))
    step_norm = 0.0 if norm <= 1e-3 * tolerance else np.inf
    a = np.empty((nd, nd))
    rhs = np.empty((nd, 1))
    converged = False
    for _ in range(NEWTON_MAX_ITERATIONS):
        if (norm <= tolerance and step_norm <= 1e-7) or (loose >= 0.0 and norm <= loose):
            converged = True
            break
        for i in range(nd):
            for j in range(nd):
                a[i, j] = jac[i, dep[j]]
            rhs[i, 0] = phi[i]
        step, ok = _lu_solve(a, rhs)
        total = 0.0
        for i in range(nd):
            total += abs(step[i, 0])
        if not ok or not np.isfinite(total) or (guard and not warm_condition * total <= KANTOROVICH):
            for i in range(nd):
                theta[dep[i]] = saved[i]
            return fail
        guard = False
        biggest = 0.0
        for i in range(nd):
            theta[dep[i]] -= step[i, 0]
            biggest = max(biggest, abs(step[i, 0]))
        rot, pos, sub, _, _ = _KIN(meta, body, theta, no_rates, n_tangent, bool(False))
        phi, jac, _ = _ROWS(rot, pos, sub, no_motion, no_motion, ancestry, point_body, offset, basis, kinds,
                            row_start, n_rows, True, False)
        norm_new = np.sqrt(np.sum(phi * phi))
        if not (norm_new < norm or norm_new <= tolerance):
            for i in range(nd):
                theta[dep[i]] = saved[i]
            return fail
        norm = norm_new
        step_norm = biggest
        if step_norm <= STEP_TOLERANCE:
            converged = True
            break
    if not converged:
        for i in range(nd):
            theta[dep[i]] = saved[i]
        return fail
    # _finish: factor, 1-norm condition, last correction, angle wrapping
    for i in range(nd):
        for j in range(nd):
            a[i, j] = jac[i, dep[j]]
    inverse, ok = _lu_solve(a, np.eye(nd))
    if not ok:
        for i in range(nd):
            theta[dep[i]] = saved[i]
        return fail
    col_a, col_i = 0.0, 0.0
    for j in range(nd):
        sa, si = 0.0, 0.0
        for i in range(nd):
            sa += abs(a[i, j])
            si += abs(inverse[i, j])
        col_a, col_i = max(col_a, sa), max(col_i, si)
    condition = col_a * col_i
    if not np.isfinite(condition) or not condition < condition_limit:
        for i in range(nd):
            theta[dep[i]] = saved[i]
        return fail
    for i in range(nd):
        s = 0.0
        for j in range(nd):
            s += inverse[i, j] * phi[j]
        theta[dep[i]] -= s
    for i in range(nd):
        if revolute[i] != 0.0:
            wraps = np.round((theta[dep[i]] - guess[i]) / (2 * np.pi))
            theta[dep[i]] -= 2 * np.pi * wraps
    # sensitivity −Φ_dep⁻¹ Φ_kn, then G, θ̇ (−Φ_dep⁻¹ (Φ_kn x_kn), the order of `resolve`)
    jk = np.empty((nd, nk))
    for i in range(nd):
        for j in range(nk):
            jk[i, j] = jac[i, known[j]]
    sens = np.zeros((nd, nk))
    for i in range(nd):
        for j in range(nk):
            s = 0.0
            for k in range(nd):
                s += inverse[i, k] * jk[k, j]
            sens[i, j] = -s
    no_extra = np.zeros(nd)
    values = np.empty(nk)
    for c in range(nq):
        for j in range(nk):
            values[j] = gradient[known[j], c]
        column = _dependent_part(inverse, jk, values, no_extra)
        for i in range(nd):
            gradient[dep[i], c] = column[i]
    for j in range(nk):
        values[j] = rate[known[j]]
    dependent = _dependent_part(inverse, jk, values, no_extra)
    for i in range(nd):
        rate[dep[i]] = dependent[i]
    # bool(): not a literal, so the kinematics kernel keeps one specialisation
    rot, pos, sub, vel, acc = _KIN(meta, body, theta, rate, n_tangent, bool(True))
    _, _, bias = _ROWS(rot, pos, sub, vel, acc, ancestry, point_body, offset, basis, kinds, row_start, n_rows,
                       False, True)
    h = _dependent_part(inverse, jk, np.zeros(nk), bias)    # −Φ_dep⁻¹ b: the curvature of the cached solution
    for j in range(nk):
        values[j] = gamma[known[j]]
    dependent = _dependent_part(inverse, jk, values, bias)
    for i in range(nd):
        gamma[dep[i]] = dependent[i]
    # the new cached solution: (θ_known, θ_dep, sensitivity), and the known rate of the curvature term
    known_new = np.empty(nk)
    u = np.empty(nk)
    uu = 0.0
    for j in range(nk):
        known_new[j] = theta[known[j]]
        u[j] = rate[known[j]]
        uu += u[j] * u[j]
    dep_new = np.empty(nd)
    for i in range(nd):
        dep_new[i] = theta[dep[i]]
    if not uu > 1e-24:
        u = np.zeros(0)
    return 0, condition, sens, h, u, known_new, dep_new, rot, pos, sub, vel, acc


_lu_solve, _dependent_part = _lu_solve_py, _dependent_part_py   # rebound to compiled twins by `_lean_kernel`


def _lean_kernel(kernels):
    """The compiled `_lean_kernel_py` (numba; cached on disk) calling the compiled loop kernels `kernels`
    = (tree kinematics, loop rows), or None if it cannot be compiled."""
    kinematics, rows = kernels
    solve = lu_solve_kernel()
    if solve is None:
        return None
    return jit.compiled(_lean_kernel_py, bind={"_KIN": kinematics, "_ROWS": rows, "_lu_solve": solve,
                                               "_dependent_part": _dependent_part_py})


def lu_solve_kernel():
    """The compiled `_lu_solve_py` (inline; its in-place core bound), or None (no numba, or disabled)."""
    return jit.compiled(_lu_solve_py, bind={"_lu_solve_into": _lu_solve_into_py}, inline=True)
