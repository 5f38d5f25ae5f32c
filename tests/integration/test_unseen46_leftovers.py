"""Leftovers of the last stop (leftover3 round): the defects its note left alone, each with its regression test.

1. contact and stop parameters whose value overflows or divides by ≈ 0 inside their law are refused when the
   file is read, naming the file, the element and the attribute, with the range and its physical reason:
   a restitution law's `min_impact_velocity` (χ = c K / floor), `<joint_stop>` stiffness and damping, the
   friction laws' coefficients and viscous terms;
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import biobullet
from biobullet.contact.testbed import drop_urdf
from biobullet.contact.element import contact_elements
from biobullet.core.errors import ModelError
from biobullet.forces import force_elements
from biobullet.loader import load_text

HU_GUO = {"normal_law": "hu_guo", "stiffness": "1e5", "restitution": "0.8"}


def _refused(path: Path, element: str, attribute: str) -> ModelError:
    """The ModelError load_model raises for `path`, checked to name the file, the element and the attribute."""
    with pytest.raises(ModelError) as info:
        biobullet.load_model(path)
    error = info.value
    assert error.file == str(path) and element in (error.element or "") and error.attribute == attribute, error
    return error


# ------------------------------------------------------------------ 1. laws' parameters that overflow
@pytest.mark.parametrize("law", ["hu_guo", "flores", "hunt_crossley"])
@pytest.mark.parametrize("floor", ["1e-300", "1e-12", "9.9e-10"])
def test_min_impact_velocity_below_its_floor_is_refused_at_load(tmp_path, law, floor):
    # before: loaded; a ball placed on its ground at rest (δ̇⁻ = 0 → the floor) then overflowed χ = c K / 1e-300 at
    # t = 3e-161 s ("the force of Contact('C') is not finite"), and at 1e-12 exhausted Radau's budget at 4e-9 s
    path = tmp_path / "drop.urdf"
    path.write_text(drop_urdf({**HU_GUO, "normal_law": law, "min_impact_velocity": floor}))
    error = _refused(path, "contact", "min_impact_velocity")
    assert "1e-09" in str(error) and "creeps" in str(error)


def test_the_smallest_min_impact_velocity_loads_and_floors_the_approach_velocity(tmp_path):
    # the range's end loads; its hysteresis damping is the law's closed form c K / floor (Hu–Guo: c = 3(1 − cr)/(2 cr))
    model = load_text(drop_urdf({**HU_GUO, "min_impact_velocity": "1e-9"}), tmp_path)
    (contact,) = contact_elements(model)
    law = contact.normal_law
    assert law.min_impact_velocity == 1e-9
    assert law.hysteresis_damping(0.0) == pytest.approx(1.5 * 0.2 / 0.8 * 1e5 / 1e-9, rel=1e-15)


@pytest.mark.parametrize("attribute, value", [("stiffness", "1e308"), ("stiffness", "1.1e18"),
                                              ("damping", "1e300")])
def test_joint_stop_stiffness_and_damping_beyond_any_stop_are_refused_at_load(tmp_path, attribute, value):
    # before: loaded; k = 1e308 overflows k p^e past p = 1, c = 1e300 overflows c ṗ at ṗ > 180
    values = {"stiffness": "1e4", "damping": "0", attribute: value}
    text = drop_urdf({"normal_law": "hertz", "stiffness": "1e5"}).replace(
        "</biobullet>", f'<joint_stop name="S" joint="drop" lower="-0.1" stiffness="{values["stiffness"]}" '
                        f'damping="{values["damping"]}"/></biobullet>')
    path = tmp_path / "stop.urdf"
    path.write_text(text)
    assert "1e+18" in str(_refused(path, "joint_stop", attribute))


def test_the_stiffest_joint_stop_accepted_loads_with_its_closed_form_force(tmp_path):
    text = drop_urdf({"normal_law": "hertz", "stiffness": "1e5"}).replace(
        "</biobullet>", '<joint_stop name="S" joint="drop" lower="-0.1" stiffness="1e18" damping="1e18"/></biobullet>')
    model = load_text(text, tmp_path)
    stop = next(e for e in force_elements(model) if e.name == "S")
    force = stop.generalized_force(model, np.array([-0.12]), np.zeros(1), 0.0)
    assert float(force[0]) == pytest.approx(1e18 * 0.02 ** 2, rel=1e-12)   # k p², the smooth stop's default e = 2


@pytest.mark.parametrize("friction, attribute", [
    ({"friction_law": "coulomb", "mu": "1e300"}, "mu"),
    ({"friction_law": "regularized", "mu": "2e3", "v0": "0.01"}, "mu"),
    ({"friction_law": "stribeck", "mu": "0.5", "mu_static": "1e300", "stribeck_velocity": "0.1", "v0": "0.01"},
     "mu_static"),
    ({"friction_law": "stribeck", "mu": "0.5", "mu_static": "0.6", "stribeck_velocity": "0.1", "v0": "0.01",
      "viscous": "1e300"}, "viscous"),
    ({"friction_law": "opensim", "mu_static": "0.8", "mu_dynamic": "0.5", "mu_viscous": "1e300"}, "mu_viscous"),
])
def test_friction_coefficients_beyond_any_surface_are_refused_at_load(tmp_path, friction, attribute):
    # before: loaded; μ F_N (and μ_v s F_N) overflowed at the first slip, reported as the contact's force
    path = tmp_path / "drop.urdf"
    path.write_text(drop_urdf({**HU_GUO, **friction}))
    _refused(path, "contact", attribute)
