"""Poincaré sampling, period classification and 6T-window spectra on synthetic signals with known answers."""
from __future__ import annotations

import math

import numpy as np
import pytest

from biobullet.analysis.poincare import classify_period, classify_trajectory, poincare_samples
from biobullet.analysis.spectrum import amplitude_spectrum, subharmonic_amplitudes, subharmonic_content

T = 1.0
GOLDEN = (1.0 + math.sqrt(5.0)) / 2.0  # incommensurate frequency ratio (worst approximable by rationals)


def amplitude_at(frequency: np.ndarray, amplitude: np.ndarray, f: float) -> float:
    """Amplitude of the bin at f (units of 1/T); raises if f is not (to 1e-9) a bin of this spectrum."""
    index = int(np.argmin(np.abs(frequency - f)))
    if abs(frequency[index] - f) > 1e-9:
        raise ValueError(f"f·T = {f} is not a bin (spacing {frequency[1] - frequency[0]:.6g})")
    return float(amplitude[index])


def period_n_signal(n: int, t: np.ndarray) -> np.ndarray:
    """Gait-like response with a 1/n subharmonic: exactly nT-periodic, not mT-periodic for m < n."""
    w = 2.0 * math.pi / T
    base = 30.0 + 25.0 * np.cos(w * t - 0.4) + 6.0 * np.sin(2.0 * w * t)
    return base if n == 1 else base + 4.0 * np.cos(w * t / n + 0.3)


@pytest.mark.parametrize("n", [1, 2, 3])
def test_poincare_samples_are_exact_at_nodes_and_classify(n: int) -> None:
    t = np.linspace(0.0, 30.0, 30 * 200 + 1)  # nT are grid nodes: interpolation returns the node values
    y = period_n_signal(n, t)
    t_n, y_n = poincare_samples(t, y, T)
    assert np.array_equal(t_n, np.arange(31.0))
    np.testing.assert_allclose(y_n, period_n_signal(n, t_n), rtol=0, atol=1e-12)
    assert classify_period(y_n[-12:], signal_range=np.ptp(y)) == n
    assert classify_trajectory(t, y, T, n_last=12) == n


def test_poincare_between_nodes_cubic_vs_linear() -> None:
    # section times at 0.05 s offset between nodes (h = 0.01 s is not a divisor issue: offset 0.005 s)
    t = np.arange(0.0, 10.0, 0.01) + 0.005
    y = period_n_signal(2, t)
    t_n, cubic = poincare_samples(t, y, T)
    _, linear = poincare_samples(t, y, T, method="linear")
    exact = period_n_signal(2, t_n)
    # cubic spline error ~ (5/384) h⁴ max|y''''| ≈ 0.013·1e-8·(25·(2π)⁴ + 6·(4π)⁴) ≈ 3e-6
    assert np.max(np.abs(cubic - exact)) < 5e-6
    # linear: h²/8 max|y''| ≈ 1.25e-5·(25(2π)² + 6(4π)² + …) ≈ 0.025
    assert np.max(np.abs(linear - exact)) < 0.03
    assert t_n[0] == pytest.approx(1.0)  # first multiple of T inside the data


def test_poincare_callable_dense_output_and_multi_component() -> None:
    def dense(s: np.ndarray) -> np.ndarray:  # OdeSolution convention: shape (m, k)
        return np.vstack([period_n_signal(3, s), np.cos(2.0 * math.pi * s / 3.0)])

    t_n, y_n = poincare_samples(None, dense, T, t_start=2.0, t_end=20.0)
    assert y_n.shape == (19, 2)
    assert classify_period(y_n, signal_range=[60.0, 2.0]) == 3


