"""Friction laws: dissipativity, limits, exact shapes, XML construction and validation."""
from __future__ import annotations

import math

import numpy as np
import pytest

from biobullet.contact.friction import Ambrosio, Coulomb, NoFriction, Regularized, Stribeck
from biobullet.contact.registry import friction_law_from_attributes, friction_law_names
from biobullet.core.errors import ModelError, SourceRef

SRC = SourceRef(file="robot.urdf", element='<contact name="toe">')


def _all_laws():
    return [NoFriction(), Coulomb(mu=0.6), Regularized(mu=0.6, v0=1e-4),
            Regularized(mu=0.6, v0=1e-3, regularization="tanh"), Ambrosio(mu=0.1, v0=1e-4, v1=1e-3),
            Stribeck(mu=0.4, mu_static=0.7, stribeck_velocity=1e-2, v0=1e-4, viscous=2.0),
            Stribeck(mu=0.4, mu_static=0.4, stribeck_velocity=1e-2, v0=1e-4, regularization="tanh")]


@pytest.mark.parametrize("dim", [2, 3])
def test_friction_never_adds_energy_and_opposes_slip(dim):
    rng = np.random.default_rng(7)
    directions = rng.normal(size=(64, dim))
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    speeds = np.concatenate([[0.0], np.logspace(-7, 1, 161)])
    slip = speeds[:, None, None] * directions[None, :, :]           # (162, 64, dim)
    for fn in (0.0, 3.0, 250.0, -5.0):
        for law in _all_laws():
            f = law.force(slip, fn)
            assert f.shape == slip.shape
            power = np.sum(f * slip, axis=-1)
            assert np.all(power <= 0.0), law
            assert np.all(f[0] == 0.0)                             # zero slip -> zero force
            # antiparallel: F = −|F| v̂
            mag = np.linalg.norm(f, axis=-1)
            np.testing.assert_allclose(f[1:], -mag[1:, :, None] * directions[None], rtol=1e-12, atol=1e-300)
            if fn <= 0.0:
                assert np.all(f == 0.0)                             # no contact, no friction


def test_scalar_and_1d_slip():
    law = Regularized(mu=0.5, v0=1e-3)
    for v in (-0.2, -1e-3, 1e-4, 0.3):
        expected = -0.5 * 10.0 * (2 / math.pi) * math.atan(v / 1e-3)
        assert law.force(v, 10.0) == pytest.approx(expected, rel=1e-14)
    np.testing.assert_allclose(law.force_1d([-0.2, 0.0, 0.3], 10.0),
                               [law.force(-0.2, 10.0), 0.0, law.force(0.3, 10.0)], rtol=1e-15)
    tanh = Regularized(mu=0.5, v0=1e-3, regularization="tanh")
    assert tanh.force(2e-3, 10.0) == pytest.approx(-5.0 * math.tanh(2.0), rel=1e-14)
    assert Coulomb(mu=0.5).force(0.0, 10.0) == 0.0      # switched: documented zero at zero slip
    assert Coulomb(mu=0.5).force(-1e-12, 10.0) == 5.0
    # batch of vectors with per-row normal force
    f = Coulomb(mu=0.5).force(np.array([[3.0, 4.0], [0.0, -2.0]]), np.array([10.0, 4.0]))
    np.testing.assert_allclose(f, [[-3.0, -4.0], [0.0, 2.0]], rtol=1e-15)


def test_ambrosio_paper_002_definition():
    law = Ambrosio(mu=0.1, v0=1e-4, v1=1e-3)  # paper 002 values
    fn = 200.0
    below = np.linspace(0.0, 1e-4, 50)
    assert np.all(law.magnitude(below, fn) == 0.0)           # |V| ≤ v0 (v0 included) -> 0
    above = np.linspace(1e-3, 10.0, 50)
    np.testing.assert_allclose(law.magnitude(above, fn), 0.1 * fn, rtol=1e-15)   # |V| ≥ v1 -> μ F_N
    mid = np.linspace(1.1e-4, 0.99e-3, 20)
    np.testing.assert_allclose(law.magnitude(mid, fn), (mid - 1e-4) / (1e-3 - 1e-4) * 0.1 * fn, rtol=1e-12)


