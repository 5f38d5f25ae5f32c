"""urdf/fourbar_knee.urdf checked with Pinocchio (independent of biobullet) against the analytic four-bar
oracle tests/fourbar_geometry.py: the loop closes at the <initial> state and along 0-110 deg of flexion."""
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

ROOT = Path(__file__).resolve().parents[2]
URDF = ROOT / "urdf" / "fourbar_knee.urdf"




import fourbar_geometry as fg  # tests/fourbar_geometry.py
ROOT_XML = ET.parse(URDF).getroot()
BB = ROOT_XML.find("biobullet")
MODEL = pin.buildModelFromUrdf(str(URDF))


def _xyz(s):
    return np.array([float(v) for v in s.split()])


def _pin_q(angles):
    q = pin.neutral(MODEL)
    for name, value in angles.items():
        jnt = MODEL.joints[MODEL.getJointId(name)]
        if jnt.nq == 2:
            q[jnt.idx_q:jnt.idx_q + 2] = np.cos(value), np.sin(value)
        else:
            q[jnt.idx_q] = value
    return q


def _loop_residual(data):
    lp = BB.find("loop")
    pa = data.oMf[MODEL.getFrameId(lp.get("link_a"))].act(_xyz(lp.get("xyz_a")))
    pb = data.oMf[MODEL.getFrameId(lp.get("link_b"))].act(_xyz(lp.get("xyz_b")))
    normal = _xyz(lp.get("normal"))
    d = pa - pb
    return d - (d @ normal) * normal           # planar loop: in-plane components only


def test_declared_structure():
    assert {MODEL.names[i]: MODEL.names[MODEL.parents[i]] for i in range(1, MODEL.njoints)} == {
        "knee_A": "universe", "knee_D": "knee_A", "knee_B": "universe"}
    assert BB.find("coordinates").get("names") == "knee_A"
    assert len(BB.findall("loop")) == 1 and BB.find("loop").get("type") == "planar"


def test_initial_state_assembles_the_loop_at_full_extension():
    data = MODEL.createData()
    angles = {e.get("joint"): float(e.get("position")) for e in BB.findall("initial")}
    assert set(angles) == {"knee_A", "knee_B", "knee_D"}
    pin.framesForwardKinematics(MODEL, data, _pin_q(angles))
    assert np.max(np.abs(_loop_residual(data))) <= 1e-12


@pytest.mark.parametrize("deg", [10, 30, 60, 90, 110])
def test_oracle_configurations_close_the_urdf_loop(deg):
    """The oracle's joint angles fed to Pinocchio's kinematics of the URDF close the loop and put the shank
    pivots where the oracle says (thigh frame = world frame, oracle (x, z) -> world (x, 0, z))."""
    phi = np.radians(deg)
    c = fg.solve(phi)
    data = MODEL.createData()
    pin.framesForwardKinematics(MODEL, data, _pin_q({k: c[k] for k in ("knee_A", "knee_B", "knee_D")}))
    assert np.max(np.abs(_loop_residual(data))) <= 1e-12
    shank = data.oMf[MODEL.getFrameId("shank")]
    np.testing.assert_allclose(shank.translation[[0, 2]], c["D"], atol=1e-15)
    # shank rotated about +y by the flexion angle
    np.testing.assert_allclose(shank.rotation, pin.utils.rotate("y", phi), atol=1e-15)


def test_out_of_plane_axes_and_masses_are_sane():
    for link in ROOT_XML.findall("link"):
        inertia = link.find("inertial/inertia")
        i = [float(inertia.get(k)) for k in ("ixx", "iyy", "izz")]
        assert min(i) > 0 and i[0] + i[1] >= i[2] and i[1] + i[2] >= i[0] and i[0] + i[2] >= i[1]
    for j in ROOT_XML.findall("joint"):
        assert _xyz(j.find("axis").get("xyz")).tolist() == [0.0, 1.0, 0.0]
