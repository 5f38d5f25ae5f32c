"""Joint reactions on the bridge vs PyBullet's own joint force-torque sensors (enableJointForceTorqueSensor).

Both describe the same step: ours from the pre-step state and the torques `apply()` sent (tree ABA + Newton–Euler
backward pass), PyBullet's from its solve of that step. From rest, PyBullet's reading differs from ours by O(dt²)
(measured on arm7, relative: 1.5e-4 / 1.5e-6 / 1.5e-8 at dt = 1 ms / 0.1 ms / 0.01 ms with torques — its sensor
belongs to a state inside the step), so the tests run at dt = 0.01 ms with a 1e-6 relative limit and check the
dt² scaling, which rules out a convention difference (frame, point, sign, PyBullet's old double-counted motor torque). Floating bases are compared under joint torques: in free fall
from rest every reaction is zero on both sides. With joint velocities PyBullet's reading differs by a velocity-
dependent force along the spinning joint's axis (two-link pendulum at 3 rad/s: 0.104 N, independent of dt) although
its accelerations equal ours to all printed digits — a difference in PyBullet's feedback computation; ours equals
Pinocchio's RNEA data.f to 1e-14 (tests/validation/test_link_segment_oracles.py) — not asserted here.
"""
from __future__ import annotations

import numpy as np
import pytest

import biobullet
from biobullet.bridge.reactions import enable_force_torque_sensors, joint_reactions, pybullet_sensor_reactions
from biobullet.model.bundled import bundled_model

pybullet = pytest.importorskip("pybullet")


def _compare(model_name, torque_scale, seed=1, dt=1e-5):
    # the random configurations below lie beyond some URDF limits (humanoid: prismatic joints limited to a few cm),
    # where the limit stops would add large stiff torques that have nothing to do with the reactions compared:
    # without limits (joint_limits=False), as the comparison was designed
    model = biobullet.load_model(bundled_model(model_name), joint_limits=False)
    with biobullet.Bridge(model, dt=dt) as bridge:
        rng = np.random.default_rng(seed)
        q = model.neutral_configuration()
        q[model._base_q:] = rng.uniform(-1.0, 1.0, model.nq - model._base_q)
        bridge.reset(q, np.zeros(model.nv))
        enable_force_torque_sensors(bridge)
        _, x, _ = bridge.state()
        bridge.apply(generalized=torque_scale * rng.normal(size=model.nv))
        ours = joint_reactions(bridge)
        pybullet.stepSimulation(physicsClientId=bridge.client)
        theirs = pybullet_sensor_reactions(bridge, x)
    scale = max(max(np.abs(r.force).max(), np.abs(r.moment).max()) for r in theirs.values())
    force = max(np.abs(ours[k].force - theirs[k].force).max() for k in theirs) / scale
    moment = max(np.abs(ours[k].moment - theirs[k].moment).max() for k in theirs) / scale
    return force, moment


def test_passive_step_reactions_equal_pybullet_sensors():
    force, moment = _compare("arm7.urdf", 0.0)
    assert force <= 1e-6 and moment <= 1e-6, (force, moment)


def test_actuated_step_reactions_equal_pybullet_sensors():
    force, moment = _compare("arm7.urdf", 5.0)
    assert force <= 1e-6 and moment <= 1e-6, (force, moment)


def test_difference_is_the_steps_discretisation_order_two():
    coarse, fine = _compare("arm7.urdf", 5.0, dt=1e-4)[0], _compare("arm7.urdf", 5.0, dt=1e-5)[0]
    assert 80.0 < coarse / fine < 120.0, (coarse, fine)


@pytest.mark.parametrize("name", ["humanoid.urdf", "pitching_arm.urdf"])
def test_floating_base_prismatic_and_massless_links_equal_pybullet_sensors(name):
    """humanoid: floating base with prismatic joints; pitching arm: floating trunk, massless intermediate links."""
    force, moment = _compare(name, 5.0)
    assert force <= 1e-6 and moment <= 1e-6, (force, moment)