def test_stribeck_limits():
    mu_s, mu_k, vs, v0 = 0.7, 0.4, 1e-2, 1e-6
    law = Stribeck(mu=mu_k, mu_static=mu_s, stribeck_velocity=vs, v0=v0, regularization="tanh")
    # just past the regularisation scale (s = 20 v0): tanh = 1 − O(1e-17), exp(−(s/vs)²) = 1 − 4e-6
    s = 20 * v0
    assert law.coefficient(np.array(s)) == pytest.approx(mu_s, abs=(mu_s - mu_k) * 4.1e-6)
    # large speed: exp(−100) ≈ 4e-44 -> kinetic
    assert law.coefficient(np.array(10 * vs)) == pytest.approx(mu_k, rel=1e-15)
    # atan regularisation converges like 1 − 2/(π x)
    # (at s = 1e3 v0 = 1e-5 m/s: 1 − r = 6.37e-4, Stribeck term 1 − 1e-6)
    atan = Stribeck(mu=mu_k, mu_static=mu_s, stribeck_velocity=vs, v0=1e-8)
    assert atan.coefficient(np.array(1e-5)) == pytest.approx(mu_s, rel=2 / (math.pi * 1e3) + 2e-6)
    assert atan.coefficient(np.array(1e-5)) < mu_s
    # viscous term adds σ s
    visc = Stribeck(mu=mu_k, mu_static=mu_s, stribeck_velocity=vs, v0=v0, viscous=2.0, regularization="tanh")
    assert visc.coefficient(np.array(1.0)) == pytest.approx(mu_k + 2.0, rel=1e-15)
    # maximum sits near s ~ a few v0 and the curve decreases through the Stribeck zone
    s = np.linspace(1e-4, 5e-2, 200)
    assert np.all(np.diff(law.coefficient(s)) <= 0.0)


def test_registry_and_from_attributes():
    assert friction_law_names() == ["ambrosio", "coulomb", "none", "opensim", "regularized", "stribeck"]
    assert isinstance(friction_law_from_attributes({"normal_law": "hertz"}, SRC), NoFriction)  # default
    law = friction_law_from_attributes({"friction_law": "ambrosio", "mu": "0.1", "v0": "1e-4", "v1": "1e-3"}, SRC)
    assert law.parameters == {"mu": 0.1, "v0": 1e-4, "v1": 1e-3}
    law = friction_law_from_attributes({"friction_law": "stribeck", "mu": "0.4", "mu_static": "0.6",
                                        "stribeck_velocity": "0.01", "v0": "1e-4"}, SRC)
    assert law.parameters["viscous"] == 0.0 and law.parameters["regularization"] == "atan"


BAD_FRICTION = [
    ({"friction_law": "opensim", "mu_static": "0.2", "mu_dynamic": "0.5"}, "mu_dynamic", "2 mu_static"),
    ({"friction_law": "viscous"}, "friction_law", "ambrosio, coulomb, none"),
    ({"friction_law": "coulomb"}, "mu", "missing"),
    ({"friction_law": "coulomb", "mu": "-0.1"}, "mu", "non-negative"),
    ({"friction_law": "regularized", "mu": "0.5"}, "v0", "missing"),
    ({"friction_law": "regularized", "mu": "0.5", "v0": "0"}, "v0", "positive"),
    ({"friction_law": "regularized", "mu": "0.5", "v0": "1e-3", "regularization": "sigmoid"},
     "regularization", "atan, tanh"),
    ({"friction_law": "ambrosio", "mu": "0.1", "v0": "1e-4"}, "v1", "missing"),
    ({"friction_law": "ambrosio", "mu": "0.1", "v0": "1e-3", "v1": "1e-3"}, "v1", "v1 > v0"),
    ({"friction_law": "ambrosio", "mu": "0.1", "v0": "-1e-3", "v1": "1e-3"}, "v0", "non-negative"),
    ({"friction_law": "stribeck", "mu": "0.4", "mu_static": "0.3", "stribeck_velocity": "0.01", "v0": "1e-4"},
     "mu_static", "mu_static ≥ mu"),
    ({"friction_law": "stribeck", "mu": "0.4", "stribeck_velocity": "0.01", "v0": "1e-4"}, "mu_static",
     "missing"),
    ({"friction_law": "stribeck", "mu": "0.4", "mu_static": "0.6", "stribeck_velocity": "0", "v0": "1e-4"},
     "stribeck_velocity", "positive"),
    ({"friction_law": "stribeck", "mu": "0.4", "mu_static": "0.6", "stribeck_velocity": "0.01", "v0": "1e-4",
      "viscous": "-1"}, "viscous", "non-negative"),
    ({"friction_law": "coulomb", "mu": "nan"}, "mu", "finite"),
]


@pytest.mark.parametrize("attributes, attribute, fragment", BAD_FRICTION)
def test_bad_friction_parameters_raise_model_error_naming_attribute(attributes, attribute, fragment):
    with pytest.raises(ModelError) as info:
        friction_law_from_attributes(attributes, SRC)
    err = info.value
    assert err.attribute == attribute
    assert err.file == "robot.urdf" and err.element == '<contact name="toe">'
    assert fragment in str(err)
    with pytest.raises(ModelError):  # without a SourceRef the argument is still named
        friction_law_from_attributes(attributes, None)
