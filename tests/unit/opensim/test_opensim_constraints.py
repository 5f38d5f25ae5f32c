"""PointConstraint and WeldConstraint (→ `<loop>`) against OpenSim 4.6.

Two small models written with OpenSim's API for this test, their default poses assembled by OpenSim:
`fourbar_point_constraint.osim` (a planar four-bar of PinJoints, the coupler's end held on the rocker's by a
PointConstraint: 1 DOF, the constraint's out-of-plane row redundant, so it imports as a planar loop) and
`welded_block.osim` (a block on a six-coordinate CustomJoint, welded by a WeldConstraint with offset and rotated
frames to the hand of a two-pin arm: 2 DOF). Checks: forward dynamics under gravity at random consistent states
(OpenSim's Simbody solves the constrained equations with multipliers over all coordinates; biobullet the reduced
ones), and a 1 s passive motion against OpenSim's Manager.
"""
from __future__ import annotations

import os

import numpy as np
import pytest

from opensim_oracle import import_opensim

osim = import_opensim()

import biobullet  # noqa: E402
from biobullet.constraints.equations import constraint_set  # noqa: E402
from biobullet.constraints.loops import loop_terms  # noqa: E402

HERE = os.path.dirname(__file__)
MODELS = {"fourbar": os.path.join(HERE, "fourbar_point_constraint.osim"),
          "weld": os.path.join(HERE, "welded_block.osim")}


def _set_state(reference, state, model, q, v):
    """OpenSim's state at biobullet's consistent tree state for (q, v): every coordinate's value and speed
    (every joint here has u = q̇)."""
    x, xd, gradient, gamma = model.joint_state(q, v)
    coordinates = {c.getName(): c for c in reference.getCoordinateSet()}
    for name, value, rate in zip(model.joint_names, x, xd):
        if name in coordinates:
            coordinates[name].setValue(state, float(value), False)
            coordinates[name].setSpeedValue(state, float(rate))
    return coordinates, gradient, gamma


@pytest.mark.parametrize("kind", sorted(MODELS))
def test_constrained_forward_dynamics_match_opensim(kind):
    model = biobullet.load_model(MODELS[kind])
    loop_type = {"fourbar": "planar", "weld": "weld"}[kind]
    assert [loop.type for loop in constraint_set(model).loops] == [loop_type]
    reference = osim.Model(MODELS[kind])
    state = reference.initSystem()
    names = [c.getName() for c in reference.getCoordinateSet()]
    rng = np.random.default_rng(24)
    q_default, _ = model.initial_state()
    for _ in range(10):
        q = q_default + rng.uniform(-0.4, 0.4, model.nq)
        v = rng.normal(size=model.nq)
        coordinates, gradient, gamma = _set_state(reference, state, model, q, v)
        reference.realizeAcceleration(state)
        # the state is consistent for OpenSim too: its position and velocity constraint errors vanish
        assert np.abs(state.getQErr().to_numpy()).max() <= 1e-12
        assert np.abs(state.getUErr().to_numpy()).max() <= 1e-12
        expected = np.array([coordinates[n].getAccelerationValue(state) for n in names])
        xdd = gradient @ model.forward_dynamics(q, v, np.zeros(model.nq)) + gamma
        ours = np.array([xdd[model.joint_names.index(n)] for n in names])
        assert np.linalg.norm(ours - expected) <= 1e-9 * np.linalg.norm(expected)


@pytest.mark.parametrize("kind", sorted(MODELS))
def test_one_second_passive_motion_matches_opensims_manager(kind):
    """From the default pose with random independent speeds, gravity on. OpenSim's Manager at accuracy 1e-10
    (it projects onto the constraints after each step) and the reference engine at rtol 1e-11: the gap is the
    integrators' error, bounded as in test_opensim_oracle (2e-8 in positions, 1e-7 in rates); the loop stays
    closed to 1e-11 m along biobullet's trajectory."""
    model = biobullet.load_model(MODELS[kind])
    reference = osim.Model(MODELS[kind])
    state = reference.initSystem()
    q0, _ = model.initial_state()
    v0 = np.random.default_rng(5).normal(size=model.nq)
    coordinates, _, _ = _set_state(reference, state, model, q0, v0)
    manager = osim.Manager(reference)
    manager.setIntegratorAccuracy(1e-10)
    state.setTime(0.0)
    manager.initialize(state)
    end = manager.integrate(1.0)
    trajectory = biobullet.simulate(model, 1.0, initial=(q0, v0), rtol=1e-11, atol=1e-12,
                                    t_eval=np.linspace(0.0, 1.0, 11), progress=False)
    x_end, xd_end, _, _ = model.joint_state(trajectory.q[-1], trajectory.v[-1])
    for name, coordinate in coordinates.items():
        k = model.joint_names.index(name)
        assert abs(x_end[k] - coordinate.getValue(end)) <= 2e-8, name
        assert abs(xd_end[k] - coordinate.getSpeedValue(end)) <= 1e-7, name
    assert np.ptp(trajectory.q[:, 0]) > 0.1   # it moved
    loops = constraint_set(model).loops
    for q, v in zip(trajectory.q, trajectory.v):
        x = model.joint_state(q, v)[0]
        assert np.abs(loop_terms(model, loops, x, None, jacobian=False)[0]).max() <= 1e-11
