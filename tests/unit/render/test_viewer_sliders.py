"""The viewer's sliders (render.viewer.slider_specs): degrees for angles, metres for lengths, starting at the
file's `<initial>` values; q_from_sliders turns them back into the model's q (rad, m).

References: the numbers written in the URDF files (the `<initial>` radians and the `<limit>`s, converted by hand
below), and for a floating base the URDF rpy convention (spatial.rotations.rpy_to_matrix)."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from biobullet.loader import load_model
from biobullet.render.viewer import q_from_sliders, slider_specs

REPO = Path(__file__).resolve().parents[3]


def test_shoulder_sliders_are_in_degrees_at_the_initial_values():
    model = load_model(REPO / "urdf" / "shoulder_rhythm.urdf")
    specs = {spec.name: spec for spec in slider_specs(model)}
    assert list(specs) == list(model.coordinate_names)
    # shoulder_rhythm.urdf: <initial joint="elevation" position="0.8726646259971648"/> (50°), axial −30°
    assert specs["elevation"].initial == pytest.approx(50.0, abs=1e-9)
    assert specs["axial_rotation"].initial == pytest.approx(-30.0, abs=1e-9)
    assert specs["elevation"].unit == "deg" and specs["elevation"].label == "elevation (deg)"
    assert specs["elevation"].step == pytest.approx(0.1)
    assert "0.872665 rad" in specs["elevation"].hint(50.0)
    joint = model.description.joint("elbow_flexion")
    # the URDF's 0 … 2.6 rad (148.969…°), in whole tenths of a degree, rounded inward
    assert (specs["elbow_flexion"].lower, specs["elbow_flexion"].upper) == (0.0, 148.9)
    assert math.degrees(joint.upper) - 0.1 < 148.9 <= math.degrees(joint.upper)
    q = q_from_sliders(model, [spec.initial for spec in specs.values()])
    np.testing.assert_allclose(q, model.initial_state()[0], atol=1e-12)
    q = q_from_sliders(model, [90.0, 45.0, 0.0, 10.0])
    np.testing.assert_allclose(q, np.radians([90.0, 45.0, 0.0, 10.0]), atol=1e-15)


def test_prismatic_sliders_are_in_metres(tmp_path):
    inertial = '<inertial><mass value="1"/><inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial>'
    (tmp_path / "slide.urdf").write_text(
        f'<robot name="slide"><link name="a">{inertial}</link><link name="b">{inertial}</link>'
        f'<link name="c">{inertial}</link>'
        '<joint name="rail" type="prismatic"><parent link="a"/><child link="b"/><axis xyz="1 0 0"/>'
        '<limit lower="-0.2" upper="0.3" effort="1" velocity="1"/></joint>'
        '<joint name="hinge" type="continuous"><parent link="b"/><child link="c"/><axis xyz="0 0 1"/></joint>'
        '<biobullet version="1"><initial joint="rail" position="0.12"/><initial joint="hinge" position="-1"/>'
        '</biobullet></robot>')
    model = load_model(tmp_path / "slide.urdf")
    rail, hinge = slider_specs(model)
    assert (rail.unit, rail.lower, rail.upper, rail.initial) == ("m", -0.2, 0.3, 0.12)
    assert rail.step == pytest.approx(0.0005) and rail.label == "rail (m)"
    assert hinge.unit == "deg" and (hinge.lower, hinge.upper) == pytest.approx((-180.0, 180.0))
    assert hinge.initial == pytest.approx(-57.29577951308232)
    np.testing.assert_allclose(q_from_sliders(model, [0.05, 90.0]), [0.05, math.pi / 2], atol=1e-15)


def test_floating_base_sliders_give_the_urdf_rpy_rotation():
    from biobullet.spatial.rotations import quaternion_to_matrix, rpy_to_matrix
    model = load_model(REPO / "urdf" / "humanoid.urdf")
    assert model.floating_base
    specs = slider_specs(model)
    assert [s.name for s in specs[:6]] == ["base_x", "base_y", "base_z", "base_roll", "base_pitch", "base_yaw"]
    assert [s.unit for s in specs[:6]] == ["m"] * 3 + ["deg"] * 3
    values = np.array([s.initial for s in specs])
    np.testing.assert_allclose(values[:3], model.initial_state()[0][:3], atol=1e-12)
    values[3:6] = np.degrees((0.3, -0.7, 1.9))
    q = q_from_sliders(model, values)
    np.testing.assert_allclose(quaternion_to_matrix(q[3:7]), rpy_to_matrix((0.3, -0.7, 1.9)), atol=1e-14)
