"""The bundled models in urdf/ load unchanged in PyBullet and Pinocchio, are physically valid, and the
shoulder rhythms in them are the published ones.

Only the four files named below are tested here (other bundled files have their own tests).
Independent references used: PyBullet's and Pinocchio's own URDF parsers; the de Groot & Brand (2001)
regression written out below in DEGREES exactly as published (digest of paper 000 / DAS3 code); the
Holzbaur et al. (2005) slopes; de Leva (1996) Table 4 fractions. The XML is read with xml.etree only,
not with biobullet's parser, so these checks do not depend on the code under test.
"""
from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

pybullet = pytest.importorskip("pybullet")
pin = pytest.importorskip("pinocchio")

URDF_DIR = Path(__file__).resolve().parents[2] / "urdf"

# name -> (floating base, PyBullet joints incl. fixed, Pinocchio nq, nv)
MODELS = {
    "arm7.urdf": (False, 8, 7, 7),
    "humanoid.urdf": (True, 19, 7 + 19, 6 + 19),
    "shoulder_rhythm.urdf": (False, 15, 14, 14),
    "shoulder_simplified.urdf": (False, 15, 14, 14),
}
SHOULDER_FILES = ("shoulder_rhythm.urdf", "shoulder_simplified.urdf")
COORDS = ("plane_of_elevation", "elevation", "axial_rotation", "elbow_flexion")


# ----------------------------------------------------------------------------- XML helpers
def _root(name: str) -> ET.Element:
    return ET.parse(URDF_DIR / name).getroot()


def _inertia(link: ET.Element) -> tuple[float, np.ndarray]:
    inertial = link.find("inertial")
    assert inertial is not None, f"link {link.get('name')} has no <inertial>"
    a = {k: float(v) for k, v in inertial.find("inertia").attrib.items()}
    tensor = np.array([[a["ixx"], a["ixy"], a["ixz"]],
                       [a["ixy"], a["iyy"], a["iyz"]],
                       [a["ixz"], a["iyz"], a["izz"]]])
    return float(inertial.find("mass").get("value")), tensor


def _floats(text: str) -> np.ndarray:
    return np.array([float(x) for x in text.split()])


def _base_type(root: ET.Element) -> str:
    base = root.find("biobullet/base")
    return "fixed" if base is None else base.get("type", "fixed")


def _functions(root: ET.Element) -> dict[str, ET.Element]:
    return {e.get("joint"): e for e in root.findall("biobullet/joint_function")}


def _eval_linear(elem: ET.Element, q: dict[str, float]) -> float:
    assert elem.get("type") == "linear"
    inputs = elem.get("inputs").split()
    coefficients = _floats(elem.get("coefficients"))
    return float(elem.get("offset", "0")) + float(sum(c * q[i] for c, i in zip(coefficients, inputs)))


