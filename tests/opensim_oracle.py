"""Shared by the OpenSim oracle tests: OpenSim imported without leaving a log file in the checkout."""
from __future__ import annotations

import os
import tempfile

import pytest


def import_opensim():
    """OpenSim, imported in a scratch folder: on import it opens `opensim.log` in the working directory, and the
    tests then close that file sink (nothing is left in the checkout). Skips the test module without OpenSim."""
    here = os.getcwd()
    with tempfile.TemporaryDirectory(prefix="biobullet-opensim-") as scratch:
        os.chdir(scratch)
        try:
            module = pytest.importorskip("opensim", reason="OpenSim (the oracle) is installed by the test extra: "
                                         "pip install -e '.[test]'")
            module.Logger.removeFileSink()
        finally:
            os.chdir(here)
    module.Logger.setLevelString("error")
    return module


def load_with_warnings(path: str):
    """biobullet's model of the .osim file at `path`, its body map (`opensim.osim_body_links`) and the messages
    of the warnings the import gave."""
    import warnings

    import biobullet
    from biobullet.opensim import osim_body_links

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = biobullet.load_model(path)
        links = osim_body_links(path)
    return model, links, [str(w.message) for w in caught]


def opensim_without_forces(osim, path: str, actuators: bool = True):
    """OpenSim model at `path` with every force switched off, plus one CoordinateActuator (optimal force 1) per
    coordinate for generalized forces (`overrideActuation`); (model, its initialized state, {coordinate:
    actuator})."""
    model = osim.Model(path)
    for force in model.getForceSet():
        force.set_appliesForce(False)
    added = {}
    if actuators:
        for coordinate in model.getCoordinateSet():
            actuator = osim.CoordinateActuator(coordinate.getName())
            actuator.setName("test_actuator_" + coordinate.getName())
            actuator.setOptimalForce(1.0)
            model.addForce(actuator)
            added[coordinate.getName()] = actuator
    state = model.initSystem()
    return model, state, added


def placement_difference(reference, state, model, links, x) -> float:
    """Largest difference between OpenSim's body placements (`getTransformInGround`, `state` realized to position)
    and biobullet's at joint configuration x (`links`: `opensim.osim_body_links`), rotation entries and origins."""
    import numpy as np

    from biobullet.algorithms.kinematics import body_placements, frame_placement

    placements = body_placements(model, x)
    worst = 0.0
    for body in reference.getBodySet():
        link = links[body.getName()]
        rotation, origin = frame_placement(model, x, link.link, placements)
        expected = body.getTransformInGround(state)
        expected_rotation = np.array([[expected.R().get(i, j) for j in range(3)] for i in range(3)])
        expected_origin = np.array([expected.p().get(i) for i in range(3)])
        worst = max(worst, np.abs(rotation @ link.rotation - expected_rotation).max(),
                    np.abs(origin + rotation @ link.translation - expected_origin).max())
    return worst
