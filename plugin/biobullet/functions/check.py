"""Finite-difference check of a joint function's analytic gradient and Hessian.

Central differences over z = (x..., t): the gradient from differences of the value, the Hessian from
differences of the analytic gradient (one order of differencing less than differencing values twice).
Default step h = ε^(1/3) ≈ 6e-6 (absolute, every component): it balances the O(h²·f''')
truncation error against the O(ε·|f|/h) rounding error; both are then ~1e-10 relative for functions
varying on an O(1) scale. The step is absolute, not relative to |z|, because angles and time enter
periodic functions whose scale does not grow with |z| (a relative step at t = 1000 s would be 6e-3 s);
rounding of z ± h adds ~ε·|z|/h relative, negligible for |z| ≲ 1e4 (SI units: rad, m, s).
Errors are normwise: max|fd − analytic| / max(1, max|analytic|), separately for gradient and Hessian
(entrywise relative errors would fail on small entries next to a large value, where the difference
quotient's rounding error ε|f|/h dominates). The default tolerance 1e-6 leaves about four orders of
magnitude of margin over the expected FD error, while a wrong derivative is off by O(1).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from biobullet.functions.base import JointFunction

DEFAULT_STEP = float(np.finfo(float).eps ** (1.0 / 3.0))  # ≈ 6.06e-6
DEFAULT_TOLERANCE = 1e-6


@dataclass(frozen=True)
class DerivativeCheck:
    """Errors of the analytic derivatives against central finite differences.

    *_abs_error: max |fd − analytic|; *_rel_error: that divided by max(1, max |analytic|) (normwise:
    absolute for small derivatives, relative for large ones). hessian_asymmetry: max |H − Hᵀ| on the
    same scale. ok: all three ≤ tolerance and everything finite.
    """

    gradient_abs_error: float
    gradient_rel_error: float
    hessian_abs_error: float
    hessian_rel_error: float
    hessian_asymmetry: float
    step: np.ndarray
    tolerance: float
    ok: bool
    gradient_fd: np.ndarray
    hessian_fd: np.ndarray

    def __str__(self) -> str:
        return (f"DerivativeCheck(ok={self.ok}, gradient rel {self.gradient_rel_error:.2e}, "
                f"hessian rel {self.hessian_rel_error:.2e}, asymmetry {self.hessian_asymmetry:.2e}, "
                f"tol {self.tolerance:.1e})")


def check_derivatives(function: JointFunction, x: np.ndarray, t: float = 0.0, h: float | None = None,
                      *, tol: float = DEFAULT_TOLERANCE) -> DerivativeCheck:
    """Compare `function.evaluate(x, t)` derivatives with central differences at (x, t).

    h: step for every component (default ε^(1/3) ≈ 6e-6, see module docstring); tol: see DerivativeCheck.
    """
    x = np.asarray(x, dtype=float).reshape(-1)
    z = np.append(x, float(t))
    m = len(z)
    steps = np.full(m, DEFAULT_STEP if h is None else float(h))

    def jet(point: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
        value, gradient, hessian = function.evaluate(point[:-1].copy(), float(point[-1]))
        return float(value), np.asarray(gradient, dtype=float), np.asarray(hessian, dtype=float)

    _, gradient, hessian = jet(z)
    if gradient.shape != (m,) or hessian.shape != (m, m):
        raise ValueError(f"{function!r} returned gradient {gradient.shape} / Hessian {hessian.shape}, "
                         f"expected ({m},) / ({m}, {m})")
    gradient_fd = np.empty(m)
    hessian_fd = np.empty((m, m))
    for i in range(m):
        dz = np.zeros(m)
        dz[i] = steps[i]
        f_plus, g_plus, _ = jet(z + dz)
        f_minus, g_minus, _ = jet(z - dz)
        # Use the actually representable step (z+dz)−(z−dz) to avoid a rounding bias in the divisor.
        span = (z[i] + dz[i]) - (z[i] - dz[i])
        gradient_fd[i] = (f_plus - f_minus) / span
        hessian_fd[:, i] = (g_plus - g_minus) / span
    g_abs = np.abs(gradient_fd - gradient)
    h_abs = np.abs(hessian_fd - hessian)
    g_rel = g_abs / max(1.0, float(np.max(np.abs(gradient))))
    h_scale = max(1.0, float(np.max(np.abs(hessian))))
    h_rel = h_abs / h_scale
    asym = np.abs(hessian - hessian.T) / h_scale
    finite = all(np.all(np.isfinite(a)) for a in (gradient, hessian, gradient_fd, hessian_fd))
    worst = lambda a: float(np.max(a)) if a.size else 0.0  # noqa: E731
    ok = bool(finite and worst(g_rel) <= tol and worst(h_rel) <= tol and worst(asym) <= tol)
    return DerivativeCheck(worst(g_abs), worst(g_rel), worst(h_abs), worst(h_rel), worst(asym),
                           steps, float(tol), ok, gradient_fd, hessian_fd)