# ----------------------------------------------------------------------------- loading
@pytest.mark.parametrize("name", sorted(MODELS))
def test_loads_in_pybullet(name):
    floating, n_joints, _, _ = MODELS[name]
    root = _root(name)
    assert (_base_type(root) == "floating") == floating
    assert len(root.findall("joint")) == n_joints
    client = pybullet.connect(pybullet.DIRECT)
    try:
        body = pybullet.loadURDF(str(URDF_DIR / name), useFixedBase=not floating,
                                 flags=pybullet.URDF_USE_INERTIA_FROM_FILE, physicsClientId=client)
        assert pybullet.getNumJoints(body, physicsClientId=client) == n_joints
        names = {pybullet.getJointInfo(body, j, physicsClientId=client)[1].decode() for j in range(n_joints)}
        assert names == {j.get("name") for j in root.findall("joint")}
        # PyBullet silently zeroes an inertia it finds invalid ("Bad inertia tensor properties"):
        # every link must keep a non-zero inertia and the mass from the file.
        masses = {l.get("name"): _inertia(l)[0] for l in root.findall("link")}
        for j in range(n_joints):
            info = pybullet.getDynamicsInfo(body, j, physicsClientId=client)
            child = pybullet.getJointInfo(body, j, physicsClientId=client)[12].decode()
            assert info[0] == pytest.approx(masses[child], rel=1e-12)
            assert min(info[2]) > 0.0, f"PyBullet zeroed the inertia of {child}"
    finally:
        pybullet.disconnect(client)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_loads_in_pinocchio(name):
    floating, _, nq, nv = MODELS[name]
    path = str(URDF_DIR / name)
    model = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer()) if floating else pin.buildModelFromUrdf(path)
    assert (model.nq, model.nv) == (nq, nv)
    # Fixed joints are merged, not dropped: the total mass is the sum over the file's links
    # (minus the root link of a fixed-base model, which Pinocchio attaches to the universe).
    root = _root(name)
    masses = {l.get("name"): _inertia(l)[0] for l in root.findall("link")}
    children = {j.find("child").get("link") for j in root.findall("joint")}
    (base,) = set(masses) - children
    expected = sum(masses.values()) - (0.0 if floating else masses[base])
    assert pin.computeTotalMass(model) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_every_inertia_is_physical(name):
    for link in _root(name).findall("link"):
        mass, tensor = _inertia(link)
        assert mass > 0.0
        principal = np.linalg.eigvalsh(tensor)      # ascending
        assert principal[0] > 0.0, f"{link.get('name')}: not positive definite {principal}"
        # Triangle inequality of the principal moments (only the smallest two vs the largest can fail).
        # Relative slack 1e-12 covers the 10-significant-digit rounding of a tensor that satisfies it.
        assert principal[0] + principal[1] >= principal[2] * (1.0 - 1e-12), (link.get("name"), principal)


# ----------------------------------------------------------------------------- model features
def test_arm7_exercises_what_it_claims():
    root = _root("arm7.urdf")
    revolute = [j for j in root.findall("joint") if j.get("type") == "revolute"]
    assert len(revolute) == 7 and len([j for j in root.findall("joint") if j.get("type") == "fixed"]) == 1
    unaligned = [j for j in revolute if np.count_nonzero(_floats(j.find("axis").get("xyz"))) > 1]
    assert len(unaligned) >= 2
    assert all(np.any(_floats(j.find("origin").get("rpy")) != 0.0) for j in root.findall("joint"))
    for link in root.findall("link"):
        _, tensor = _inertia(link)
        assert np.all(tensor[np.triu_indices(3, 1)] != 0.0), link.get("name")
        assert np.linalg.norm(_floats(link.find("inertial/origin").get("xyz"))) > 0.0
    for j in revolute:
        limit = j.find("limit")
        assert limit is not None and float(limit.get("lower")) < float(limit.get("upper"))
    assert _floats(root.find("biobullet/gravity").get("xyz")).tolist() == [0.0, 0.0, -9.81]


def test_humanoid_exercises_what_it_claims():
    root = _root("humanoid.urdf")
    one_dof = [j for j in root.findall("joint") if j.get("type") in ("revolute", "prismatic", "continuous")]
    assert len(one_dof) >= 12
    prismatic = {j.get("name") for j in one_dof if j.get("type") == "prismatic"}
    assert "spine_stretch" in prismatic and len(prismatic) >= 2
    for link in root.findall("link"):
        _, tensor = _inertia(link)
        assert np.count_nonzero(tensor[np.triu_indices(3, 1)]) == 3, link.get("name")


