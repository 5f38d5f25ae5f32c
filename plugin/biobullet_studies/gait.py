"""Substitute normal-gait drive and reference signals (paper 003's measured data are not published).

`load_gait("walking_1ms")` reads ``data/gait/walking_1ms.json``: one Fourier series per signal,
θ(t) = a0 + Σ_k [a_k cos(2πkt/T) + b_k sin(2πkt/T)], in the format of the ``fourier`` joint function.
Every signal carries its `source` (citation), `notes` (how it was derived, whether it is measured mean data
or constructed from cited key points) and the `reference_points` it was fitted to.

Time: t = 0 is heel strike of the (prosthetic-side) leg; the stored period is T = 1.0 s (paper 003: T ≈ 1 s at
1 m/s on a treadmill); `load_gait(period=P)` rescales time only (coefficients unchanged).
Sign conventions (planar, x forward, y up, as in paper 003's model):
- ``hip_x`` (m): horizontal hip position in the treadmill frame, oscillation about its mean (mean 0);
  the 1 m/s belt speed is not included.
- ``hip_y`` (m): hip-joint-centre height above the ground (absolute, so `hip_hiking` raises the mean too).
- ``thigh`` (rad): α1, thigh angle from the downward vertical, positive = flexion (knee ahead of the hip):
  knee = hip + l_thigh (sin α1, −cos α1).
- ``knee`` (rad): φ_knee = α1 − α11 (thigh minus shank angle), positive = flexion, 0 = straight leg.
- ``ankle`` (rad): foot relative to the shank, positive = dorsiflexion, 0 = neutral (foot ⟂ shank).
"""
from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from importlib import resources
from typing import Any

import numpy as np

SIGNALS: tuple[str, ...] = ("hip_x", "hip_y", "thigh", "knee", "ankle")
HIP_HIKING_FACTOR = 1.006  # paper 003 §3.1: vertical hip signal y × 1.006 ("lifting the hip")


@dataclass(frozen=True)
class GaitSignal:
    """One Fourier-series signal: value = a0 + Σ a_k cos(kωt) + b_k sin(kωt), ω = 2π/period."""

    name: str
    period: float
    a0: float
    a: np.ndarray
    b: np.ndarray
    units: str
    source: str = ""
    notes: str = ""
    reference_points: Mapping[str, Any] = field(default_factory=dict)

    def evaluate(self, t: float | Sequence[float] | np.ndarray, derivative: int = 0) -> np.ndarray:
        """Value (derivative=0), rate (1) or acceleration (2) at times t (s); exact (analytic)."""
        if derivative not in (0, 1, 2):
            raise ValueError(f"derivative must be 0, 1 or 2, got {derivative}")
        t_arr = np.asarray(t, dtype=float)
        k_omega = 2.0 * math.pi / self.period * np.arange(1, len(self.a) + 1)
        phase = np.multiply.outer(t_arr, k_omega)
        c, s = np.cos(phase), np.sin(phase)
        if derivative == 0:
            return self.a0 + c @ self.a + s @ self.b
        if derivative == 1:
            return c @ (k_omega * self.b) - s @ (k_omega * self.a)
        return -(c @ (k_omega ** 2 * self.a) + s @ (k_omega ** 2 * self.b))

    def scaled(self, factor: float) -> "GaitSignal":
        """The whole signal (mean included) multiplied by `factor`."""
        return replace(self, a0=self.a0 * factor, a=self.a * factor, b=self.b * factor,
                       notes=f"{self.notes} [scaled x{factor:g}]".strip())