def test_noisy_period_two_is_classified_with_relative_tolerance() -> None:
    rng = np.random.default_rng(7)
    t = np.linspace(0.0, 40.0, 40 * 100 + 1)
    y = period_n_signal(2, t)
    span = float(np.ptp(y))
    _, y_n = poincare_samples(t, y, T)
    noisy = y_n + rng.normal(0.0, 1e-5 * span, y_n.shape)  # |Δnoise| ≤ ~8σ = 8e-5 span ≪ 1e-3 span
    assert classify_period(noisy[-16:], signal_range=span) == 2
    # noise above the tolerance: no period can be asserted
    very_noisy = y_n + rng.normal(0.0, 5e-3 * span, y_n.shape)
    assert classify_period(very_noisy[-16:], signal_range=span) is None


def test_quasi_periodic_is_none_and_short_records_are_undecidable() -> None:
    t = np.linspace(0.0, 60.0, 60 * 100 + 1)
    y = 30.0 + 25.0 * np.cos(2.0 * math.pi * t / T) + 5.0 * np.sin(2.0 * math.pi * t / (GOLDEN * T))
    _, y_n = poincare_samples(t, y, T)
    assert classify_period(y_n[-20:], max_period=8, signal_range=np.ptp(y)) is None
    # 5 samples of a period-3 orbit: p = 3 needs ≥ 6 samples (every orbit point seen twice)
    samples = np.tile([1.0, 2.0, 3.0], 3)
    assert classify_period(samples[:5], signal_range=2.0) is None
    assert classify_period(samples[:6], signal_range=2.0) == 3
    # default scale (no signal_range): period-1 samples at a non-zero level
    assert classify_period(np.full(6, 20.0)) == 1


def test_spectrum_components_land_on_exact_bins() -> None:
    # components at 1, 1/2, 1/3 (and 2) of the gait frequency plus a mean: all on bins j/12 for 12T
    amps = {1.0: 25.0, 0.5: 3.0, 1.0 / 3.0: 2.0, 2.0: 6.0}

    def y(s: np.ndarray) -> np.ndarray:
        out = np.full_like(s, 30.0)
        for k, (f, a) in enumerate(amps.items()):
            out += a * np.cos(2.0 * math.pi * f * s / T + 0.3 * (k + 1))
        return out

    t = np.arange(0, 20 * 128 + 1) * (T / 128)  # 20 cycles, 128 samples per cycle
    for n_periods in (6, 12):
        freq, amp = amplitude_spectrum(t, y(t), T, n_periods)
        assert freq[1] == pytest.approx(1.0 / n_periods, abs=1e-15)
        assert amp[0] == pytest.approx(30.0, abs=1e-12)
        for f, a in amps.items():
            assert amplitude_at(freq, amp, f) == pytest.approx(a, abs=1e-12)
        others = np.ones(len(freq), dtype=bool)
        for f in (0.0, *amps):
            others[np.argmin(np.abs(freq - f))] = False
        assert np.max(amp[others]) < 1e-12  # no leakage anywhere else
        # same from a callable (dense output)
        freq_c, amp_c = amplitude_spectrum(None, y, T, n_periods, t_end=20.0, samples_per_period=128)
        np.testing.assert_allclose(amp_c, amp, rtol=0, atol=1e-12)
    with pytest.raises(ValueError, match="multiple of 6"):
        amplitude_spectrum(t, y(t), T, 5)


def test_subharmonic_content_figures() -> None:
    freq = np.arange(0, 37) / 12.0
    amp = np.zeros_like(freq)
    amp[12] = 1.0  # f = 1
    assert subharmonic_content(freq, amp) == 0.0
    amp[6] = 1.0  # f = 1/2, equal amplitude
    assert subharmonic_content(freq, amp) == pytest.approx(1.0 / math.sqrt(2.0), abs=1e-15)
    amp[4] = 0.5  # f = 1/3
    fam = subharmonic_amplitudes(freq, amp)
    assert fam[2] == pytest.approx(1.0, abs=1e-15) and fam[3] == pytest.approx(0.5, abs=1e-15)
    assert subharmonic_content(freq, amp, max_frequency=0.4) == pytest.approx(1.0, abs=1e-15)
