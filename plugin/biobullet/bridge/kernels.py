"""Per-step arithmetic of `Bridge.apply()` as three small kernels (the hot path of the bridge).

    linear_rows   Φ = Φ_x x − c and Φ̇ = Φ_x ẋ for constant rows (linear joint functions, fixed base);
                  returns max |Φ̇| (the velocity residual that decides whether to project).
    linear_torque the whole constrained step for constant rows in one call: Φ, Φ̇, the null-space solve
                  (TᵀMT)y = … by Cholesky of the small reduced mass matrix, τ_out = Mẍ + h and λ.
    kkt_torque    the KKT system [[M, Φ_xᵀ], [Φ_x, 0]] [ẍ; −λ] = [τ − h; −b − 2αΦ̇ − β²Φ] by LU with partial
                  pivoting (what LAPACK getrf/getrs do, unblocked), then λ and τ + Φ_xᵀλ.

The sizes are tiny (n + n_c ≈ 10…40), so the cost of a step is the number of Python → C calls, not flops:
with numba each kernel is one call (~1–2 µs, most of it passing the arguments — hence the packed arrays of
linear_torque). Without numba (or with BIOBULLET_NUMBA=0 in the environment) the same results come from numpy +
one LAPACK call (gesv / posv), ~15 numpy calls per step: much slower on these sizes (shoulder: bridge ≈ 2.2×
the minimal loop instead of ≈ 1.1×). kkt_torque returns a status ≠ 0 for a zero pivot or a non-finite solution
(redundant rows): the caller then solves by least squares.
"""
from __future__ import annotations

import math

import numpy as np

from biobullet.core import jit


# ---------------------------------------------------------------------------------------------- numba kernels
def _linear_rows(jac, offset, x, xd, phi, phi_dot):
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


def _kkt_torque(mass, bias, tau, jac, phi, phi_dot, bias_c, alpha, beta, a, r, lam, torque):
    n = mass.shape[0]
    m = jac.shape[0]
    size = n + m
    two_alpha, beta2 = 2.0 * alpha, beta * beta
    for i in range(n):
        for j in range(n):
            a[i, j] = mass[i, j]
        for k in range(m):
            a[i, n + k] = jac[k, i]
        r[i] = tau[i] - bias[i]
    for k in range(m):
        for j in range(n):
            a[n + k, j] = jac[k, j]
        for j in range(m):
            a[n + k, n + j] = 0.0
        r[n + k] = -bias_c[k] - two_alpha * phi_dot[k] - beta2 * phi[k]
    # LU with partial pivoting, applied to r on the fly
    for col in range(size):
        pivot = col
        best = abs(a[col, col])
        for i in range(col + 1, size):
            value = abs(a[i, col])
            if value > best:
                best, pivot = value, i
        if best == 0.0:
            return 1
        if pivot != col:
            for j in range(col, size):
                a[col, j], a[pivot, j] = a[pivot, j], a[col, j]
            r[col], r[pivot] = r[pivot], r[col]
        inverse = 1.0 / a[col, col]
        for i in range(col + 1, size):
            factor = a[i, col] * inverse
            if factor != 0.0:
                for j in range(col + 1, size):
                    a[i, j] -= factor * a[col, j]
                r[i] -= factor * r[col]
    for i in range(size - 1, -1, -1):
        s = r[i]
        for j in range(i + 1, size):
            s -= a[i, j] * r[j]
        r[i] = s / a[i, i]
        if not np.isfinite(r[i]):
            return 2
    for k in range(m):
        lam[k] = -r[n + k]
    for i in range(n):
        s = tau[i]
        for k in range(m):
            s += jac[k, i] * lam[k]
        torque[i] = s
    return 0