# ----------------------------------------------------------------------------- shoulder rhythms
# de Groot & Brand (2001), degrees, as published (and as in the DAS3 code): angle = a + b*Hy + c*Hz + d*rest
DEGROOT_DEG = {
    "Cy": lambda hy, hz: -4.983 + 0.120 * hy - 0.242 * hz + 0.851 * (-28.573),
    "Cz": lambda hy, hz: 3.917 - 0.046 * hy + 0.123 * hz + 0.493 * 11.680,
    "Sy": lambda hy, hz: -1.203 + 0.140 * hy - 0.049 * hz + 0.901 * 32.047,
    "Sz": lambda hy, hz: 3.095 - 0.079 * hy + 0.396 * hz + 0.414 * 10.669,
    "Sx": lambda hy, hz: 0.659 - 0.028 * hy + 0.184 * hz + 0.886 * (-10.320),
}
HOLZBAUR_SLOPE = {"Cy": -0.242, "Cz": 0.1025, "Sy": -0.049, "Sz": 0.396, "Sx": 0.178}   # rad/rad of elevation
JOINT = {"Cy": "sc_y", "Cz": "sc_z", "Sy": "ac_y", "Sz": "ac_z", "Sx": "ac_x"}
UNDO = {"Cy": "unrot_clav_y", "Cz": "unrot_clav_z", "Sy": "unrot_scap_y", "Sz": "unrot_scap_z",
        "Sx": "unrot_scap_x"}
POINTS_DEG = [(0.0, 0.0), (30.0, 50.0), (-20.0, 90.0), (90.0, 120.0), (45.0, 10.0)]


def test_de_groot_regression_in_radians_matches_published_degrees():
    functions = _functions(_root("shoulder_rhythm.urdf"))
    for hy, hz in POINTS_DEG:
        q = {"plane_of_elevation": math.radians(hy), "elevation": math.radians(hz)}
        for key, published in DEGROOT_DEG.items():
            elem = functions[JOINT[key]]
            assert elem.get("inputs").split() == ["plane_of_elevation", "elevation"]
            # 1e-9 deg: far below any unit slip (a missing pi/180 on the offsets is ~1e3 deg off) and far
            # above float round-off (~1e-14 deg) of offsets written with 17 significant digits.
            assert math.degrees(_eval_linear(elem, q)) == pytest.approx(published(hy, hz), abs=1e-9), key
            # the counter-rotation joint undoes exactly the same angle
            assert _eval_linear(functions[UNDO[key]], q) == -_eval_linear(elem, q)


def test_holzbaur_rhythm_depends_on_elevation_only():
    functions = _functions(_root("shoulder_simplified.urdf"))
    assert set(functions) == set(JOINT.values()) | set(UNDO.values())
    for key, slope in HOLZBAUR_SLOPE.items():
        elem = functions[JOINT[key]]
        assert elem.get("type") == "linear" and elem.get("inputs").split() == ["elevation"]
        assert float(elem.get("coefficients")) == slope
        # Rest posture shared with the de Groot model: the regression at Hy = Hz = 0 (see urdf/README.md).
        assert math.degrees(float(elem.get("offset"))) == pytest.approx(DEGROOT_DEG[key](0.0, 0.0), abs=1e-9)
        undo = functions[UNDO[key]]
        assert undo.get("inputs").split() == ["elevation"]
        assert float(undo.get("coefficients")) == -slope and float(undo.get("offset")) == -float(elem.get("offset"))


@pytest.mark.parametrize("name", SHOULDER_FILES)
def test_shoulder_coordinates_and_skeleton(name):
    root = _root(name)
    assert root.find("biobullet/coordinates").get("names").split() == list(COORDS)
    g = _floats(root.find("biobullet/gravity").get("xyz"))
    assert g.tolist() == [0.0, -9.81, 0.0]
    joints = [j.get("name") for j in root.findall("joint") if j.get("type") == "revolute"]
    assert set(joints) == set(COORDS) | set(_functions(root))     # every joint independent or driven
    initial = {e.get("joint"): float(e.get("position")) for e in root.findall("biobullet/initial")}
    assert initial["elevation"] == pytest.approx(math.radians(50.0), abs=1e-12)
    assert initial["axial_rotation"] == pytest.approx(math.radians(-30.0), abs=1e-12)
    # "identical skeleton": same links, joints, origins, axes and inertias in both files
    if name == "shoulder_simplified.urdf":
        other = _root("shoulder_rhythm.urdf")
        strip = lambda r: [ET.tostring(e) for e in r if e.tag in ("link", "joint")]
        assert strip(root) == strip(other)


