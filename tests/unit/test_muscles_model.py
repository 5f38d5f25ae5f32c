"""The muscle API on a URDF model with `<muscle>` elements (no OpenSim): lengths against the path computed by hand
from the joint geometry, moment arms against central differences of the lengths through a joint function (the
moving point's joint is driven by the independent one), and the checks of the arguments.

Tolerances: lengths 1e-14 m (the same sums of products, different order); moment arms 1e-8 m (central
differences with h = 1e-6: truncation ≈ h² l‴ ≈ 1e-12, round-off ≈ 1e-16 / h ≈ 1e-10).
"""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import biobullet
import biobullet.muscles as muscles
from biobullet.core.errors import ModelError

INERTIAL = '<inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1"/></inertial>'
URDF = f"""<robot name="arm">
  <link name="base">{INERTIAL}</link><link name="l1">{INERTIAL}</link><link name="l2">{INERTIAL}</link>
  <joint name="j1" type="revolute"><parent link="base"/><child link="l1"/><axis xyz="0 0 1"/>
    <limit lower="-2" upper="2" effort="1" velocity="1"/></joint>
  <joint name="j2" type="revolute"><parent link="l1"/><child link="l2"/><origin xyz="0 0 0.5"/><axis xyz="0 1 0"/>
    <limit lower="-2" upper="2" effort="1" velocity="1"/></joint>
  <biobullet>
    <joint_function joint="j2" type="polynomial" inputs="j1" coefficients="0 0.5 0.2"/>
    <muscle name="flexor" model="thelen2003" tendon="compliant" max_isometric_force="300"
            optimal_fiber_length="0.2" tendon_slack_length="0.4">
      <point link="base" xyz="0.1 0 0"/>
      <point link="l1" xyz="0.05 0.02 0.3" coordinate="j1" range="-1 1"/>
      <moving_point link="l2" coordinate="j2" range="-1.5 1.5" xyz="0 0.01 0" xyz_body_rotation="0 0 0.3">
        <x type="polynomial" coefficients="0.03 0.01"/><z type="polynomial" coefficients="0.1"/>
      </moving_point>
      <point link="l2" xyz="0 0 0.4"/>
    </muscle>
    <muscle name="short" model="degroote2016" max_isometric_force="100" optimal_fiber_length="0.1"
            tendon_slack_length="0.2">
      <point link="base" xyz="0 0.05 0.1"/><point link="l1" xyz="0.04 0 0.2"/>
    </muscle>
  </biobullet>
</robot>
"""


def _rz(a):
    return np.array([[math.cos(a), -math.sin(a), 0], [math.sin(a), math.cos(a), 0], [0, 0, 1]])


def _ry(a):
    return np.array([[math.cos(a), 0, math.sin(a)], [0, 1, 0], [-math.sin(a), 0, math.cos(a)]])


def _by_hand(q1: float) -> float:
    """The flexor's length from the joint geometry written out (URDF: link frame = parent · origin · joint; a
    <moving_point> polynomial lists its coefficients highest power first, a <joint_function> lowest first)."""
    theta2 = 0.5 * q1 + 0.2 * q1 ** 2
    r1 = _rz(q1)
    r2, o2 = r1 @ _ry(theta2), r1 @ np.array([0, 0, 0.5])
    c = min(max(theta2, -1.5), 1.5)
    moving = np.array([0, 0.01, 0]) + _rz(0.3) @ np.array([0.03 * c + 0.01, 0.0, 0.1])   # x-y-z angles (0, 0, 0.3)
    points = [np.array([0.1, 0, 0])] + ([r1 @ np.array([0.05, 0.02, 0.3])] if -1 <= q1 <= 1 else []) + \
        [r2 @ moving + o2, r2 @ np.array([0, 0, 0.4]) + o2]
    return float(sum(np.linalg.norm(b - a) for a, b in zip(points, points[1:])))


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    path = tmp_path_factory.mktemp("muscles") / "arm.urdf"
    path.write_text(URDF)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return biobullet.load_model(path, joint_limits=False)


def test_lengths_match_the_geometry_by_hand(model):
    assert muscles.names(model) == ("flexor", "short")
    assert model.coordinate_names == ("j1",)
    for q1 in (-1.7, -0.4, 0.3, 0.9, 1.6):   # the conditional point is on the path for |q1| ≤ 1 only
        assert muscles.lengths(model, [q1])[0] == pytest.approx(_by_hand(q1), abs=1e-14)


def test_moment_arms_are_minus_the_derivative_through_the_joint_function(model):
    h = 1e-6
    for q1 in (-1.7, -0.4, 0.3, 0.9, 1.6):
        arms = muscles.moment_arms(model, [q1])
        assert arms.shape == (2, 1)
        derivative = -(muscles.lengths(model, [q1 + h]) - muscles.lengths(model, [q1 - h])) / (2 * h)
        assert np.max(np.abs(arms[:, 0] - derivative)) <= 1e-8


def test_equilibrium_forces_and_argument_checks(model):
    forces = muscles.equilibrium_tendon_forces(model, [0.3], [0.5, 1.0])
    assert forces.shape == (2,) and np.all(forces > 0.0)
    assert np.array_equal(muscles.equilibrium_tendon_forces(model, [0.3], 0.5)[:1], forces[:1])
    with pytest.raises(ModelError, match="activation"):
        muscles.equilibrium_tendon_forces(model, [0.3], [0.5])
    with pytest.raises(ModelError, match="activation outside"):
        muscles.equilibrium_tendon_forces(model, [0.3], 1.5)
    with pytest.raises(ModelError, match="'q'"):
        muscles.lengths(model, [0.1, 0.2])


def test_a_model_without_muscles_has_none(tmp_path):
    path = tmp_path / "bare.urdf"
    path.write_text(URDF.split("<biobullet>")[0] + "</robot>\n")
    model = biobullet.load_model(path)
    assert muscles.names(model) == ()
    assert muscles.lengths(model, [0.2, 0.1]).shape == (0,)   # no joint function here: j1 and j2 are free
    assert muscles.moment_arms(model, [0.2, 0.1]).shape == (0, 2)
