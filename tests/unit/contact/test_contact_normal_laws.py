"""Normal contact laws: formulas, no pulling, vectorisation, XML construction and validation."""
from __future__ import annotations

import math

import numpy as np
import pytest

from biobullet.contact.normal import Flores, Hertz, HuGuo, HuntCrossley, KelvinVoigt, KelvinVoigtSmooth
from biobullet.contact.registry import get_normal_law, normal_law_from_attributes, normal_law_names
from biobullet.core.errors import ModelError, SourceRef

SRC = SourceRef(file="robot.urdf", element='<contact name="heel">')


def _all_laws(adhesion=False):
    return [KelvinVoigt(stiffness=1e5, damping=20.0, adhesion=adhesion),
            KelvinVoigtSmooth(stiffness=1e5, damping=20.0, adhesion=adhesion),
            Hertz(stiffness=1e7, adhesion=adhesion),
            HuntCrossley(stiffness=140e6, restitution=0.3, adhesion=adhesion),
            Flores(stiffness=140e6, restitution=0.3, adhesion=adhesion),
            HuGuo(stiffness=140e6, restitution=0.3, adhesion=adhesion)]


def test_paper_002_formulas_at_a_point():
    # eqs. (21)-(23): F = K Δ^1.5 [1 + c Δ̇/Δ̇(−)], paper 002 parameters K = 140e6, cr = 0.8
    d, dd, vi, k, cr = 1e-4, 0.7, 4.2021, 140e6, 0.8
    base = k * d ** 1.5
    assert HuntCrossley(stiffness=k, restitution=cr).force(d, dd, vi) == pytest.approx(
        base * (1 + 3 * (1 - cr) / 2 * dd / vi), rel=1e-14)
    assert Flores(stiffness=k, restitution=cr).force(d, dd, vi) == pytest.approx(
        base * (1 + 8 * (1 - cr) / (5 * cr) * dd / vi), rel=1e-14)
    assert HuGuo(stiffness=k, restitution=cr).force(d, dd, vi) == pytest.approx(
        base * (1 + 3 * (1 - cr) / (2 * cr) * dd / vi), rel=1e-14)
    assert HuGuo(stiffness=k, restitution=cr).hysteresis_damping(vi) == pytest.approx(
        3 * (1 - cr) / (2 * cr) * k / vi, rel=1e-14)
    assert Hertz(stiffness=k).force(d, -5.0) == pytest.approx(base, rel=1e-14)
    assert KelvinVoigt(stiffness=1e5, damping=20).force(1e-3, 0.5) == pytest.approx(110.0, rel=1e-14)


def test_paper_003_smoothed_switch():
    # F = [1/2 − atan(C1 g)/π](K δ + χ δ̇) with gap g = −δ (paper 003, K = 1e5, χ = 20, C1 = 1e6)
    law = KelvinVoigtSmooth(stiffness=1e5, damping=20.0, smoothing=1e6)
    for d, dd in [(1e-3, 0.1), (2e-6, 0.3), (0.0, 0.5), (-3e-7, 0.2)]:
        expected = (0.5 - math.atan(1e6 * (-d)) / math.pi) * (1e5 * d + 20 * dd)
        assert law.force(d, dd) == pytest.approx(max(expected, 0.0), rel=1e-14)
    assert law.force(0.0, 0.5) == pytest.approx(0.5 * 10.0)  # half the dashpot force at first touch
    assert law.force(-1e-2, -0.1) == 0.0                     # receding outside contact: never pulls


def test_forces_never_negative_on_dense_grid():
    d = np.linspace(-2e-3, 1e-2, 241)[:, None, None]
    dd = np.linspace(-20.0, 20.0, 161)[None, :, None]
    vi = np.array([1e-5, 0.1, 1.0, 5.0])[None, None, :]
    for law in _all_laws():
        f = law.force(d, dd, vi if law.needs_impact_velocity else None)
        assert f.shape == (241, 161, 4 if law.needs_impact_velocity else 1)
        assert np.all(f >= 0.0), law.law_name
        assert np.all(np.isfinite(f))
        if not law.acts_outside_contact:
            assert np.all(f[d[:, 0, 0] <= 0.0] == 0.0)
    # adhesion lets the dashpot pull (receding fast): Kelvin–Voigt goes negative
    kv = KelvinVoigt(stiffness=1e5, damping=20.0, adhesion=True)
    assert kv.force(1e-4, -5.0) == pytest.approx(1e5 * 1e-4 - 100.0)
    assert kv.force(-1e-4, -5.0) == 0.0  # but nothing outside contact