def _linear_torque(mass, bias, tau, const, state, alpha, beta, limit, work, out):
    """Constant rows Φ = A x − c (full row rank) by the null-space method: ẍ = T y + P g with A T = 0 (T
    orthonormal), A P = I (P = A⁺) and g = −2αΦ̇ − β²Φ; (TᵀMT) y = Tᵀ(τ − h − M P g) by Cholesky;
    τ_out = M ẍ + h and λ = (AAᵀ)⁻¹A(τ_out − τ) = Pᵀ(τ_out − τ).

    Arguments are packed (each array argument costs ~0.13 µs to pass): const = `pack_linear` (rows
    [A (m); c (1 row, first m entries); Tᵀ (k); Pᵀ (m)], n columns, k = n − m), state = [x; ẋ] (2 × n),
    work (n + k + 1) × n, out = [τ_out (n), λ (m)]. Status 0, −1 (nothing computed: max|Φ̇| > limit),
    1 (TᵀMT not positive definite) or 2 (non-finite torque)."""
    n = mass.shape[0]
    m = const.shape[0] - n - 1
    k = n - m
    c_row, t_row, p_row = m, m + 1, m + 1 + k          # first rows of c, Tᵀ, Pᵀ in const
    r_row, w_row = n, n + k                            # first rows of [TᵀMT | rhs] and w in work (M T: rows 0…n−1)
    worst = 0.0
    for i in range(m):                                 # g = −2αΦ̇ − β²Φ, kept in out[n + i] until λ is known
        a = 0.0
        b = 0.0
        for j in range(n):
            a += const[i, j] * state[0, j]
            b += const[i, j] * state[1, j]
        if abs(b) > worst:
            worst = abs(b)
        out[n + i] = -2.0 * alpha * b - beta * beta * (a - const[c_row, i])
    if worst > limit:
        return -1
    for i in range(n):                                 # w = P g (the particular acceleration)
        s = 0.0
        for j in range(m):
            s += const[p_row + j, i] * out[n + j]
        work[w_row, i] = s
    for i in range(n):                                 # out[:n] = τ − h − M P g (scratch)
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
    for r in range(k):                                 # TᵀMT (lower triangle) and Tᵀ(τ − h − M P g) in column k
        for c in range(r + 1):
            s = 0.0
            for j in range(n):
                s += const[t_row + r, j] * work[j, c]
            work[r_row + r, c] = s
        s = 0.0
        for j in range(n):
            s += const[t_row + r, j] * out[j]
        work[r_row + r, k] = s
    for c in range(k):                                 # Cholesky in place, forward substitution on column k
        d = work[r_row + c, c]
        for j in range(c):
            d -= work[r_row + c, j] * work[r_row + c, j]
        if not d > 0.0:
            return 1
        d = np.sqrt(d)
        work[r_row + c, c] = d
        for r in range(c + 1, k):
            s = work[r_row + r, c]
            for j in range(c):
                s -= work[r_row + r, j] * work[r_row + c, j]
            work[r_row + r, c] = s / d
        s = work[r_row + c, k]
        for j in range(c):
            s -= work[r_row + c, j] * work[r_row + j, k]
        work[r_row + c, k] = s / d
    for c in range(k - 1, -1, -1):                     # back substitution: y in column k
        s = work[r_row + c, k]
        for j in range(c + 1, k):
            s -= work[r_row + j, c] * work[r_row + j, k]
        work[r_row + c, k] = s / work[r_row + c, c]
    for i in range(n):                                 # ẍ = T y + P g
        s = work[w_row, i]
        for c in range(k):
            s += const[t_row + c, i] * work[r_row + c, k]
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


# ---------------------------------------------------------------------------------------------- numpy fallback
def _linear_rows_numpy(jac, offset, x, xd, phi, phi_dot):
    np.subtract(jac @ x, offset, out=phi)
    np.matmul(jac, xd, out=phi_dot)
    return float(np.abs(phi_dot).max()) if len(phi_dot) else 0.0


