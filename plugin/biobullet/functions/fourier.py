"""Fourier-series time driver: θ(t) = a0 + Σ_k [a_k cos(2πkt/T) + b_k sin(2πkt/T)], k = 1..N.

XML: ``<joint_function joint="J" type="fourier" period="T" a0="a0" a="a1 a2 ..." b="b1 b2 ..."/>``
(T in s, > 0; a0 default 0; `a` and `b` optional but of equal length when both given — a missing one is
all zeros). No inputs: the gradient and Hessian are over (t,) only, shape (1,) and (1, 1).
`fourier_coefficients` fits (a0, a, b) to sampled data by least squares.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import ClassVar

import numpy as np

from biobullet.core.errors import ModelError, SourceRef
from biobullet.core.attributes import floats, number
from biobullet.functions.base import JointFunction
from biobullet.functions.registry import register

#: most harmonics of one series: a time driver is evaluated in Python at every right-hand side evaluation of a run
#: (≈ 1.5 µs per harmonic; 3,000 harmonics, a 12 kB file, took a 0.02 s run 23 s), and a gait cycle's fit uses ~8
MAX_HARMONICS = 100


@register
class FourierFunction(JointFunction):
    """Periodic prescribed motion θ(t) with period T (s); uses_time is True."""

    type_name: ClassVar[str] = "fourier"
    attributes: ClassVar[tuple[str, ...]] = ("period", "a0", "a", "b")

    def __init__(self, period: float, a0: float = 0.0, a: Sequence[float] = (),
                 b: Sequence[float] = ()) -> None:
        super().__init__(())
        a_arr = np.array(a, dtype=float).reshape(-1)
        b_arr = np.array(b, dtype=float).reshape(-1)
        if not (math.isfinite(period) and period > 0.0):
            raise ModelError(f"period {period} is not a positive finite number", attribute="period",
                             expected="T > 0 (s)")
        if len(a_arr) and len(b_arr) and len(a_arr) != len(b_arr):
            raise ModelError(f"{len(a_arr)} cosine and {len(b_arr)} sine coefficients", attribute="b",
                             expected="as many b as a coefficients")
        n = max(len(a_arr), len(b_arr))
        if n > MAX_HARMONICS:
            raise ModelError(f"{n} harmonics", attribute="a",
                             expected=f"at most {MAX_HARMONICS} coefficients in a and b")
        a_arr = a_arr if len(a_arr) else np.zeros(n)
        b_arr = b_arr if len(b_arr) else np.zeros(n)
        if not (math.isfinite(a0) and np.all(np.isfinite(a_arr)) and np.all(np.isfinite(b_arr))):
            raise ModelError("non-finite coefficient", attribute="a", expected="finite numbers")
        self.period, self.a0 = float(period), float(a0)
        self.a, self.b = a_arr, b_arr
        omega = 2.0 * math.pi / self.period * np.arange(1, n + 1)   # rad/s, harmonic k
        #: the parameters of `fourier_jets_py`: a0, then (ω_k, a_k, b_k) per harmonic (a tuple: Python indexes it
        #: faster than an array)
        self.jet_parameters = (self.a0, *(float(v) for k in range(n) for v in (omega[k], a_arr[k], b_arr[k])))
        # |θ| ≤ |a0| + Σ (|a_k| + |b_k|), |θ̈| ≤ Σ ω_k² (|a_k| + |b_k|): a period of 1e-300 (ω² overflows)
        # or coefficients of 1e308 loaded, and the run stopped at t = 0 with an error naming no file
        with np.errstate(all="ignore"):
            amplitude = np.abs(a_arr) + np.abs(b_arr)
            bounds = (abs(self.a0) + float(np.sum(amplitude)), float(np.sum(omega ** 2 * amplitude)))
        if not all(math.isfinite(bound) for bound in bounds):
            raise ModelError(f"the series' {'value' if not math.isfinite(bounds[0]) else 'second derivative'} can "
                             "overflow double precision", attribute="period" if math.isfinite(bounds[0]) else "a",
                             expected="coefficients and a period whose θ and θ̈ stay finite doubles")

    @classmethod
    def from_attributes(cls, attributes: Mapping[str, str], inputs: tuple[str, ...],
                        source: SourceRef) -> "FourierFunction":
        raw_inputs = attributes.get("inputs") or ""
        if inputs or (raw_inputs.strip() if isinstance(raw_inputs, str) else len(raw_inputs)):
            raise source.error("inputs", "a fourier function is a time driver and takes no inputs",
                               "no 'inputs' attribute (θ depends on t only)")
        cls.check_attributes(attributes, inputs, source)
        period = number(source, attributes, "period")
        if period <= 0.0:
            raise source.error("period", f"period {period:g} is not positive", "T > 0 (s)")
        a0 = number(source, attributes, "a0", 0.0)
        a = floats(source, attributes, "a", None, min_count=0, max_count=MAX_HARMONICS)
        b = floats(source, attributes, "b", None, min_count=0, max_count=MAX_HARMONICS)
        if a is not None and b is not None and len(a) != len(b):
            raise source.error("b", f"{len(a)} cosine (a) but {len(b)} sine (b) coefficients",
                               "as many b as a coefficients")
        try:   # (the constructor's checks, named in the file)
            return cls(period, a0, () if a is None else a, () if b is None else b)
        except ModelError as exc:
            raise source.error(exc.attribute, exc.detail, exc.expected) from None

    @property
    def uses_time(self) -> bool:
        return True

    def evaluate(self, x: np.ndarray, t: float) -> tuple[float, np.ndarray, np.ndarray]:
        value, rate, accel = fourier_jets_py(self.jet_parameters, 0, len(self.a), float(t))
        return value, np.array([rate]), np.array([[accel]])

    def __repr__(self) -> str:
        return f"FourierFunction(period={self.period}, harmonics={len(self.a)})"


def fourier_jets_py(coef, c0, nh, t):
    """(θ, dθ/dt, d²θ/dt²) at t of the series whose parameters start at coef[c0]: a0, then (ω_k, a_k, b_k) for
    nh harmonics. The type's one implementation: `evaluate` runs it in Python, the compiled joint jets
    (`model.joint_jets`) inline it."""
    value = coef[c0]
    rate = 0.0
    accel = 0.0
    for k in range(nh):
        w, a, b = coef[c0 + 1 + 3 * k], coef[c0 + 2 + 3 * k], coef[c0 + 3 + 3 * k]
        cs, sn = np.cos(w * t), np.sin(w * t)
        value += a * cs + b * sn
        rate += w * (b * cs - a * sn)
        accel -= w * w * (a * cs + b * sn)
    return value, rate, accel


def fourier_coefficients(t: Sequence[float], y: Sequence[float], period: float,
                         n_harmonics: int) -> tuple[float, np.ndarray, np.ndarray]:
    """Least-squares fit of a0, a (N,), b (N,) to samples y(t) (t in s, any spacing).

    Needs at least 2N+1 samples whose phases t mod T determine all 2N+1 coefficients.
    """
    t_arr = np.asarray(t, dtype=float).reshape(-1)
    y_arr = np.asarray(y, dtype=float).reshape(-1)
    if len(t_arr) != len(y_arr):
        raise ModelError(f"{len(t_arr)} times but {len(y_arr)} values", attribute="y",
                         expected="one value per time")
    if not (np.all(np.isfinite(t_arr)) and np.all(np.isfinite(y_arr))):
        raise ModelError("non-finite sample", attribute="y", expected="finite samples")
    if not (math.isfinite(period) and period > 0.0):
        raise ModelError(f"period {period} is not positive", attribute="period", expected="T > 0 (s)")
    if int(n_harmonics) != n_harmonics or n_harmonics < 0:
        raise ModelError(f"n_harmonics={n_harmonics}", attribute="n_harmonics",
                         expected="a non-negative integer")
    n = int(n_harmonics)
    phase = 2.0 * math.pi / period * np.outer(t_arr, np.arange(1, n + 1))
    design = np.hstack([np.ones((len(t_arr), 1)), np.cos(phase), np.sin(phase)])
    solution, _, rank, _ = np.linalg.lstsq(design, y_arr, rcond=None)
    if rank < 2 * n + 1:
        raise ModelError(f"the samples determine only {rank} of {2 * n + 1} coefficients", attribute="t",
                         expected=f"at least {2 * n + 1} samples spread over the period")
    return float(solution[0]), solution[1:n + 1].copy(), solution[n + 1:].copy()
