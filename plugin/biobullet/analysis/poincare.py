"""Poincaré sections of periodically driven responses and period-n classification (paper 003, §3.1).

The drive has period T (the gait cycle). The stroboscopic Poincaré map samples the response at
t_n = t_start + nT; a period-n response (n T-periodic, e.g. the paper's 2T and 3T subharmonic gaits) repeats
its samples every n points, a quasi-periodic or chaotic one never does.
"""
from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

#: default relative tolerance of `classify_period`: 1e-3 of the signal range (see there)
DEFAULT_REL_TOL = 1e-3


def poincare_samples(t: np.ndarray | None, y: np.ndarray | Callable[[np.ndarray], np.ndarray],
                     period: float, t_start: float | None = None, t_end: float | None = None,
                     *, method: str = "cubic") -> tuple[np.ndarray, np.ndarray]:
    """Samples of y at t_n = t_start + nT for every t_n inside [t[0], t[-1]] (or [t_start, t_end]).

    y: values at times t, shape (N,) or (N, m) (m state components), interpolated with `method`
    ("cubic": not-a-knot cubic spline, error O(h⁴); "linear": O(h²)); or a callable dense output y(t_n)
    (e.g. a SciPy OdeSolution, whose (m, k) result is transposed to (k, m)); then t may be None and
    t_start, t_end are required. t_start defaults to the first multiple of T at or after t[0] (drive phase 0).
    Returns (t_n, y_n) with y_n of shape (k,) or (k, m).
    """
    if not (math.isfinite(period) and period > 0.0):
        raise ValueError(f"period must be positive and finite, got {period}")
    if callable(y):
        if t_start is None or t_end is None:
            if t is None:
                raise ValueError("a callable y needs t_start and t_end (or t)")
        lo = float(t_start if t_start is not None else math.ceil(float(np.min(t)) / period - 1e-9) * period)
        hi = float(t_end if t_end is not None else np.max(t))
        t_n = _section_times(lo, hi, period)
        values = np.asarray(y(t_n), dtype=float)
        if values.ndim == 2 and values.shape[0] != len(t_n) and values.shape[1] == len(t_n):
            values = values.T
        return t_n, values
    t_arr = np.asarray(t, dtype=float).reshape(-1)
    y_arr = np.asarray(y, dtype=float)
    if y_arr.shape[0] != len(t_arr):
        raise ValueError(f"{len(t_arr)} times but {y_arr.shape[0]} samples")
    if np.any(np.diff(t_arr) <= 0.0):
        raise ValueError("t must be strictly increasing")
    lo = t_start if t_start is not None else math.ceil(t_arr[0] / period - 1e-9) * period
    hi = t_arr[-1] if t_end is None else min(float(t_end), t_arr[-1])
    if lo < t_arr[0] - 1e-12 * max(1.0, abs(t_arr[0])):
        raise ValueError(f"t_start={lo} precedes the data (t[0]={t_arr[0]})")
    t_n = _section_times(float(lo), float(hi), period)
    t_n = np.clip(t_n, t_arr[0], t_arr[-1])  # absorb rounding of nT at the ends
    # the samples the interpolation reads (a spline: all of them): a run that diverged gave NaN sections ("linear")
    # or SciPy's "`y` must contain only finite values", naming no time
    finite = np.all(np.isfinite(y_arr.reshape(len(t_arr), -1)), axis=1)
    used = slice(None) if method == "cubic" or not len(t_n) else \
        slice(max(int(np.searchsorted(t_arr, t_n[0], "right")) - 1, 0), int(np.searchsorted(t_arr, t_n[-1])) + 1)
    if not np.all(finite[used]):
        first = t_arr[used][~finite[used]][0]
        raise ValueError(f"y is not finite at t = {first:g} (a run that diverged has no Poincaré section; pass "
                         "the samples before it)")
    if method == "linear":
        cols = y_arr.reshape(len(t_arr), -1)
        values = np.column_stack([np.interp(t_n, t_arr, c) for c in cols.T])
        values = values.reshape((len(t_n),) + y_arr.shape[1:])
    elif method == "cubic":
        from scipy.interpolate import CubicSpline

        values = CubicSpline(t_arr, y_arr, axis=0)(t_n)
    else:
        raise ValueError(f"method must be 'cubic' or 'linear', got {method!r}")
    return t_n, values


def _section_times(lo: float, hi: float, period: float) -> np.ndarray:
    # n from 0 while lo + nT ≤ hi (+ a rounding allowance so that t_end = 20T includes the 20th point)
    count = int(math.floor((hi - lo) / period + 1e-9)) + 1
    return lo + period * np.arange(max(count, 0))


def classify_period(samples: np.ndarray, max_period: int = 8, tol: float | None = None, *,
                    signal_range: float | np.ndarray | None = None,
                    rel_tol: float = DEFAULT_REL_TOL) -> int | None:
    """Smallest p ≤ max_period with samples[n + p] ≈ samples[n] for all n; None = aperiodic/quasi-periodic.

    samples: Poincaré samples of the steady state (drop the transient first), shape (k,) or (k, m).
    Tolerance (absolute, per component): `tol` if given, else rel_tol × scale, where scale is
    `signal_range` — pass the peak-to-peak range of the full continuous signal (e.g. the knee-angle range over
    the analysed cycles), because the samples of a period-1 response have no range of their own — or, if
    None, max(peak-to-peak of the samples, max |sample|) per component. The criterion is the maximum
    deviation over all pairs (robust to a single near-return of a quasi-periodic orbit, sensitive to noise
    only beyond tol/2 per sample). A period p is only tested if every point of the orbit is seen repeated at
    least once (k ≥ 2p); larger p are not decidable and the search stops there (returns None).
    """
    s = np.asarray(samples, dtype=float)
    if s.ndim == 1:
        s = s[:, None]
    if s.ndim != 2 or not np.all(np.isfinite(s)) or s.size == 0:
        raise ValueError(f"samples must be finite, shape (k,) or (k, m) with k, m ≥ 1, got shape {s.shape}")
    if max_period < 1:
        raise ValueError(f"max_period must be ≥ 1, got {max_period}")
    if tol is not None:
        tolerance = np.broadcast_to(np.asarray(tol, dtype=float), (s.shape[1],))
    else:
        if signal_range is not None:
            scale = np.broadcast_to(np.abs(np.asarray(signal_range, dtype=float)), (s.shape[1],))
        else:
            scale = np.maximum(np.ptp(s, axis=0), np.max(np.abs(s), axis=0))
        tolerance = rel_tol * np.where(scale > 0.0, scale, 1.0)
    k = s.shape[0]
    for p in range(1, max_period + 1):
        if k < 2 * p:
            return None
        deviation = np.max(np.abs(s[p:] - s[:-p]), axis=0)
        if np.all(deviation <= tolerance):
            return p
    return None


def classify_trajectory(t: np.ndarray, y: np.ndarray, period: float, *, n_last: int = 12,
                        max_period: int = 6, rel_tol: float = DEFAULT_REL_TOL) -> int | None:
    """Period of the last `n_last` section samples of y(t); tolerance relative to y's range over them."""
    t_n, y_n = poincare_samples(t, y, period)
    if len(t_n) < n_last:
        raise ValueError(f"only {len(t_n)} section points, need n_last={n_last}")
    t_arr, y_arr = np.asarray(t, dtype=float), np.asarray(y, dtype=float)
    tail = t_arr >= t_n[-n_last]
    return classify_period(y_n[-n_last:], max_period=max_period, rel_tol=rel_tol,
                           signal_range=np.ptp(y_arr[tail], axis=0))
