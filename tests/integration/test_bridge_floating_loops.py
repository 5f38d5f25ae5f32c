"""Andrews' squeezer on a floating base under the bridge (found by the bridgeloop probe): with the file's massless
ground as the root, `Bridge` raised a bare ZeroDivisionError (the force stage's first call at an all-zero state:
a zero quaternion) and then a ValueError (PyBullet makes a body with a massless base static: a 7 × 7 mass matrix
for 13 tangent coordinates). Now a massless floating root is one ModelError naming the link, and with a massive
root the bridge runs and follows the reference engine (the file has no gravity; the motor turns the mechanism from
rest)."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import biobullet
from biobullet.core.errors import ModelError

ROOT = Path(__file__).resolve().parents[2]
SQUEEZER = ROOT / "urdf" / "andrews_squeezer.urdf"


def test_massless_floating_root_is_one_error_naming_the_link():
    model = biobullet.load_model(SQUEEZER, floating_base=True)
    with pytest.raises(ModelError, match=r"<link name=\"ground\">.*root link 'ground' has no mass"):
        biobullet.Bridge(model)


def test_floating_squeezer_with_a_massive_root_follows_the_reference_engine(tmp_path):
    import pybullet as p
    text = re.sub(r'<link name="ground">.*?</link>',
                  '<link name="ground"><inertial><mass value="2.0"/><inertia ixx="0.01" iyy="0.01" izz="0.01" '
                  'ixy="0" ixz="0" iyz="0"/></inertial></link>', SQUEEZER.read_text(), count=1, flags=re.S)
    path = tmp_path / "andrews_floating.urdf"
    path.write_text(text)
    model = biobullet.load_model(path, floating_base=True)
    t_end = 0.01
    reference = biobullet.simulate(model, t_end, progress=False)
    theirs = reference.column("beta")[-1] - reference.column("beta")[0]
    assert abs(theirs) > 1e-3   # the motor turned the mechanism

    def turned(dt: float) -> float:
        bridge = biobullet.Bridge(model, dt=dt)
        try:
            c, b = bridge.client, bridge.body
            beta = [k for k in range(p.getNumJoints(b, physicsClientId=c))
                    if p.getJointInfo(b, k, physicsClientId=c)[1] == b"beta"][0]
            start = p.getJointState(b, beta, physicsClientId=c)[0]
            for _ in range(round(t_end / dt)):
                bridge.step()
            return p.getJointState(b, beta, physicsClientId=c)[0] - start
        finally:
            bridge.close()

    # PyBullet's semi-implicit Euler is first order: halving dt halves the error against the reference engine
    coarse, fine = turned(1e-4) / theirs - 1.0, turned(5e-5) / theirs - 1.0
    assert abs(coarse) < 0.03 and 0.45 < fine / coarse < 0.55
