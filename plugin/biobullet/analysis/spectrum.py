"""Amplitude spectra over windows of whole multiples of 6T (paper 003, Figs. 8–11).

With a window of L = 6mT (m = 1, 2, …) the DFT bins are f_j = j/L = j/(6m) · (1/T): the gait frequency
1/T, its harmonics and the subharmonics 1/(2T) (period 2) and 1/(3T) (period 3) and their multiples all fall
exactly on bins, so their amplitudes are measured without leakage. Frequencies are returned in units of
the gait frequency 1/T (subharmonics show at 0.5, 0.333…). The paper analyses the last 5 cycles for ρ; for
spectra a 5T window would put 1/2 and 1/3 between bins, hence the 6T rule.
"""
from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np


def amplitude_spectrum(t: np.ndarray | None, y: np.ndarray | Callable[[np.ndarray], np.ndarray],
                       period: float, n_periods: int = 6, *, t_end: float | None = None,
                       samples_per_period: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """One-sided amplitude spectrum of y over the window [t_end − n_periods·T, t_end).

    n_periods: a positive multiple of 6. t_end: end of the window (default: the last whole multiple of T
    in the data, i.e. the latest steady state). y: samples at t (linearly interpolated onto the uniform grid
    t_end − L + j·L/N, exact where t already lies on that grid) or a callable y(t).
    samples_per_period: grid density (default from the data spacing, at least 64; for a callable 256).
    Returns (f·T, amplitude): f·T = j/n_periods, j = 0 … N/2; amplitude = |Y_j|·2/N (|Y_0|/N for the mean
    and the Nyquist bin), so a component A cos(2π f t + φ) on a bin has amplitude exactly A.
    """
    if not (math.isfinite(period) and period > 0.0):
        raise ValueError(f"period must be positive and finite, got {period}")
    if int(n_periods) != n_periods or n_periods <= 0 or n_periods % 6:
        raise ValueError(f"n_periods must be a positive multiple of 6 (so that 1/2 and 1/3 of the gait "
                         f"frequency fall on bins), got {n_periods}")
    n_periods = int(n_periods)
    if callable(y):
        if t_end is None:
            if t is None:
                raise ValueError("a callable y needs t_end (or t)")
            t_end = math.floor(float(np.max(t)) / period + 1e-9) * period
        spp = int(samples_per_period or 256)
        grid = _grid(float(t_end), period, n_periods, spp)
        values = np.asarray(y(grid), dtype=float).reshape(-1)
    else:
        t_arr = np.asarray(t, dtype=float).reshape(-1)
        y_arr = np.asarray(y, dtype=float).reshape(-1)
        if len(t_arr) != len(y_arr):
            raise ValueError(f"{len(t_arr)} times but {len(y_arr)} samples")
        if t_end is None:
            t_end = math.floor(t_arr[-1] / period + 1e-9) * period
        if t_end - n_periods * period < t_arr[0] - 1e-9 * period:
            raise ValueError(f"the window [{t_end - n_periods * period}, {t_end}] starts before the data")
        if samples_per_period is None:
            dt = float(np.median(np.diff(t_arr)))
            samples_per_period = max(64, int(round(period / dt)))
        grid = _grid(float(t_end), period, n_periods, int(samples_per_period))
        values = np.interp(grid, t_arr, y_arr)
    bad = np.flatnonzero(~np.isfinite(values))
    if bad.size:   # a diverged run: its spectrum would be NaN in every bin, without a word
        raise ValueError(f"y is not finite in the window [{t_end - n_periods * period:g}, {t_end:g}) (first at "
                         f"t = {grid[bad[0]]:g}; a run that diverged has no spectrum)")
    n = len(values)
    coefficients = np.fft.rfft(values)
    amplitude = np.abs(coefficients) * (2.0 / n)
    amplitude[0] *= 0.5
    if n % 2 == 0:
        amplitude[-1] *= 0.5
    frequency = np.arange(len(amplitude)) / n_periods  # in units of 1/T
    return frequency, amplitude


def _grid(t_end: float, period: float, n_periods: int, samples_per_period: int) -> np.ndarray:
    n = n_periods * samples_per_period
    return t_end - n_periods * period + np.arange(n) * (n_periods * period / n)


def subharmonic_content(frequency: np.ndarray, amplitude: np.ndarray, *,
                        max_frequency: float | None = None) -> float:
    """Figure of merit in [0, 1]: RMS amplitude off the gait harmonics / RMS amplitude of all non-DC bins.

    Bins with f·T integer (1, 2, 3, …) are the period-T response; every other bin (1/2, 1/3, 2/3, 3/2, …)
    is subharmonic (or quasi-periodic) content. 0 = exactly T-periodic; a period-2 response with equal
    amplitude at 1/2 and 1 gives 1/√2. Bins above max_frequency (units 1/T) are ignored.
    """
    f = np.asarray(frequency, dtype=float)
    a = np.asarray(amplitude, dtype=float)
    keep = f > 0.0
    if max_frequency is not None:
        keep &= f <= max_frequency + 1e-12
    harmonic = np.abs(f - np.round(f)) < 1e-9
    total = float(np.sum(a[keep] ** 2))
    if total == 0.0:
        return 0.0
    return math.sqrt(float(np.sum(a[keep & ~harmonic] ** 2)) / total)


def subharmonic_amplitudes(frequency: np.ndarray, amplitude: np.ndarray,
                           orders: tuple[int, ...] = (2, 3)) -> dict[int, float]:
    """RMS amplitude of each subharmonic family: for order n the bins f·T = j/n with j not a multiple of n.

    Bins j/6 with j ≡ ±1 (mod 6) belong to neither 1/2 nor 1/3 families (they signal period 6 or
    quasi-periodicity) and are not counted here.
    """
    f = np.asarray(frequency, dtype=float)
    a = np.asarray(amplitude, dtype=float)
    result: dict[int, float] = {}
    for n in orders:
        scaled = f * n
        on_family = (np.abs(scaled - np.round(scaled)) < 1e-9) & (np.abs(f - np.round(f)) > 1e-9)
        result[n] = math.sqrt(float(np.sum(a[on_family] ** 2)))
    return result
