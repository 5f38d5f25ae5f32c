"""Leftovers of round 2 (leftover4): the bridge's clock in a frame skip on models without joint functions or loops.

Oracle: PyBullet's own clock — the number of stepSimulation() calls the test made times the client's fixedTimeStep
(read from the client); the bridge's clock must follow it, and the frame skip is named once."""
from __future__ import annotations

import warnings
from pathlib import Path

import pytest

pybullet = pytest.importorskip("pybullet")

from biobullet.bridge import Bridge  # noqa: E402
from biobullet.bridge.outside import CouplingWarning  # noqa: E402
from biobullet.contact.testbed import drop_urdf  # noqa: E402
from biobullet.loader import load_text  # noqa: E402
from test_unseen15_bridge_habits import SPRUNG  # noqa: E402  (a double pendulum on two joint springs: torques sent)
from test_unseen33_bridge_clock import client  # noqa: E402,F401  (a DIRECT client at the models' gravity)

G, MASS, RADIUS, DT = 9.81, 2.0, 0.1, 1e-3

#: a solid ball on a floating base, nothing but gravity (no joints, no rows, nothing sent)
BALL = (f'<robot name="unseen54_ball"><link name="ball"><inertial><mass value="{MASS!r}"/><inertia '
        f'ixx="{0.4 * MASS * RADIUS ** 2!r}" iyy="{0.4 * MASS * RADIUS ** 2!r}" izz="{0.4 * MASS * RADIUS ** 2!r}" '
        f'ixy="0" ixz="0" iyz="0"/></inertial></link><biobullet version="1"><gravity xyz="0 0 {-G!r}"/>'
        '<base type="floating"/></biobullet></robot>')

#: a ball on a prismatic drop joint bouncing on its Hu–Guo contact (torques sent while in contact, one joint)
BOUNCE = drop_urdf({"normal_law": "hu_guo", "stiffness": "1e5", "restitution": "0.8"}, radius=0.05,
                   name="unseen54_bounce")


def skipped_run(client, model, initial, applies: int, steps: int, dt: float = DT):
    """(the bridge's clock, PyBullet's clock — the calls made × the client's fixedTimeStep —, the bridge's last
    state x) after `applies` apply() calls each followed by `steps` stepSimulation() calls."""
    with Bridge(model, client, dt=dt, initial=initial) as bridge:
        for _ in range(applies):
            bridge.apply()
            for _ in range(steps):
                pybullet.stepSimulation(physicsClientId=client)
        bridge.apply()   # (reads the last calls' steps; its own dt is the coming step's)
        clock = bridge.time - bridge.dt
        _, x, _ = bridge.state()
    return clock, applies * steps * pybullet.getPhysicsEngineParameters(physicsClientId=client)["fixedTimeStep"], x


@pytest.mark.parametrize("text, initial, steps, applies", [
    (BALL, {"base_z": 30.0}, 2, 300), (BALL, {"base_z": 30.0}, 3, 200), (SPRUNG, None, 2, 250),
    (BOUNCE, {"drop": 0.3}, 2, 300)], ids=["ball-2", "ball-3", "sprung-2", "bounce-2"])
def test_the_clock_counts_a_frame_skip_on_a_model_without_rows(client, tmp_path: Path, text, initial, steps,
                                                                applies):
    """stepSimulation() `steps` times per apply() on a model without joint functions or loops: PyBullet's clock is
    at applies · steps · dt. Before, the bridge's counted one step per apply() (a dropped ball at 0.3 s where
    PyBullet was at 0.6 s), silently on a model with one moving coordinate. Now it counts the steps the jump fits
    (k steps whose later ones are free motion, `OutsideWatch._free_steps`, on a jump only) and names the skip once,
    through a bounce on the contact too."""
    model = load_text(text, tmp_path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        clock, pybullet_time, _ = skipped_run(client, model, initial, applies, steps)
    said = [str(w.message) for w in caught if issubclass(w.category, CouplingWarning)]
    assert len(said) == 1 and f"stepSimulation() ran {steps} times" in said[0], said
    assert abs(clock - pybullet_time) <= 1e-9, (clock, pybullet_time)
