"""urdf/andrews_squeezer.urdf checked with Pinocchio (independent of biobullet) and the classic equations.

The URDF joint angles are meant to BE the classic coordinates of Hairer & Wanner (beta, Theta, gamma, Phi, delta,
Omega, epsilon).  If that holds, then at the published consistent initial angles the three loop points meet, the
spring has the published length, and Pinocchio's joint-space mass matrix / bias forces equal the classic M(q) and
velocity terms of f(q, q') -- all computed here without any biobullet code.
"""
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

ROOT = Path(__file__).resolve().parents[2]
URDF = ROOT / "urdf" / "andrews_squeezer.urdf"




import andrews_classic as ac  # tests/andrews_classic.py
CLASSIC_ORDER = ("beta", "theta", "gamma", "phi", "delta", "omega", "epsilon")


@pytest.fixture(scope="module")
def xml_root():
    return ET.parse(URDF).getroot()


@pytest.fixture(scope="module")
def model():
    return pin.buildModelFromUrdf(str(URDF))


def _initial_angles(root):
    return {e.get("joint"): float(e.get("position")) for e in root.find("biobullet").findall("initial")}


def _pin_q(model, angles):
    """Pinocchio configuration from joint angles by joint name (continuous joints use cos/sin)."""
    q = pin.neutral(model)
    for name, value in angles.items():
        jnt = model.joints[model.getJointId(name)]
        if jnt.nq == 2:
            q[jnt.idx_q:jnt.idx_q + 2] = np.cos(value), np.sin(value)
        else:
            q[jnt.idx_q] = value
    return q


def _perm(model):
    """Index of each classic coordinate in Pinocchio's velocity vector."""
    return [model.joints[model.getJointId(n)].idx_v for n in CLASSIC_ORDER]


def _world_point(model, data, link, xyz):
    fid = model.getFrameId(link)
    return data.oMf[fid].act(np.asarray(xyz, dtype=float))


def _xyz(s):
    return np.array([float(v) for v in s.split()])


def test_tree_matches_the_classic_layout(model):
    parents = {model.names[i]: model.names[model.parents[i]] for i in range(1, model.njoints)}
    assert parents == {"beta": "universe", "theta": "beta", "gamma": "universe", "delta": "universe",
                       "phi": "delta", "epsilon": "universe", "omega": "epsilon"}
    assert model.nv == 7


def test_initial_state_closes_all_loops(xml_root, model):
    data = model.createData()
    angles = _initial_angles(xml_root)
    assert set(angles) == set(CLASSIC_ORDER)
    np.testing.assert_array_equal([angles[n] for n in CLASSIC_ORDER], ac.Q0)
    pin.framesForwardKinematics(model, data, _pin_q(model, angles))
    loops = xml_root.find("biobullet").findall("loop")
    assert len(loops) == 3
    for lp in loops:
        pa = _world_point(model, data, lp.get("link_a"), _xyz(lp.get("xyz_a")))
        pb = _world_point(model, data, lp.get("link_b"), _xyz(lp.get("xyz_b")))
        # the published angles are given to 30 digits; only double rounding (~1e-17 m) remains
        assert np.max(np.abs(pa - pb)) <= 1e-12, lp.get("name")


def test_spring_length_at_t0(xml_root, model):
    data = model.createData()
    pin.framesForwardKinematics(model, data, _pin_q(model, _initial_angles(xml_root)))
    sp = xml_root.find("biobullet").find("spring")
    pa = _world_point(model, data, sp.get("link_a"), _xyz(sp.get("xyz_a")))
    pb = _world_point(model, data, sp.get("link_b"), _xyz(sp.get("xyz_b")))
    # digest/test set: l(0) = 0.0526725161 (10 digits given -> 1e-9 m is the rounding of the published value)
    assert abs(np.linalg.norm(pa - pb) - 0.0526725161) <= 1e-9
    assert float(sp.get("stiffness")) == ac.C0 and float(sp.get("rest_length")) == ac.L0


def test_loop_points_follow_the_classic_constraints_off_the_initial_state(xml_root, model):
    """Random angles: Pinocchio loop-point differences == classic g(q) (same coordinates, same sign)."""
    data = model.createData()
    loops = xml_root.find("biobullet").findall("loop")
    rng = np.random.default_rng(7)
    for _ in range(5):
        qc = rng.uniform(-np.pi, np.pi, 7)
        pin.framesForwardKinematics(model, data, _pin_q(model, dict(zip(CLASSIC_ORDER, qc))))
        res = []
        for lp in loops:
            pa = _world_point(model, data, lp.get("link_a"), _xyz(lp.get("xyz_a")))
            pb = _world_point(model, data, lp.get("link_b"), _xyz(lp.get("xyz_b")))
            res.extend((pa - pb)[:2])
        # both sides are sums of O(0.1 m) terms in double precision
        np.testing.assert_allclose(res, ac.constraints(qc), rtol=0, atol=1e-15)


def test_pinocchio_mass_matrix_and_bias_equal_the_classic_ones(xml_root, model):
    """CRBA / RNEA on the URDF vs the classic M(q) and velocity terms of f(q, q') (no gravity, no torque)."""
    data = model.createData()
    perm = _perm(model)
    rng = np.random.default_rng(11)
    for _ in range(5):
        qc = rng.uniform(-np.pi, np.pi, 7)
        vc = rng.uniform(-100.0, 100.0, 7)
        q = _pin_q(model, dict(zip(CLASSIC_ORDER, qc)))
        v = np.zeros(7)
        v[perm] = vc
        mp = pin.crba(model, data, q)
        mp = np.triu(mp) + np.triu(mp, 1).T
        m_classic = mp[np.ix_(perm, perm)]
        # entries are ~1e-5 kg m^2 built from 4-5 digit data; agreement must be to double rounding
        np.testing.assert_allclose(m_classic, ac.mass_matrix(qc), rtol=0, atol=1e-18)
        h = pin.rnea(model, data, q, v, np.zeros(7))[perm]
        f_vel = ac.forces(qc, vc) - ac.forces(qc, np.zeros(7))   # remove torque + spring, keep Coriolis
        np.testing.assert_allclose(-h, f_vel, rtol=1e-12, atol=1e-15)


def test_model_block_declares_the_classic_forces(xml_root):
    bb = xml_root.find("biobullet")
    assert _xyz(bb.find("gravity").get("xyz")).tolist() == [0.0, 0.0, 0.0]
    jt = bb.find("joint_torque")
    assert jt.get("joint") == "beta" and float(jt.get("value")) == ac.MOM
    assert bb.find("coordinates").get("names").split() == ["beta"]
    assert all(float(e.get("velocity")) == 0.0 for e in bb.findall("initial"))
