"""Comparison metrics of two sampled signals — one definition, one argument order: (reference, other).

rmse      √(mean (other − reference)²), in the signals' units
nrmse     rmse divided by a scale of the reference ("range" peak-to-peak, "std", "mean" |mean|, "none");
          a reference with zero scale gives 0 when the signals are equal and inf otherwise
pearson   Σ(x−x̄)(y−ȳ) / √(Σ(x−x̄)² Σ(y−ȳ)²), symmetric; nan when either series is constant (undefined)
Signals with a NaN or inf sample are refused (ValueError naming the signal and the sample).
"""
from __future__ import annotations

import math

import numpy as np

NORMALISATIONS = ("range", "std", "mean", "none")


def _pair(reference, other, minimum: int) -> tuple[np.ndarray, np.ndarray]:
    x = np.asarray(reference, dtype=float).reshape(-1)
    y = np.asarray(other, dtype=float).reshape(-1)
    if x.shape != y.shape or len(x) < minimum:
        raise ValueError(f"need two vectors of equal length ≥ {minimum}, got {x.shape} and {y.shape}")
    for name, values in (("reference", x), ("other", y)):   # a NaN would make the metric NaN without a word
        bad = np.flatnonzero(~np.isfinite(values))
        if bad.size:
            more = f" and {bad.size - 1} more" if bad.size > 1 else ""
            raise ValueError(f"the {name} signal is not finite at sample {bad[0]} ({values[bad[0]]}){more}")
    return x, y


def rmse(reference, other) -> float:
    x, y = _pair(reference, other, 1)
    return math.sqrt(float(np.mean((y - x) ** 2)))


def nrmse(reference, other, normalisation: str = "range") -> float:
    if normalisation not in NORMALISATIONS:
        raise ValueError(f"normalisation must be one of {', '.join(NORMALISATIONS)}, got {normalisation!r}")
    x, _ = _pair(reference, other, 1)
    error = rmse(reference, other)
    scale = {"range": lambda: float(np.ptp(x)), "std": lambda: float(np.std(x)),
             "mean": lambda: abs(float(np.mean(x))), "none": lambda: 1.0}[normalisation]()
    if scale == 0.0:
        return 0.0 if error == 0.0 else math.inf
    return error / scale


def pearson(x, y) -> float:
    a, b = _pair(x, y, 2)
    da, db = a - a.mean(), b - b.mean()
    denominator = math.sqrt(float(da @ da) * float(db @ db))
    if denominator == 0.0:
        return math.nan
    return float(np.clip(float(da @ db) / denominator, -1.0, 1.0))


__all__ = ["rmse", "nrmse", "pearson", "NORMALISATIONS"]