def _kkt_torque_numpy(mass, bias, tau, jac, phi, phi_dot, bias_c, alpha, beta, a, r, lam, torque):
    from scipy.linalg.lapack import dgesv
    n = mass.shape[0]
    a[:n, :n] = mass
    a[:n, n:] = jac.T
    a[n:, :n] = jac
    a[n:, n:] = 0.0
    np.subtract(tau, bias, out=r[:n])
    r[n:] = -bias_c - 2.0 * alpha * phi_dot - beta * beta * phi
    solution, info = dgesv(a, r)[2:]
    if info != 0:
        return 1
    if not np.all(np.isfinite(solution)):
        return 2
    np.negative(solution[n:], out=lam)
    np.add(tau, jac.T @ lam, out=torque)
    return 0


def _linear_torque_numpy(mass, bias, tau, const, state, alpha, beta, limit, work, out):
    from scipy.linalg.lapack import dposv
    n = mass.shape[0]
    m = const.shape[0] - n - 1
    jac, basis_t, lift_t = const[:m], const[m + 1:n + 1], const[n + 1:]
    rows = jac @ state.T                                   # [Φ + c, Φ̇] in one product
    if max(rows[:, 1].max(), -rows[:, 1].min()) > limit:
        return -1
    particular = lift_t.T @ (-2.0 * alpha * rows[:, 1] - beta * beta * (rows[:, 0] - const[m, :m]))
    reduced_t = basis_t @ mass                             # TᵀM (M symmetric)
    _, y, info = dposv(reduced_t @ basis_t.T, basis_t @ (tau - bias) - reduced_t @ particular)
    if info != 0:
        return 1
    torque = mass @ (basis_t.T @ y + particular) + bias
    if not math.isfinite(torque.sum()):
        return 2
    out[:n] = torque
    out[n:] = lift_t @ (torque - tau)
    return 0


_compiled: dict = {}


def _lazy(function, fallback):
    """The compiled twin of `function` (`core.jit.compiled`) (or loaded from __pycache__) on its first call; `fallback` if
    numba fails. One wrapper per kernel, shared by all bridges."""
    name = function.__name__
    if name in _compiled:
        return _compiled[name]

    def first_call(*args):
        compiled = jit.compiled(function)
        try:
            result = compiled(*args) if compiled is not None else None
        except Exception:  # pragma: no cover - broken numba install: the numpy path gives the same numbers
            compiled = None
        if compiled is None:
            compiled = fallback
            result = fallback(*args)
        _compiled[name] = compiled
        holder[0] = compiled
        return result

    holder = [first_call]

    def kernel(*args):
        return holder[0](*args)

    kernel.__name__ = name
    kernel.resolve = lambda: holder[0]   # the compiled dispatcher once the first call has happened
    _compiled[name] = kernel
    return kernel


def kernels():
    """(linear_rows, kkt_torque, linear_torque): numba-compiled on first call (kept in __pycache__), or the numpy
    versions without numba / with BIOBULLET_NUMBA=0. Callers keep `kernel.resolve()` after a warm-up call to
    skip the wrapper."""
    pairs = ((_linear_rows, _linear_rows_numpy), (_kkt_torque, _kkt_torque_numpy),
             (_linear_torque, _linear_torque_numpy))
    if not jit.ENABLED:
        return tuple(numpy_version for _, numpy_version in pairs)
    return tuple(_lazy(f, numpy_version) for f, numpy_version in pairs)


def resolved(kernel):
    """The compiled function behind a `kernels()` entry once it has been called (else the entry itself)."""
    resolve = getattr(kernel, "resolve", None)
    return kernel if resolve is None else resolve()


def pack_linear(jac: np.ndarray, offset: np.ndarray):
    """`const` of `linear_torque` for constant rows Φ = A x − c (A = jac, m × n): rows [A; c; Tᵀ; Pᵀ] with T an
    orthonormal basis of ker A (k = n − m columns) and P = A⁺ (A P = I; (AAᵀ)⁻¹A = Pᵀ gives λ from Φ_xᵀλ).
    None if A has dependent rows (or none, or as many as columns): then the KKT path is used."""
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


__all__ = ["kernels", "pack_linear", "resolved"]
