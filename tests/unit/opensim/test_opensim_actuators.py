"""OpenSim's CoordinateActuator, TorqueActuator and PointActuator as biobullet inputs, against OpenSim 4.6.

`actuated_arm.osim` (written by OpenSim 4.6's API): a pin shoulder and a gimbal elbow with offset frames on both
sides (the forearm's body frame is not its link frame), a CoordinateActuator on elbow_y, a TorqueActuator between
the two bodies about an axis in body A (`torque_is_global` false), a PointActuator with a global direction at a
body point, and one with a global point and a body direction. OpenSim drives them through a PrescribedController
(constant controls; force = optimal_force × control). At random states and controls, biobullet's
q̈ = forward_dynamics(q, v, actuator_forces(controls)) must equal OpenSim's coordinate accelerations to 1e-9
relative (both are exact up to round-off; M's condition number here is ~1e2).
"""
from __future__ import annotations

import os
import warnings

import numpy as np
import pytest

from opensim_oracle import import_opensim

osim = import_opensim()

import biobullet  # noqa: E402
from biobullet.opensim import actuator_forces, osim_actuators, osim_translation  # noqa: E402

FILE = os.path.join(os.path.dirname(__file__), "actuated_arm.osim")
NAMES = ("elbow_motor", "wrist_torque", "hand_push", "upper_push")


def _opensim_accelerations(q: dict, v: dict, controls: dict) -> dict:
    model = osim.Model(FILE)
    controller = osim.PrescribedController()
    for name, value in controls.items():
        controller.addActuator(model.getActuators().get(name))
        controller.prescribeControlForActuator(name, osim.Constant(value))
    model.addController(controller)
    state = model.initSystem()
    for coordinate in model.getCoordinateSet():
        coordinate.setValue(state, q[coordinate.getName()], False)
        coordinate.setSpeedValue(state, v[coordinate.getName()])
    model.realizeAcceleration(state)
    return {c.getName(): c.getAccelerationValue(state) for c in model.getCoordinateSet()}


def test_actuators_are_inputs_not_reports():
    translation = osim_translation(FILE, strict=True)   # nothing left unimported
    assert translation.coordinates == ("shoulder_angle", "elbow_x", "elbow_y", "elbow_z")
    assert sorted(osim_actuators(FILE)) == sorted(NAMES)


def test_actuated_accelerations_match_opensim():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = biobullet.load_model(FILE)
    actuators = osim_actuators(FILE)
    rng = np.random.default_rng(7)
    for _ in range(4):
        q = rng.uniform(-1.2, 1.2, model.nv)
        v = rng.uniform(-2.0, 2.0, model.nv)
        controls = {name: float(rng.uniform(-1.0, 1.0)) for name in NAMES}
        names = model.coordinate_names
        reference = _opensim_accelerations(dict(zip(names, q)), dict(zip(names, v)), controls)
        expected = np.array([reference[name] for name in names])
        actual = model.forward_dynamics(q, v, actuator_forces(model, actuators, q, controls))
        passive = model.forward_dynamics(q, v)
        assert np.linalg.norm(actual - passive) > 0.1 * np.linalg.norm(expected)   # the actuators matter
        assert np.linalg.norm(actual - expected) <= 1e-9 * np.linalg.norm(expected), (actual, expected)


def test_each_actuator_alone_matches_opensim():
    model = biobullet.load_model(FILE)
    actuators = osim_actuators(FILE)
    q = np.array([0.4, -0.7, 0.9, 0.3])
    v = np.array([0.5, -1.0, 0.2, 1.5])
    names = model.coordinate_names
    for name in NAMES:
        controls = {other: (0.8 if other == name else 0.0) for other in NAMES}
        reference = _opensim_accelerations(dict(zip(names, q)), dict(zip(names, v)), controls)
        expected = np.array([reference[n] for n in names])
        actual = model.forward_dynamics(q, v, actuator_forces(model, actuators, q, {name: 0.8}))
        assert np.linalg.norm(actual - expected) <= 1e-9 * np.linalg.norm(expected), (name, actual, expected)


def test_unknown_control_name_is_one_clear_error():
    model = biobullet.load_model(FILE)
    with pytest.raises(biobullet.ModelError, match="no actuator named 'elbow'"):
        actuator_forces(model, osim_actuators(FILE), np.zeros(model.nq), {"elbow": 1.0})