@dataclass(frozen=True)
class GaitData:
    """Named gait signals sharing one period T (s). Angles in rad, positions in m."""

    name: str
    period: float
    signals: Mapping[str, GaitSignal]
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def signal(self, name: str) -> GaitSignal:
        try:
            return self.signals[name]
        except KeyError:
            raise KeyError(f"gait '{self.name}' has no signal '{name}'; "
                           f"available: {', '.join(self.signals)}") from None

    def evaluate(self, signal: str, t: float | Sequence[float] | np.ndarray,
                 derivative: int = 0) -> np.ndarray:
        """Signal value (or its 1st/2nd time derivative) at times t (s)."""
        return self.signal(signal).evaluate(t, derivative)

    def fourier_attributes(self, signal: str) -> dict[str, str]:
        """XML attribute strings of ``<joint_function type="fourier" .../>`` (no `joint`; lossless repr)."""
        s = self.signal(signal)
        return {"type": "fourier", "period": repr(float(s.period)), "a0": repr(float(s.a0)),
                "a": " ".join(repr(float(v)) for v in s.a), "b": " ".join(repr(float(v)) for v in s.b)}

    def hip_hiking(self, factor: float = HIP_HIKING_FACTOR) -> "GaitData":
        """Copy with the vertical hip signal ``hip_y`` multiplied by `factor` (paper 003: 1.006).

        As in the paper the absolute signal is scaled: with a mean hip height ≈ 0.94 m this raises the mean by
        ≈ 5.6 mm (the dominant effect) and the ≈ 4.5 cm vertical excursion by only 0.6 %.
        """
        signals = dict(self.signals)
        signals["hip_y"] = self.signal("hip_y").scaled(factor)
        meta = dict(self.metadata)
        meta["hip_hiking_factor"] = float(factor)
        return replace(self, signals=signals, metadata=meta)

    def with_period(self, period: float) -> "GaitData":
        """Same coefficients, time rescaled to period `period` (s)."""
        if not (math.isfinite(period) and period > 0.0):
            raise ValueError(f"period must be positive and finite, got {period}")
        signals = {k: replace(v, period=float(period)) for k, v in self.signals.items()}
        return replace(self, period=float(period), signals=signals)


def load_gait(name: str = "walking_1ms", period: float | None = None) -> GaitData:
    """Load bundled gait data ``data/gait/<name>.json``; `period` (s) rescales time (default: stored T)."""
    resource = resources.files("biobullet").joinpath("data", "gait", f"{name}.json")
    if not resource.is_file():
        raise FileNotFoundError(f"no bundled gait data '{name}' ({resource})")
    raw = json.loads(resource.read_text(encoding="utf-8"))
    return gait_from_dict(raw, name=name, period=period)


def gait_from_dict(raw: Mapping[str, Any], name: str = "", period: float | None = None) -> GaitData:
    """Build GaitData from the JSON structure (see ``data/gait/walking_1ms.json``)."""
    stored_period = float(raw["period"])
    signals: dict[str, GaitSignal] = {}
    for key, entry in raw["signals"].items():
        a = np.asarray(entry.get("a", []), dtype=float)
        b = np.asarray(entry.get("b", []), dtype=float)
        if a.shape != b.shape:
            raise ValueError(f"signal '{key}': {a.size} cosine but {b.size} sine coefficients")
        signals[key] = GaitSignal(name=key, period=float(entry.get("period", stored_period)),
                                  a0=float(entry.get("a0", 0.0)), a=a, b=b, units=str(entry.get("units", "")),
                                  source=str(entry.get("source", "")), notes=str(entry.get("notes", "")),
                                  reference_points=dict(entry.get("reference_points", {})))
    meta = {k: v for k, v in raw.items() if k not in ("signals", "period")}
    gait = GaitData(name=name or str(raw.get("name", "")), period=stored_period, signals=signals, metadata=meta)
    return gait if period is None else gait.with_period(period)


def fit_reference_points(phase: Sequence[float], values: Sequence[float], n_harmonics: int = 8,
                         *, interpolate: str = "none", period: float = 1.0,
                         n_dense: int = 400) -> tuple[float, np.ndarray, np.ndarray]:
    """Fourier coefficients (a0, a, b) of a cycle given at `phase` ∈ [0, 1] (fraction of the period).

    interpolate="none": least squares on the points themselves (dense tabulated data);
    interpolate="periodic_spline": least squares on `n_dense` samples of the periodic cubic spline through
    the points (sparse key points; a duplicated end point at phase 1 must equal the one at phase 0).
    This is how the coefficients in ``walking_1ms.json`` were produced (tests re-run it).
    """
    from biobullet.functions.fourier import fourier_coefficients

    ph = np.asarray(phase, dtype=float)
    val = np.asarray(values, dtype=float)
    if interpolate == "periodic_spline":
        from scipy.interpolate import CubicSpline

        if not math.isclose(ph[-1] - ph[0], 1.0):
            ph, val = np.append(ph, ph[0] + 1.0), np.append(val, val[0])
        spline = CubicSpline(ph, val, bc_type="periodic")
        ph = ph[0] + np.arange(n_dense) / n_dense
        val = spline(ph)
    elif interpolate != "none":
        raise ValueError(f"interpolate must be 'none' or 'periodic_spline', got {interpolate!r}")
    return fourier_coefficients(ph * period, val, period, n_harmonics)
