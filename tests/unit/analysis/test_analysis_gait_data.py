"""Bundled substitute gait data (data/gait/walking_1ms.json), its loader and the fourier round trip."""
from __future__ import annotations

import math

import numpy as np
import pytest

from biobullet.core.errors import SourceRef
from biobullet.functions.registry import get
from biobullet_studies.gait import SIGNALS, fit_reference_points, load_gait

DEG = 180.0 / math.pi
SRC = SourceRef("test.urdf", '<joint_function joint="knee">')


@pytest.fixture(scope="module")
def gait():
    return load_gait("walking_1ms")


def test_every_signal_is_documented(gait) -> None:
    assert set(gait.signals) == set(SIGNALS)
    assert gait.period == 1.0
    for s in gait.signals.values():
        assert s.source and s.notes and s.units in ("m", "rad")
        assert 6 <= len(s.a) == len(s.b) <= 10


def test_reference_points_reproduced_within_stated_tolerance(gait) -> None:
    for name, s in gait.signals.items():
        ref = s.reference_points
        scale = DEG if (s.units == "rad" and ref["units"] == "deg") else 1.0
        error = np.max(np.abs(s.evaluate(np.asarray(ref["phase"]) * s.period) * scale - np.asarray(ref["value"])))
        assert error <= ref["tolerance"], name


def test_stored_coefficients_are_reproducible_from_the_points(gait) -> None:
    # the JSON coefficients are exactly what fit_reference_points gives (provenance check)
    for name in ("thigh", "knee", "ankle"):
        s = gait.signal(name)
        ref = s.reference_points
        a0, a, b = fit_reference_points(ref["phase"], ref["value"], len(s.a), interpolate=ref["method"])
        np.testing.assert_allclose(np.r_[a0, a, b] / DEG, np.r_[s.a0, s.a, s.b], rtol=0, atol=1e-12)


def test_key_gait_features(gait) -> None:
    t = np.linspace(0.0, 1.0, 2001)
    knee = gait.evaluate("knee", t) * DEG
    assert 0.0 <= knee.min() and knee.max() <= 70.0
    assert 58.0 <= knee.max() <= 65.0 and 0.65 <= t[np.argmax(knee)] <= 0.78  # swing peak
    stance = t < 0.3
    assert 15.0 <= knee[stance].max() <= 21.0  # loading-response flexion
    thigh = gait.evaluate("thigh", t) * DEG
    assert 38.0 <= np.ptp(thigh) <= 42.0
    hip_y = gait.evaluate("hip_y", t)
    assert 0.04 <= np.ptp(hip_y) <= 0.05
    # two vertical oscillations per stride: only the 2nd harmonic
    s = gait.signal("hip_y")
    assert np.count_nonzero(np.r_[s.a, s.b]) == 2 and s.a[1] != 0.0
    assert abs(np.mean(gait.evaluate("hip_x", t[:-1]))) < 1e-15


def test_signals_are_periodic_and_continuous(gait) -> None:
    for name in SIGNALS:
        for d in (0, 1, 2):
            v0, v1 = gait.evaluate(name, np.array([0.0, 1.0]), derivative=d)
            assert v1 == pytest.approx(v0, abs=1e-12 * max(1.0, abs(v0)))
        # derivative = finite difference of the value (central, h = 1e-5, error ~ h² y''' ≲ 1e-6)
        t = np.linspace(0.0, 1.0, 37)
        fd = (gait.evaluate(name, t + 1e-5) - gait.evaluate(name, t - 1e-5)) / 2e-5
        scale = max(1.0, np.max(np.abs(fd)))
        np.testing.assert_allclose(gait.evaluate(name, t, derivative=1), fd, rtol=0, atol=1e-6 * scale)


def test_period_rescaling_and_hip_hiking(gait) -> None:
    slow = load_gait(period=1.25)
    t = np.linspace(0.0, 1.0, 11)
    np.testing.assert_allclose(slow.evaluate("knee", 1.25 * t), gait.evaluate("knee", t), rtol=0, atol=1e-14)
    hiked = gait.hip_hiking()
    np.testing.assert_allclose(hiked.evaluate("hip_y", t), 1.006 * gait.evaluate("hip_y", t), rtol=1e-14)
    np.testing.assert_array_equal(hiked.evaluate("thigh", t), gait.evaluate("thigh", t))
    assert gait.signal("hip_y").a0 == 0.94  # the original is untouched


@pytest.mark.parametrize("name", SIGNALS)
def test_fourier_attributes_round_trip(gait, name: str) -> None:
    attributes = {"joint": "knee", **gait.fourier_attributes(name)}
    function = get("fourier").from_attributes(attributes, (), SRC)
    for t in (0.0, 0.137, 0.72, 3.9):
        value, rate, accel = function.evaluate(np.zeros(0), t)
        assert value == pytest.approx(float(gait.evaluate(name, t)), abs=1e-14)
        assert rate[0] == pytest.approx(float(gait.evaluate(name, t, 1)), abs=1e-12)
        assert accel[0, 0] == pytest.approx(float(gait.evaluate(name, t, 2)), abs=1e-10)
