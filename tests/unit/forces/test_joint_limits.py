"""URDF `<limit>`s act as joint stops by default, on both engines (as in PyBullet), with an opt-out.

A pendulum (COM 0.5 m out, 1 kg) falls from θ = 0 onto its upper limit 0.5 rad. The stop is a smooth
`JointStop` (force k p², k = M_jj ω² / (2 p_ref)); where it comes to rest is the root of the static balance
k p² = m g l cos(upper + p) — an independent scalar equation solved here by brentq. PyBullet's own rigid limit
(the opt-out model on a bridge that keeps PyBullet's `<limit>`s) is the oracle that the motion stops there.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import brentq

import biobullet
from biobullet.forces.collection import force_elements
from biobullet.forces.elements import LIMIT_FREQUENCY, LIMIT_REFERENCE_PENETRATION

MASS, LENGTH, SPIN, UPPER, G = 1.0, 0.5, 0.01, 0.5, 9.81

PENDULUM = f"""<robot name="pendulum">
  <link name="base"/>
  <link name="arm"><inertial><origin xyz="{LENGTH} 0 0"/><mass value="{MASS}"/>
    <inertia ixx="{SPIN}" iyy="{SPIN}" izz="{SPIN}" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="hinge" type="revolute"><parent link="base"/><child link="arm"/><axis xyz="0 1 0"/>
    <limit lower="-0.5" upper="{UPPER}" effort="10" velocity="10"/></joint>
  <biobullet version="1"><gravity xyz="0 0 -{G}"/></biobullet>
</robot>
"""


@pytest.fixture()
def pendulum(tmp_path):
    path = tmp_path / "pendulum.urdf"
    path.write_text(PENDULUM)
    return path


def resting_angle() -> float:
    """θ where the stop's k p² balances gravity's m g l cos θ (the falling arm rotates about +y towards −z)."""
    inertia = SPIN + MASS * LENGTH ** 2   # M_jj about the hinge
    k = inertia * LIMIT_FREQUENCY ** 2 / (2 * LIMIT_REFERENCE_PENETRATION)
    p = brentq(lambda p: k * p * p - MASS * G * LENGTH * math.cos(UPPER + p), 0.0, 0.2)
    return UPPER + p


def test_limit_is_a_stop_by_default_and_holds_at_the_static_balance(pendulum):
    model = biobullet.load_model(pendulum)
    assert [e.name for e in force_elements(model)] == ["limit_hinge"]
    trajectory = biobullet.simulate(model, 2.0)
    theta = trajectory.positions[:, 0]
    assert theta.max() < UPPER + 0.05   # it never swings far through the limit
    assert abs(theta[-1] - resting_angle()) < 1e-6   # at rest on the stop, where the balance says
    balance = trajectory.energy_balance()   # the stop's damping is in the energy record
    assert np.max(np.abs(balance - balance[0])) < 1e-7


def test_opt_out_lets_the_pendulum_swing_through(pendulum):
    model = biobullet.load_model(pendulum, joint_limits=False)
    assert force_elements(model) == ()
    theta = biobullet.simulate(model, 1.0).positions[:, 0]
    assert theta.max() > 2.5   # free pendulum: swings to π


def test_bridge_applies_the_same_stop_and_pybullet_agrees(pendulum):
    def final_angle(model, **options):
        with biobullet.Bridge(model, dt=1e-3, **options) as bridge:
            for _ in range(2000):
                bridge.step()
            _, x, xd = bridge.state()
        return float(x[0]), float(xd[0])

    ours, rate = final_angle(biobullet.load_model(pendulum))
    assert abs(ours - resting_angle()) < 1e-5 and abs(rate) < 1e-6
    # PyBullet's rigid limit (opt-out model, PyBullet's own <limit> kept): also at rest at the limit
    theirs, _ = final_angle(biobullet.load_model(pendulum, joint_limits=False), joint_limits=True)
    assert abs(theirs - UPPER) < 5e-3
    assert abs(ours - theirs) < 0.02   # the stop's static penetration (≈ 0.009 rad here) is the difference


def test_a_file_joint_stop_replaces_the_limit_stop(tmp_path):
    path = tmp_path / "pendulum.urdf"
    path.write_text(PENDULUM.replace("</biobullet>", '<joint_stop joint="hinge" upper="0.3" stiffness="100"/>'
                                                     "</biobullet>"))
    assert [e.name for e in force_elements(biobullet.load_model(path))] == ["joint_stop_hinge"]


def test_cli_no_joint_limits(pendulum, tmp_path, capsys):
    from biobullet.cli import main
    assert main(["simulate", str(pendulum), "--t-end", "0.6", "--no-joint-limits", "--out",
                 str(tmp_path / "free.csv")]) == 0
    assert main(["simulate", str(pendulum), "--t-end", "0.6", "--out", str(tmp_path / "stop.csv")]) == 0
    free = np.loadtxt(tmp_path / "free.csv", delimiter=",", skiprows=1)[:, 1]
    stop = np.loadtxt(tmp_path / "stop.csv", delimiter=",", skiprows=1)[:, 1]
    assert free.max() > 1.0 and stop.max() < UPPER + 0.05
