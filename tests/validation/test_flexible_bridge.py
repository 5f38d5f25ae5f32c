"""Segmented flexible link on the PyBullet bridge against the reference engine.

A soft cantilever (paper-002 section, E = 2e9 Pa, ω₁ ≈ 11 rad/s, Kelvin–Voigt and air damping on) starts
straight and horizontal and swings down under gravity (tip deflection ≈ 0.2 m: large rotations of the
segments). Both engines load the same generated URDF; the bridge gets the joint springs/dampers through
`forces.applied_forces` and the air damping through the Python force element — nothing else is added.

Tolerance: PyBullet's semi-implicit Euler with the torques held over a step is first order, so the tip error
must halve with dt. Observed (N = 4, t ≤ 0.25 s): max |Δtip| = 1.9e-4 m at dt = 4e-4 s and 9.6e-5 m at
2e-4 s, ratio 2.0. Asserted: error(2e-4) < 2e-4 m (0.1 % of the 0.2 m motion) and ratio within 2 ± 0.2.
The reference engine runs with rtol 1e-10 (its own error ≪ 1e-6 m).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import biobullet
from biobullet.core.errors import ModelError

pytest.importorskip("pybullet")

T_END = 0.25
SAMPLE = 0.01
URDF = """<?xml version="1.0"?>
<robot name="soft_cantilever">
  <link name="wall"/>
  <link name="beam"><inertial><origin xyz="0.5 0 0"/><mass value="1"/>
    <inertia ixx="1e-4" ixy="0" ixz="0" iyy="0.08" iyz="0" izz="0.08"/></inertial></link>
  <joint name="clamp" type="fixed"><parent link="wall"/><child link="beam"/><origin xyz="0 0 0"/></joint>
  <biobullet version="1">
    <gravity xyz="0 -9.81 0"/>
    <flexible link="beam" theory="timoshenko" boundary="cf" length="1.0" youngs_modulus="2e9"
              shear_modulus="7.6923076923076923e8" shear_coefficient="0.8333333333333334" area="3.75e-4"
              second_moment="4.8828125e-9" density="2666.6666666666667" kelvin_voigt="2e5" air_damping="0.05"
              segments="4"/>
  </biobullet>
</robot>
"""


@pytest.fixture(scope="module")
def beam(tmp_path_factory) -> Path:
    f = tmp_path_factory.mktemp("flexible_bridge") / "soft.urdf"
    f.write_text(URDF)
    return f


def tip_history_bridge(path: Path, dt: float) -> np.ndarray:
    from biobullet.bridge import Bridge
    from biobullet.bridge.flexible import centre_line
    bridge = Bridge(biobullet.load_model(path), dt=dt, shear=False)   # expands the <flexible> link itself
    layouts = bridge.layouts
    with bridge:
        every = int(round(SAMPLE / dt))
        tips = [centre_line(bridge.model, bridge.state()[1], layouts["beam"])[-1]]
        for k in range(int(round(T_END / dt))):
            bridge.step()
            if (k + 1) % every == 0:
                tips.append(centre_line(bridge.model, bridge.state()[1], layouts["beam"])[-1])
    return np.array(tips)


@pytest.fixture(scope="module")
def reference_tip(beam) -> np.ndarray:
    from biobullet.bridge.flexible import centre_line
    from biobullet.flexible.segments import load_segmented_model
    model, layouts = load_segmented_model(beam, shear=False)
    grid = np.arange(0.0, T_END + 0.5 * SAMPLE, SAMPLE)
    traj = biobullet.simulate(model, T_END, rtol=1e-10, atol=1e-12, t_eval=grid, progress=False)
    zero = np.zeros(model.nv)
    return np.array([centre_line(model, model.joint_state(q, zero)[0], layouts["beam"])[-1] for q in traj.q])


def test_bridge_matches_reference_first_order(beam, reference_tip) -> None:
    assert reference_tip[:, 1].min() < -0.15  # the beam really swings down (large rotations)
    errors = []
    for dt in (4e-4, 2e-4):
        tips = tip_history_bridge(beam, dt)
        assert tips.shape == reference_tip.shape
        errors.append(float(np.abs(tips[:, :2] - reference_tip[:, :2]).max()))
    assert errors[1] < 2e-4, errors
    assert 1.8 < errors[0] / errors[1] < 2.2, errors


def test_unstable_time_step_is_refused(beam) -> None:
    from biobullet.bridge import Bridge
    from biobullet.bridge.flexible import stable_time_step
    from biobullet.flexible.segments import load_segmented_model
    model, _ = load_segmented_model(beam, shear=False)
    dt = stable_time_step(model)
    assert 0.0 < dt < 2.0 / 400.0  # ω_max ≈ 440 rad/s for N = 4
    with pytest.raises(ModelError, match="dt"):
        Bridge(biobullet.load_model(beam), dt=8.0 * dt, shear=False)
