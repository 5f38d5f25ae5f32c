"""Paper-003 correlation coefficient, Pearson caveats, peak flexion, NRMSE."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import pearsonr

from biobullet_studies.gait_metrics import (PEARSON_CAVEAT, gait_correlation, nrmse, pearson,
                                             peak_knee_flexion_per_cycle)

T = 1.0


def reference_knee(t: np.ndarray) -> np.ndarray:
    w = 2.0 * math.pi / T
    return 30.0 + 25.0 * np.cos(w * (t - 0.72)) + 5.0 * np.sin(2.0 * w * t)


def test_pearson_matches_scipy_and_is_affine_invariant() -> None:
    rng = np.random.default_rng(3)
    a = rng.normal(size=500)
    b = 0.6 * a + rng.normal(size=500)
    assert pearson(a, b) == pytest.approx(pearsonr(a, b)[0], abs=1e-14)
    assert pearson(a, 2.0 * a + 7.0) == pytest.approx(1.0, abs=1e-15)
    assert pearson(a, -0.5 * a + 1.0) == pytest.approx(-1.0, abs=1e-15)  # ρ can be negative
    assert math.isnan(pearson(a, np.ones(500)))   # undefined for a constant signal


def test_gait_correlation_ignores_gain_and_offset() -> None:
    # the caveat, demonstrated: twice the flexion plus a 10° offset still scores ρ = 1
    t = np.linspace(0.0, 20.0, 20 * 500 + 1)
    knee = 2.0 * reference_knee(t) + 10.0
    # both as arrays: linear interpolation commutes with the affine map, so ρ = 1 up to rounding
    rho = gait_correlation(t, knee, reference_knee(t), T)
    assert rho == pytest.approx(1.0, abs=1e-12)
    rho_callables = gait_correlation(None, lambda s: 10.0 + 2.0 * reference_knee(s), reference_knee, T)
    assert rho_callables == pytest.approx(1.0, abs=1e-12)
    assert nrmse(reference_knee(t), knee) > 0.5  # while the error is large
    assert "offset" in PEARSON_CAVEAT and "scale" in PEARSON_CAVEAT


def test_gait_correlation_phase_lag_is_cosine_for_a_sinusoid() -> None:
    # ρ(sin(ωt − φ), sin ωt) over whole cycles = cos φ exactly; the midpoint rule on whole periods is
    # exact for trigonometric polynomials of degree < n, so only rounding remains.
    phi = 0.3
    w = 2.0 * math.pi / T
    rho = gait_correlation(None, lambda s: np.sin(w * s - phi), lambda s: np.sin(w * s), T)
    assert rho == pytest.approx(math.cos(phi), abs=1e-13)


def test_gait_correlation_window_is_cycles_15_to_20() -> None:
    # the signal differs from the reference only outside [15T, 20T]: ρ must be exactly 1
    t = np.linspace(0.0, 20.0, 20 * 400 + 1)
    knee = reference_knee(t) + np.where(t < 15.0, 40.0 * np.sin(7.0 * t), 0.0)
    assert gait_correlation(t, knee, reference_knee(t), T) == pytest.approx(1.0, abs=1e-12)
    # and explicit samples: n = 200·5 midpoints 15 + (j + ½)/200
    grid = 15.0 + (np.arange(1000) + 0.5) / 200.0
    ref = reference_knee(grid)
    sim = ref + 3.0 * np.cos(math.pi * grid)  # period-2 perturbation
    direct = pearson(sim, ref)
    via = gait_correlation(None, lambda s: reference_knee(s) + 3.0 * np.cos(math.pi * s), reference_knee, T)
    assert via == pytest.approx(direct, abs=1e-15)
    with pytest.raises(ValueError, match="not covered"):
        gait_correlation(t[t < 18.0], knee[t < 18.0], reference_knee, T)


def test_peak_knee_flexion_per_cycle_period_two() -> None:
    # y = 35 + 25 cos(2π(t−0.72)) + 5 cos(π(t−0.72)): stationary points exactly at t = n + 0.72 with
    # values 65 (n even) and 55 (n odd), the per-cycle maxima (other terms ≤ 34 elsewhere in the cycle).
    h = 1e-3
    t = np.arange(0, 6001) * h + 0.0004  # maxima fall between nodes
    s = t - 0.72
    y = 35.0 + 25.0 * np.cos(2.0 * math.pi * s) + 5.0 * np.cos(math.pi * s)
    peaks = peak_knee_flexion_per_cycle(t, y, T)
    assert list(peaks.cycle) == [1, 2, 3, 4, 5]  # [0, 1) is incomplete (data start at 0.0004)
    expected = np.where(peaks.cycle % 2 == 0, 65.0, 55.0)
    # parabola through 3 nodes: value error ≤ max|y'''| h³/(9√3) ≈ 6.5e3·1e-9/15.6 ≈ 4e-7
    np.testing.assert_allclose(peaks.value, expected, rtol=0, atol=1e-6)
    np.testing.assert_allclose(peaks.time, peaks.cycle + 0.72, rtol=0, atol=1e-6)


def test_nrmse_normalisations() -> None:
    b = np.array([0.0, 2.0, 4.0, 2.0])
    a = b + 1.0
    assert nrmse(b, a) == pytest.approx(0.25)     # (reference, other)
    assert nrmse(b, a, "none") == pytest.approx(1.0)
    assert nrmse(b, a, "mean") == pytest.approx(0.5)
    assert nrmse(b, a, "std") == pytest.approx(1.0 / math.sqrt(2.0))
    with pytest.raises(ValueError):
        nrmse(b, a, "max")