# ISB frame used in the files: x forward, y up, z right. de Groot frame: X lateral(=z), Y up(=y), Z posterior(=-x).
# Columns of P are the de Groot axes in ISB coordinates, so R_isb = P R_degroot P^T.
P = np.array([[0.0, 0.0, -1.0], [0.0, 1.0, 0.0], [1.0, 0.0, 0.0]])


def _rot(axis: str, a: float) -> np.ndarray:
    c, s = math.cos(a), math.sin(a)
    return {"x": np.array([[1, 0, 0], [0, c, -s], [0, s, c]]),
            "y": np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]]),
            "z": np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]])}[axis]


@pytest.mark.parametrize("name", SHOULDER_FILES)
def test_shoulder_kinematics_are_thorax_referenced_euler_angles(name):
    """Pinocchio forward kinematics with θ from the file's functions: the clavicle, scapula and humerus
    orientations are the de Groot YZ(X) / YZX / YZY Euler angles with respect to the thorax."""
    root = _root(name)
    functions = _functions(root)
    model = pin.buildModelFromUrdf(str(URDF_DIR / name))
    data = model.createData()
    for hy_d, hz_d, hyy_d in [(0.0, 0.0, 0.0), (30.0, 50.0, -30.0), (90.0, 90.0, 20.0), (-20.0, 120.0, 45.0)]:
        coords = {"plane_of_elevation": math.radians(hy_d), "elevation": math.radians(hz_d),
                  "axial_rotation": math.radians(hyy_d), "elbow_flexion": 0.3}
        theta = {j: _eval_linear(e, coords) for j, e in functions.items()} | coords
        q = np.zeros(model.nq)
        for jid in range(1, model.njoints):
            q[model.joints[jid].idx_q] = theta[model.names[jid]]
        pin.framesForwardKinematics(model, data, q)
        R = lambda frame: data.oMf[model.getFrameId(frame)].rotation
        pos = lambda frame: data.oMf[model.getFrameId(frame)].translation
        a = {k: theta[JOINT[k]] for k in JOINT}
        expected = {
            "clavicle": _rot("y", a["Cy"]) @ _rot("z", a["Cz"]),
            "scapula": _rot("y", a["Sy"]) @ _rot("z", a["Sz"]) @ _rot("x", a["Sx"]),
            "humerus": _rot("y", coords["plane_of_elevation"]) @ _rot("z", coords["elevation"])
            @ _rot("y", coords["axial_rotation"]),
        }
        for frame, r_degroot in expected.items():
            # 1e-12: exact composition of rotations, only float round-off
            np.testing.assert_allclose(R(frame), P @ r_degroot @ P.T, atol=1e-12, err_msg=f"{frame} {hy_d} {hz_d}")
        # anatomical sanity of the sign conventions: humerus long axis (-y in its frame)
        long_axis = pos("forearm") - pos("humerus")
        length = np.linalg.norm(long_axis)
        direction = {  # expected direction of shoulder -> elbow in the thorax frame (x fwd, y up, z right)
            (0.0, 0.0): np.array([0.0, -1.0, 0.0]),            # arm hanging
            (90.0, 90.0): np.array([1.0, 0.0, 0.0]),           # forward flexion to horizontal
        }.get((hy_d, hz_d))
        if direction is not None:
            np.testing.assert_allclose(long_axis / length, direction, atol=1e-12)
    # abduction in the plane of elevation 0 moves the elbow laterally (+z) and up
    q = np.zeros(model.nq)
    coords = {"plane_of_elevation": 0.0, "elevation": math.radians(90.0), "axial_rotation": 0.0, "elbow_flexion": 0.0}
    theta = {j: _eval_linear(e, coords) for j, e in functions.items()} | coords
    for jid in range(1, model.njoints):
        q[model.joints[jid].idx_q] = theta[model.names[jid]]
    pin.framesForwardKinematics(model, data, q)
    v = data.oMf[model.getFrameId("forearm")].translation - data.oMf[model.getFrameId("humerus")].translation
    np.testing.assert_allclose(v / np.linalg.norm(v), [0.0, 0.0, 1.0], atol=1e-12)