def test_scalar_in_scalar_out_and_impact_velocity_required():
    assert isinstance(Hertz(stiffness=1e6).force(1e-3, 0.0), float)
    assert isinstance(HuGuo(stiffness=1e6, restitution=0.5).force(np.array([1e-3]), 0.0, 1.0), np.ndarray)
    with pytest.raises(ValueError):
        HuGuo(stiffness=1e6, restitution=0.5).force(1e-3, 0.1)
    # the floor keeps a contact that starts at rest finite (and more damped)
    law = HuGuo(stiffness=1e6, restitution=0.5, min_impact_velocity=1e-3)
    assert law.force(1e-3, 1e-4, 0.0) == law.force(1e-3, 1e-4, 1e-3)


def test_registry_and_from_attributes():
    assert normal_law_names() == ["flores", "hertz", "hu_guo", "hunt_crossley", "kelvin_voigt",
                                  "kelvin_voigt_smooth", "opensim_hunt_crossley"]
    law = normal_law_from_attributes({"normal_law": "hu_guo", "stiffness": "140e6", "restitution": "0.8",
                                      "name": "O1", "link": "l1", "mu": "0.1"}, SRC)
    assert isinstance(law, HuGuo) and law.needs_impact_velocity
    assert law.parameters == {"stiffness": 140e6, "exponent": 1.5, "adhesion": False, "restitution": 0.8,
                              "min_impact_velocity": 1e-3}
    law = normal_law_from_attributes({"normal_law": "kelvin_voigt_smooth", "stiffness": "1e5",
                                      "damping": "20", "adhesion": "true"}, SRC)
    assert law.parameters == {"stiffness": 1e5, "damping": 20.0, "adhesion": True, "smoothing": 1e6}
    assert not law.needs_impact_velocity
    assert get_normal_law("hertz") is Hertz
    assert "Hertz(" in repr(Hertz(stiffness=2.0))


BAD_NORMAL = [
    ({"normal_law": "hertzz", "stiffness": "1"}, "normal_law", "flores, hertz, hu_guo"),
    ({"stiffness": "1"}, "normal_law", "missing"),
    ({"normal_law": "hertz"}, "stiffness", "missing"),
    ({"normal_law": "hertz", "stiffness": "-1e6"}, "stiffness", "positive"),
    ({"normal_law": "hertz", "stiffness": "0"}, "stiffness", "positive"),
    ({"normal_law": "hertz", "stiffness": "1e6x"}, "stiffness", "not a number"),
    ({"normal_law": "hertz", "stiffness": "inf"}, "stiffness", "finite"),
    ({"normal_law": "hertz", "stiffness": "1e6", "exponent": "0"}, "exponent", "positive"),
    ({"normal_law": "hertz", "stiffness": "1e6", "adhesion": "maybe"}, "adhesion", "boolean"),
    ({"normal_law": "hu_guo", "stiffness": "1e6"}, "restitution", "missing"),
    ({"normal_law": "hu_guo", "stiffness": "1e6", "restitution": "0"}, "restitution", "[0.01, 1]"),
    ({"normal_law": "flores", "stiffness": "1e6", "restitution": "1.2"}, "restitution", "[0.01, 1]"),
    ({"normal_law": "hunt_crossley", "stiffness": "1e6", "restitution": "-0.5"}, "restitution", "[0.01, 1]"),
    ({"normal_law": "hunt_crossley", "stiffness": "1e6", "restitution": "0.5",
      "min_impact_velocity": "0"}, "min_impact_velocity", "positive"),
    ({"normal_law": "kelvin_voigt", "stiffness": "1e5"}, "damping", "missing"),
    ({"normal_law": "kelvin_voigt", "stiffness": "1e5", "damping": "-2"}, "damping", "non-negative"),
    ({"normal_law": "kelvin_voigt", "stiffness": "1e5", "damping": "2", "exponent": "1.5"}, "exponent",
     "linear"),
    ({"normal_law": "kelvin_voigt_smooth", "stiffness": "1e5", "damping": "2", "smoothing": "0"},
     "smoothing", "positive"),
    ({"normal_law": "opensim_hunt_crossley", "stiffness": "1e5", "dissipation": "1", "point_depth": "1.5"},
     "point_depth", "at most 1"),
    ({"normal_law": "opensim_hunt_crossley", "stiffness": "1e5", "dissipation": "1", "point_depth": "-0.1"},
     "point_depth", "negative"),
]


@pytest.mark.parametrize("attributes, attribute, fragment", BAD_NORMAL)
def test_bad_normal_parameters_raise_model_error_naming_attribute(attributes, attribute, fragment):
    with pytest.raises(ModelError) as info:
        normal_law_from_attributes(attributes, SRC)
    err = info.value
    assert err.attribute == attribute
    assert err.file == "robot.urdf" and err.element == '<contact name="heel">'
    assert f"attribute '{attribute}'" in str(err)
    assert fragment in str(err)


def test_programmatic_construction_is_validated_too():
    with pytest.raises(ModelError) as info:
        Flores(stiffness=1e6, restitution=0.0)
    assert info.value.attribute == "restitution"
    with pytest.raises(ModelError) as info:
        KelvinVoigt(stiffness=-1.0, damping=1.0)
    assert info.value.attribute == "stiffness"
