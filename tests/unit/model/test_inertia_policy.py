"""Inertia semantics and policy: massless links keep their inertia, links without <inertial> weigh nothing,
physical (semi-definite) tensors load, impossible ones follow load_model(inertia=...)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from biobullet import load_model
from biobullet.core.errors import ModelError
from biobullet.model.urdf import nearest_physical_inertia

CHAIN = """<?xml version="1.0"?>
<robot name="chain">
  <link name="base"><inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="arm"><inertial><origin xyz="0 0 -0.2"/><mass value="2"/>{arm}</inertial></link>
  <link name="sensor"><inertial><origin xyz="0.05 0 0"/><mass value="{sensor_mass}"/>{sensor}</inertial></link>
  <link name="bare"/>
  <joint name="j1" type="revolute"><parent link="base"/><child link="arm"/><axis xyz="0 1 0"/>
    <limit lower="-2" upper="2" effort="1" velocity="1"/></joint>
  <joint name="j2" type="revolute"><parent link="arm"/><child link="sensor"/><origin xyz="0 0 -0.4"/><axis xyz="1 0 0"/>
    <limit lower="-2" upper="2" effort="1" velocity="1"/></joint>
  <joint name="fix" type="fixed"><parent link="sensor"/><child link="bare"/><origin xyz="0 0.1 0"/></joint>
</robot>
"""
GOOD = '<inertia ixx="0.02" iyy="0.02" izz="0.01" ixy="0" ixz="0" iyz="0"/>'


def write(tmp_path, name="chain.urdf", arm=GOOD, sensor=GOOD, sensor_mass="0.5"):
    path = tmp_path / name
    path.write_text(CHAIN.format(arm=arm, sensor=sensor, sensor_mass=sensor_mass))
    return path


def test_point_mass_and_thin_rod_load_silently(tmp_path):
    rod = '<inertia ixx="0" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/>'
    point = '<inertia ixx="0" iyy="0" izz="0" ixy="0" ixz="0" iyz="0"/>'
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = load_model(write(tmp_path, arm=rod, sensor=point), inertia="strict")
    assert model.bodies[1].mass == 0.5 and np.all(model.bodies[1].inertia_com == 0.0)


def test_massless_link_keeps_its_rotational_inertia(tmp_path):
    """As Pinocchio: the massless sensor still resists rotation about j2 (M[1, 1] = its Ixx = 0.02)."""
    model = load_model(write(tmp_path, sensor_mass="0"))
    assert model.bodies[1].mass == 0.0
    assert model.mass_matrix(np.zeros(2))[1, 1] == pytest.approx(0.02, rel=1e-15)
    pin = pytest.importorskip("pinocchio")
    pm = pin.buildModelFromUrdf(str(model.file))
    mass = pin.crba(pm, pm.createData(), np.array([0.3, -0.4]))
    mass = np.triu(mass) + np.triu(mass, 1).T
    assert np.abs(model.mass_matrix(np.array([0.3, -0.4])) - mass).max() < 1e-15


def test_link_without_inertial_weighs_nothing(tmp_path):
    model = load_model(write(tmp_path))
    assert model.total_mass == pytest.approx(2.5)   # arm 2 + sensor 0.5 (the fixed base is no body); "bare": 0


@pytest.mark.parametrize("tensor, problem", [
    ('<inertia ixx="0.01" iyy="0.01" izz="0.05" ixy="0" ixz="0" iyz="0"/>', "triangle inequality violated"),
    ('<inertia ixx="0.01" iyy="0.02" izz="0.03" ixy="0.02" ixz="0" iyz="0"/>', "indefinite")])
def test_policy(tmp_path, tensor, problem):
    path = write(tmp_path, arm=tensor)
    with pytest.warns(UserWarning, match=f"arm \\({problem}"):
        kept = load_model(path)
    assert kept.description.inertia_issues[0][:2] == ("arm", problem)
    with pytest.warns(UserWarning, match="inertia repaired"):
        repaired = load_model(path, inertia="repair")
    with pytest.raises(ModelError, match='<link name="arm"> <inertial> <inertia>'):
        load_model(path, inertia="strict")
    with pytest.raises(ModelError, match="unknown inertia policy"):
        load_model(path, inertia="fix")
    file_tensor = np.array(kept.description.link("arm").inertial.inertia)
    new_tensor = np.array(repaired.description.link("arm").inertial.inertia)
    principal = np.linalg.eigvalsh(new_tensor)
    assert principal[0] >= -1e-15 and principal[0] + principal[1] >= principal[2] - 1e-15
    distance = np.linalg.norm(new_tensor - file_tensor) / np.linalg.norm(file_tensor)
    assert distance == pytest.approx(repaired.description.inertia_issues[0][2], rel=1e-12)


def test_nearest_physical_inertia_is_the_projection():
    """(0.01, 0.01, 0.05) projects onto the face λ1 + λ2 = λ3 along its normal: (0.02, 0.02, 0.04) by hand; and no
    random physical tensor is closer than the result (a projection onto a convex set)."""
    assert np.allclose(nearest_physical_inertia(np.diag([0.01, 0.01, 0.05])), np.diag([0.02, 0.02, 0.04]),
                       atol=1e-15)
    rng = np.random.default_rng(0)
    for _ in range(20):
        a = rng.normal(size=(3, 3))
        tensor = (a + a.T) / 2
        best = nearest_physical_inertia(tensor)
        for _ in range(50):
            d = rng.uniform(0, 1, 3)
            axes, _ = np.linalg.qr(rng.normal(size=(3, 3)))
            candidate = axes @ np.diag([d[1] + d[2], d[0] + d[2], d[0] + d[1]]) @ axes.T
            assert np.linalg.norm(tensor - best) <= np.linalg.norm(tensor - candidate) + 1e-12


def test_front_matter_whitespace_and_xacro(tmp_path):
    path = tmp_path / "blank.urdf"
    path.write_text("\n\n  " + CHAIN.format(arm=GOOD, sensor=GOOD, sensor_mass="0.5"))
    assert load_model(path).nv == 2
    xacro = tmp_path / "robot.urdf"
    xacro.write_text('<robot name="r" xmlns:xacro="http://www.ros.org/wiki/xacro"><xacro:macro name="m"/>'
                     '<link name="a"/></robot>')
    with pytest.raises(ModelError, match="this is a xacro file"):
        load_model(xacro)
    declared_only = tmp_path / "expanded.urdf"   # expanded URDFs often keep the namespace declaration
    declared_only.write_text(CHAIN.format(arm=GOOD, sensor=GOOD, sensor_mass="0.5")
                             .replace('<robot name="chain">', '<robot name="chain" xmlns:xacro="http://www.ros.org/wiki/xacro">'))
    assert load_model(declared_only).nv == 2
