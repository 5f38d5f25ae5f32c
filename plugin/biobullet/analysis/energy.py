"""Energy/work bookkeeping checks: residual r(t) = E(t) − E(0) − W(t) of a simulated trajectory.

E: total mechanical energy (kinetic + potential of conservative forces, J); W(t): work done up to t by every
non-conservative force (drivers, dampers, contact, friction), W(0) = 0, usually the time integral of the
power P(t) = Σ f·v. For an exact solution r ≡ 0; numerically |r| measures the integration (and power
bookkeeping) error.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


def cumulative_work(t: np.ndarray, power: np.ndarray) -> np.ndarray:
    """W(t_i) = ∫_{t_0}^{t_i} P dt by the trapezoidal rule (error O(h²)·P''); W(t_0) = 0. J for P in W."""
    t_arr = np.asarray(t, dtype=float).reshape(-1)
    p_arr = np.asarray(power, dtype=float).reshape(-1)
    if len(t_arr) != len(p_arr):
        raise ValueError(f"{len(t_arr)} times but {len(p_arr)} power samples")
    if len(t_arr) == 0:   # no times, no work values (not [0.0])
        return np.zeros(0)
    increments = 0.5 * (p_arr[1:] + p_arr[:-1]) * np.diff(t_arr)
    return np.concatenate([[0.0], np.cumsum(increments)])


@dataclass(frozen=True)
class EnergyBalance:
    """residual r(t) = E − E(0) − W (J); max_abs = max|r|; scale (J); relative = max_abs / scale."""

    residual: np.ndarray
    max_abs: float
    scale: float
    relative: float

    def ok(self, tol: float) -> bool:
        return bool(math.isfinite(self.relative) and self.relative <= tol)


def energy_balance(t: np.ndarray, energy: np.ndarray, work: np.ndarray | None = None,
                   power: np.ndarray | None = None, *, scale: float | None = None) -> EnergyBalance:
    """Relative residual of E(t) − E(0) − W(t).

    Give either `work` (W at each t, with W(t_0) = 0; it is shifted if not) or `power` (integrated with
    `cumulative_work`), or neither for a conservative system (W ≡ 0).
    scale: energy scale of the relative figure. Default max(peak-to-peak of E, peak-to-peak of W,
    max |E|): the energy exchanged when work is done, or the energy level itself for a conservative run —
    note that max |E| depends on the potential-energy datum, so pass a physical scale (e.g. the
    kinetic-energy range) when one is known.
    """
    t_arr = np.asarray(t, dtype=float).reshape(-1)
    e_arr = np.asarray(energy, dtype=float).reshape(-1)
    if len(e_arr) != len(t_arr):
        raise ValueError(f"{len(t_arr)} times but {len(e_arr)} energies")
    if work is not None and power is not None:
        raise ValueError("give work or power, not both")
    if work is not None:
        w_arr = np.asarray(work, dtype=float).reshape(-1)
        w_arr = w_arr - w_arr[0]
    elif power is not None:
        w_arr = cumulative_work(t_arr, power)
    else:
        w_arr = np.zeros_like(e_arr)
    if len(w_arr) != len(e_arr):
        raise ValueError(f"{len(e_arr)} energies but {len(w_arr)} work values")
    residual = e_arr - e_arr[0] - w_arr
    if scale is None:
        scale = max(float(np.ptp(e_arr)), float(np.ptp(w_arr)), float(np.max(np.abs(e_arr))))
    max_abs = float(np.max(np.abs(residual)))
    relative = max_abs / scale if scale > 0.0 else (0.0 if max_abs == 0.0 else math.inf)
    return EnergyBalance(residual, max_abs, float(scale), relative)