# ----------------------------------------------------------------------------- segment data vs sources
# de Leva (1996) Table 4, males: reference length [m] (stature 1.741 m), mass fraction, COM fraction from the
# proximal joint, radii of gyration (sagittal, transverse, longitudinal) as fractions of length.
DE_LEVA = {"humerus": (0.2817, 0.0271, 0.5772, 0.285, 0.269, 0.158),
           "forearm": (0.2689, 0.0162, 0.4574, 0.276, 0.265, 0.121),
           "hand": (0.0862, 0.0061, 0.7900, 0.628, 0.513, 0.401)}
# Holzbaur et al. (2005) / Stanford VA upper-limb model: mass, principal moments (xx, yy, zz), COM relative to
# the proximal joint (SC for the clavicle, AC for the scapula) in the model's frames.
HOLZBAUR_SEGMENTS = {
    "clavicle": (0.156, (0.00024259, 0.00025526, 0.00004442), (-0.011096, 0.0063723, 0.054168)),
    "scapula": (0.70396, (0.0012429, 0.0011504, 0.0013651),
                (-0.054694 + 0.01357, -0.035032 - 0.00011, -0.043734 + 0.01523)),
}


@pytest.mark.parametrize("name", SHOULDER_FILES)
def test_shoulder_segment_data_follow_cited_sources(name):
    links = {l.get("name"): l for l in _root(name).findall("link")}
    joints = {j.get("name"): j for j in _root(name).findall("joint")}
    for seg, (l_ref, mass_f, com_f, r_sag, r_trans, r_long) in DE_LEVA.items():
        length = l_ref * 1.75 / 1.741
        mass, tensor = _inertia(links[seg])
        assert mass == pytest.approx(mass_f * 75.0, rel=1e-9)
        com = _floats(links[seg].find("inertial/origin").get("xyz"))
        # 1e-9 relative: values are written with 10 significant digits
        np.testing.assert_allclose(com, [0.0, -com_f * length, 0.0], rtol=1e-9, atol=1e-12)
        expected = mass * (np.array([r_trans, r_long, r_sag]) * length) ** 2     # about x, y (long), z
        np.testing.assert_allclose(np.diag(tensor), expected, rtol=1e-9)
    distal = {"humerus": "elbow_flexion", "forearm": "wrist_fixed"}
    for seg, jname in distal.items():
        origin = _floats(joints[jname].find("origin").get("xyz"))
        np.testing.assert_allclose(origin, [0.0, -DE_LEVA[seg][0] * 1.75 / 1.741, 0.0], rtol=1e-9, atol=1e-12)
    # Clavicle and scapula are expressed in frames rotated from Holzbaur's by the rest posture, so compare
    # rotation invariants: mass, principal moments, COM distance from the proximal joint.
    for seg, (m_ref, moments, com_ref) in HOLZBAUR_SEGMENTS.items():
        mass, tensor = _inertia(links[seg])
        assert mass == m_ref
        np.testing.assert_allclose(np.linalg.eigvalsh(tensor), sorted(moments), rtol=1e-8)
        com = _floats(links[seg].find("inertial/origin").get("xyz"))
        assert np.linalg.norm(com) == pytest.approx(np.linalg.norm(com_ref), rel=1e-8)
