"""HuntCrossleyForce with a ContactSphere on a ContactHalfSpace (→ `<contact>` with the `opensim_hunt_crossley`
normal law and the `opensim` friction law) against OpenSim 4.6.

`ball_on_ground.osim`: a 2 kg ball on a three-translation CustomJoint (no rotation, so u = q̇ and the contact's
point of application cannot matter), its ContactSphere (r = 0.1 m, offset from the body origin) against a
ContactHalfSpace on the ground (plane y = 0.01, rotated frame), with different parameters on the two surfaces
(written by OpenSim's API, the second ContactParameters set added by hand) so the combination rules are tested.
"""
from __future__ import annotations

import os

import numpy as np
import pytest

from opensim_oracle import import_opensim

osim = import_opensim()

import biobullet  # noqa: E402
from biobullet.contact.element import contact_elements  # noqa: E402
from biobullet.forces.collection import applied_forces  # noqa: E402

BALL = os.path.join(os.path.dirname(__file__), "ball_on_ground.osim")
CENTRE = np.array([0.01, -0.02, 0.005])   # the sphere's centre in the ball's frame
RADIUS, PLANE = 0.1, 0.01


def _opensim_state(reference, state, q, v):
    for k, coordinate in enumerate(reference.getCoordinateSet()):
        coordinate.setValue(state, float(q[k]), False)
        coordinate.setSpeedValue(state, float(v[k]))


@pytest.mark.parametrize("delta", [1e-5, 1e-3, 4e-3])
def test_contact_forces_match_opensims_hunt_crossley_force(delta):
    """Force on the ball at penetrations δ, approach rates and slip velocities across the friction law's regimes
    (below, at and beyond the transition velocity 0.05 m/s). The same closed-form law: the bound is the round-off
    of δ, a difference of positions of 0.2 m (relative ε · 0.2/δ, times 1.5 in δ^1.5), plus 1e-13. The
    torque OpenSim reports confirms where it applies the force: the plane point moved into the overlap by
    δ k'_sphere/(k'_sphere + k'_plane), i.e. δ k'_plane/(k'_sphere + k'_plane) above the sphere's deepest point
    where biobullet applies it (docs/opensim.md)."""
    model = biobullet.load_model(BALL)
    reference = osim.Model(BALL)
    state = reference.initSystem()
    force = reference.getForceSet().get("contact")
    k_ball, k_plane = 2e6 ** (2 / 3), 5e6 ** (2 / 3)
    rtol = 1e-13 + 3 * 1.5 * np.finfo(float).eps * 0.2 / delta
    for delta_dot in (-0.3, 0.0, 0.2):
        for slip in ((0.0, 0.0), (0.01, -0.02), (0.05, 0.0), (-0.3, 0.4)):
            centre_y = PLANE + RADIUS - delta
            q = np.array([0.2, centre_y - CENTRE[1], -0.1])
            v = np.array([slip[0], -delta_dot, slip[1]])
            _opensim_state(reference, state, q, v)
            reference.realizeDynamics(state)
            record = force.getRecordValues(state)
            expected_force = np.array([record.get(i) for i in range(3)])
            expected_torque = np.array([record.get(i) for i in range(3, 6)])
            tau = applied_forces(model, q, v, elements=contact_elements(model))
            assert expected_force[1] > 0.0
            assert np.abs(tau - expected_force).max() <= rtol * np.abs(expected_force).max()
            point = q + CENTRE - np.array([0.0, RADIUS - delta * k_plane / (k_ball + k_plane), 0.0])
            assert np.allclose(np.cross(point - q, expected_force), expected_torque, rtol=0,
                               atol=rtol * np.abs(expected_force).max())


def test_drop_and_slide_matches_opensims_manager():
    """The ball dropped from 2 cm above the plane, sliding at 0.3 m/s, for 0.4 s (bounces, then sliding to rest
    under friction). OpenSim's Manager (accuracy 1e-10) against the reference engine (rtol 1e-11, its contact
    events at δ = 0): the gap is the integrators' error around the stiff impacts (K δ^1.5 with K = 4.4e5, impact
    at 0.63 m/s), observed 5e-11 m and 1.2e-8 m/s; bounds 1e-9 m and 1e-6 m/s. A wrong combination rule or
    friction law moves the ball by millimetres."""
    model = biobullet.load_model(BALL)
    reference = osim.Model(BALL)
    state = reference.initSystem()
    q0 = np.array([0.0, PLANE + RADIUS + 0.02 - CENTRE[1], 0.0])
    v0 = np.array([0.3, 0.0, -0.1])
    _opensim_state(reference, state, q0, v0)
    manager = osim.Manager(reference)
    manager.setIntegratorAccuracy(1e-10)
    state.setTime(0.0)
    manager.initialize(state)
    end = manager.integrate(0.4)
    expected_q = np.array([c.getValue(end) for c in reference.getCoordinateSet()])
    expected_v = np.array([c.getSpeedValue(end) for c in reference.getCoordinateSet()])
    run = biobullet.simulate(model, 0.4, initial=(q0, v0), rtol=1e-11, atol=1e-12, t_eval=[0.0, 0.4],
                             progress=False)
    assert abs(expected_q[0] - q0[0]) > 0.01   # it slid, then stuck
    assert np.abs(run.q[-1] - expected_q).max() <= 1e-9
    assert np.abs(run.v[-1] - expected_v).max() <= 1e-6
