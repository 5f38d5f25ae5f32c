"""Gait agreement metrics: the paper-003 correlation coefficient ρ, peak knee flexion, NRMSE, Pearson.

`pearson` and `nrmse` are shared with the shoulder study. Read `PEARSON_CAVEAT` before reading ρ as
"agreement": paper 003 states "ρ = 1 if and only if X ≡ Y" and "0 ≤ ρ ≤ 1"; both are false.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from biobullet.analysis.metrics import nrmse, pearson  # noqa: F401  (re-exported for the studies)

PEARSON_CAVEAT = (
    "Pearson's correlation measures only the linear co-variation of the two signals' shapes: it is invariant "
    "to affine changes a + b·X (b > 0) of either signal, so it ignores constant offset and scale (gain) "
    "differences — a knee that flexes twice as much as the reference, or is shifted by a constant angle, still "
    "scores ρ = 1 (contrary to paper 003's 'ρ = 1 if and only if X ≡ Y'); it can be negative (b < 0 gives −1, "
    "contrary to '0 ≤ ρ ≤ 1'). A systematic phase lag τ is penalised only partially: ρ is the reference's "
    "normalised autocorrelation at τ, ≈ 1 − (ω_rms τ)²/2 for small τ (for a pure sinusoid exactly cos(2πτ/T)). "
    "Report peak flexion (amplitude), mean offset and NRMSE alongside ρ."
)


def correlation_samples(t: np.ndarray | None, signal: np.ndarray | Callable[[np.ndarray], np.ndarray],
                        grid: np.ndarray) -> np.ndarray:
    """signal on `grid`: a callable is evaluated, arrays at times t are linearly interpolated."""
    if callable(signal):
        return np.asarray(signal(grid), dtype=float).reshape(-1)
    t_arr = np.asarray(t, dtype=float).reshape(-1)
    s_arr = np.asarray(signal, dtype=float).reshape(-1)
    if len(t_arr) != len(s_arr):
        raise ValueError(f"{len(t_arr)} times but {len(s_arr)} samples")
    if grid[0] < t_arr[0] or grid[-1] > t_arr[-1]:
        raise ValueError(f"window [{grid[0]:.6g}, {grid[-1]:.6g}] s is not covered by the data "
                         f"[{t_arr[0]:.6g}, {t_arr[-1]:.6g}] s")
    return np.interp(grid, t_arr, s_arr)


def gait_correlation(t: np.ndarray | None, knee: np.ndarray | Callable[[np.ndarray], np.ndarray],
                     reference: np.ndarray | Callable[[np.ndarray], np.ndarray], period: float,
                     cycles: tuple[float, float] = (15, 20), *, samples_per_cycle: int = 200) -> float:
    """Paper-003 gait correlation coefficient ρ_XY of the simulated vs the reference knee angle.

    Definition (paper 003, §3.3): ρ = Cov(X, Y)/√(D(X) D(Y)) with means, variances and covariance as time
    averages (1/(t2 − t1)) ∫ over t ∈ [t1, t2], t1/T = cycles[0] = 15, t2/T = cycles[1] = 20: with the paper's
    20 simulated cycles these are the last five, 15T ≤ t ≤ 20T. Samples used: the midpoint rule on
    n = samples_per_cycle·(t2 − t1)/T points t_j = t1 + (j + ½)(t2 − t1)/n, j = 0 … n−1 (time averages,
    so ρ is the Pearson correlation of these samples; spectrally accurate for T-periodic signals).
    knee, reference: arrays at times t (linearly interpolated; t must cover the window) or callables of t
    (e.g. ``lambda s: gait.evaluate("knee", s)``). Same units for both (radians or degrees).
    Caveat (PEARSON_CAVEAT): ρ ignores offset and gain — a knee that flexes twice as much, or with a constant
    offset, still scores 1; a phase lag τ lowers it only to the reference autocorrelation at τ.
    """
    if not (math.isfinite(period) and period > 0.0):
        raise ValueError(f"period must be positive and finite, got {period}")
    c1, c2 = float(cycles[0]), float(cycles[1])
    if not c2 > c1:
        raise ValueError(f"cycles must be increasing, got {cycles}")
    n = int(round(samples_per_cycle * (c2 - c1)))
    t1, t2 = c1 * period, c2 * period
    grid = t1 + (np.arange(n) + 0.5) * ((t2 - t1) / n)
    x = correlation_samples(t, knee, grid)
    y = correlation_samples(t, reference, grid)
    return pearson(x, y)


@dataclass(frozen=True)
class CyclePeaks:
    """Per-cycle maxima: cycle index n (cycle = [t0 + nT, t0 + (n+1)T)), time (s) and value of the peak."""

    cycle: np.ndarray
    time: np.ndarray
    value: np.ndarray


def peak_knee_flexion_per_cycle(t: np.ndarray, knee: np.ndarray, period: float,
                                t_start: float = 0.0) -> CyclePeaks:
    """Maximum of the knee flexion angle in every complete cycle [t_start + nT, t_start + (n+1)T] in the data.

    Paper 003 §3.2: 'peak of φ_knee', the per-cycle maximum (relates to foot clearance). The discrete maximum
    is refined by the vertex of the parabola through it and its two neighbours (uniform or not), so a smooth
    peak is found to O(h²) in time and O(h³) in value (interpolation error ≤ max|y‴|·h³/(9√3)). Units follow `knee`.
    """
    t_arr = np.asarray(t, dtype=float).reshape(-1)
    k_arr = np.asarray(knee, dtype=float).reshape(-1)
    if len(t_arr) != len(k_arr) or len(t_arr) < 3:
        raise ValueError("t and knee must be equally long (≥ 3 samples)")
    first = math.ceil((t_arr[0] - t_start) / period - 1e-9)
    last = math.floor((t_arr[-1] - t_start) / period + 1e-9) - 1
    cycles, times, values = [], [], []
    for n in range(first, last + 1):
        lo, hi = t_start + n * period, t_start + (n + 1) * period
        idx = np.nonzero((t_arr >= lo - 1e-12 * period) & (t_arr <= hi + 1e-12 * period))[0]
        if len(idx) == 0:
            continue
        i = int(idx[np.argmax(k_arr[idx])])
        tp, vp = float(t_arr[i]), float(k_arr[i])
        if 0 < i < len(t_arr) - 1:
            tp, vp = _parabola_vertex(t_arr[i - 1:i + 2], k_arr[i - 1:i + 2], tp, vp)
        cycles.append(n)
        times.append(tp)
        values.append(vp)
    return CyclePeaks(np.array(cycles, dtype=int), np.array(times), np.array(values))


def _parabola_vertex(ts: np.ndarray, ys: np.ndarray, t0: float, y0: float) -> tuple[float, float]:
    # parabola through three points in local coordinates s = t − t_mid (well conditioned)
    s = ts - ts[1]
    c2, c1, c0 = np.polyfit(s, ys, 2)
    if c2 >= 0.0:
        return t0, y0
    s_star = -c1 / (2.0 * c2)
    if not (s[0] <= s_star <= s[2]):
        return t0, y0
    return float(ts[1] + s_star), float(c0 - c1 * c1 / (4.0 * c2))
