"""Guarantees of the bridge in a user's own loop that PyBullet habits used to break silently (bridgeharden):

* a reset between `apply()` and `stepSimulation()` leaves that one step off the rows — now named once, and the
  state after it put where a reset before `apply()` would have left it (the rate set recovered from the step: the
  shoulder's light links, which ran away, hold too);
* `changeDynamics` of a link's mass or inertia is followed (before: every later step off the rows);
* a floating base turned between `apply()` and the step is named as such;
* PyBullet loads exactly the text `load_model` checked (and the mesh files the load found), not the file as it is
  when the bridge is made.

The residuals are read from PyBullet's joint states and the model file written out here: the coupled chain's cubic
elbow = 0.1 + 0.6 s − 0.4 s² + 0.2 s³, the four-bar knee's loop gap from its joint origins (planar kinematics in
numpy), never through the bridge's own rows. The numbers before each fix are in the test docstrings."""
from __future__ import annotations

import math
import shutil
import sys
import warnings
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import numpy as np
import pytest

pybullet = pytest.importorskip("pybullet")

import biobullet  # noqa: E402
from biobullet.bridge import Bridge  # noqa: E402
from biobullet.bridge.outside import PROMISE, CouplingWarning  # noqa: E402

URDF = Path(__file__).resolve().parents[2] / "urdf"
BETWEEN = "between apply() and stepSimulation()"


def _joint_ids(client: int, body: int) -> dict[str, int]:
    return {pybullet.getJointInfo(body, j, physicsClientId=client)[1].decode(): j
            for j in range(pybullet.getNumJoints(body, physicsClientId=client))}


def _rotation_y(angle: float) -> np.ndarray:
    c, s = math.cos(angle), math.sin(angle)
    return np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])


def _residual(name: str, client: int, body: int) -> float:
    """The coupled chain's |elbow − f(shoulder)| (rad) or the four-bar's loop gap |C_anterior − C_shank| (m), from
    PyBullet's joint positions and the numbers of the file (fourbar_knee.urdf: joint origins, loop points)."""
    ids = _joint_ids(client, body)

    def q(joint: str) -> float:
        return pybullet.getJointState(body, ids[joint], physicsClientId=client)[0]

    if name == "coupled_chain.urdf":
        s = q("shoulder")
        return abs(q("elbow") - (0.1 + 0.6 * s - 0.4 * s * s + 0.2 * s ** 3))
    if name == "shoulder_rhythm.urdf":   # its linear rhythm, read from the file's <biobullet> block
        rows = ElementTree.parse(URDF / name).getroot().find("biobullet").findall("joint_function")
        return max(abs(q(row.get("joint")) - float(row.get("offset")) - sum(
            float(c) * q(n) for c, n in zip(row.get("coefficients").split(), row.get("inputs").split())))
            for row in rows)
    a, b, d = np.array([-0.014, 0.0, 0.024]), np.array([0.003, 0.0, 0.041]), np.array([0.002, 0.0, -0.075])
    on_anterior = b + _rotation_y(q("knee_B")) @ np.array([0.019, 0.0, -0.083])
    on_shank = a + _rotation_y(q("knee_A")) @ (d + _rotation_y(q("knee_D")) @ np.array([0.034, 0.0, 0.009]))
    return float(np.linalg.norm(on_anterior - on_shank))


@pytest.fixture
def client():
    cid = pybullet.connect(pybullet.DIRECT)
    yield cid
    pybullet.disconnect(cid)


def _run(client: int, name: str, driven: str, dt: float, steps: int, when: str, every: int = 60):
    """Drive `driven` by a sine through apply(); every `every` steps (from step 30) reset it by +0.1 rad with
    resetJointState (rate 0, PyBullet's default, then 1.5 rad/s, in turn), `when` = "before" apply() or "between"
    apply() and stepSimulation(). Returns (residual after each step, CouplingWarning messages)."""
    residuals = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        bridge = Bridge(URDF / name, client=client, dt=dt)
        joint = _joint_ids(client, bridge.body)[driven]
        for k in range(steps):
            reset = k % every == 30
            rate = 1.5 * (k // every % 2)
            if reset and when == "before":
                pybullet.resetJointState(bridge.body, joint, pybullet.getJointState(
                    bridge.body, joint, physicsClientId=client)[0] + 0.1, rate, physicsClientId=client)
            bridge.apply(generalized={driven: 2.0 * math.sin(6.0 * bridge.time)})
            if reset and when == "between":
                pybullet.resetJointState(bridge.body, joint, pybullet.getJointState(
                    bridge.body, joint, physicsClientId=client)[0] + 0.1, rate, physicsClientId=client)
            pybullet.stepSimulation(physicsClientId=client)
            residuals.append(_residual(name, client, bridge.body))
    return np.array(residuals), [str(w.message) for w in caught if issubclass(w.category, CouplingWarning)]


CASES = [("coupled_chain.urdf", "shoulder", 1 / 240, 120), ("coupled_chain.urdf", "shoulder", 1e-3, 250),
         ("shoulder_rhythm.urdf", "elevation", 1 / 240, 120), ("shoulder_rhythm.urdf", "elevation", 1e-3, 250),
         ("fourbar_knee.urdf", "knee_A", 1 / 240, 120), ("fourbar_knee.urdf", "knee_A", 1e-3, 250)]


@pytest.mark.parametrize("name, driven, dt, steps", CASES)
def test_a_reset_between_apply_and_step_is_named_once_and_put_back(client, name, driven, dt, steps):
    """Before: the step after the reset was off by 3.8e-2 rad (chain, 240 Hz), 7.0e-2 rad (chain, 1 kHz), 6.6e-3 m
    and 7.5e-3 m (four-bar), and nothing said so: the next apply() took it for a reset before apply(). The
    shoulder's 1e-6 kg links, held by the constraint torques, ran away (4.9e4 rad/s at 240 Hz) and the
    DivergenceError said "look for a force outside the bridge" (at 1 kHz after a warning that stepSimulation() ran
    twice, which it had not). Now one CouplingWarning names the joint and the remedy, the reset's step is put back
    where a reset before apply() would have left it (the rate set recovered from the step), and every other step
    holds the promise."""
    residuals, said = _run(client, name, driven, dt, steps, "between")
    resets = [k for k in range(steps) if k % 60 == 30]
    assert len(said) == 1 and BETWEEN in said[0] and repr(driven) in said[0] and "before apply()" in said[0], said
    assert np.all(residuals[resets] > PROMISE)   # the step that ran with the torques of the state before the reset
    assert np.delete(residuals, resets).max() <= PROMISE


@pytest.mark.parametrize("name, driven, dt, steps", CASES)
def test_a_reset_before_apply_holds_and_stays_silent(client, name, driven, dt, steps):
    """The habit that works: a reset before apply() — no warning (the rates of the joints not reset are exactly
    the step's prediction, which tells the two apart), and every step holds."""
    residuals, said = _run(client, name, driven, dt, steps, "before")
    assert said == [] and residuals.max() <= PROMISE


def _frame_distances(client: int, body: int) -> dict[str, float]:
    """|child frame − parent frame| (m) of every joint of the body PyBullet loaded (its URDF link frames)."""
    frames = {}
    base = pybullet.getBasePositionAndOrientation(body, physicsClientId=client)[0]
    local = pybullet.getDynamicsInfo(body, -1, physicsClientId=client)[3]
    frames[pybullet.getBodyInfo(body, physicsClientId=client)[0].decode()] = np.subtract(base, local)
    out = {}
    for j in range(pybullet.getNumJoints(body, physicsClientId=client)):
        info = pybullet.getJointInfo(body, j, physicsClientId=client)
        frames[info[12].decode()] = np.array(pybullet.getLinkState(body, j, computeForwardKinematics=1,
                                                                  physicsClientId=client)[4])
        parent = info[16]
        parent_name = (pybullet.getBodyInfo(body, physicsClientId=client)[0] if parent < 0
                       else pybullet.getJointInfo(body, parent, physicsClientId=client)[12]).decode()
        out[info[1].decode()] = float(np.linalg.norm(frames[info[12].decode()] - frames[parent_name]))
    return out


def test_the_file_replaced_after_load_model_is_not_what_pybullet_loads(client, tmp_path):
    """load_model checks a file; a file put in its place before Bridge(model) was loaded by PyBullet unchecked (here
    the elbow 3 m below the shoulder instead of 0.3 m, and a link of 1e6 kg: another robot, which the bridge ran
    with the first file's dynamics). Now PyBullet reads the text that was checked: the joint frames are the checked
    file's (0.3 m and 0.25 m apart at rest)."""
    path = tmp_path / "chain.urdf"
    shutil.copy(URDF / "coupled_chain.urdf", path)
    model = biobullet.load_model(path)
    text = path.read_text()
    path.write_text(text.replace('<origin xyz="0 0 -0.3"', '<origin xyz="0 0 -3.0"')
                        .replace('<mass value="1.5"/>', '<mass value="1e6"/>'))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        bridge = Bridge(model, client=client)
    bridge.reset_tree(np.zeros(3), np.zeros(3))
    distances = _frame_distances(client, bridge.body)
    # (getLinkState reports float32 frames)
    assert distances["elbow"] == pytest.approx(0.3, abs=1e-6) and distances["wrist"] == pytest.approx(0.25, abs=1e-6)
    assert not list(tmp_path.glob("*biobullet*"))   # nothing written beside the file


def _box_mesh(path: Path, half: float) -> None:
    corners = [(x * half, y * half, z * half) for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)]
    faces = [(1, 3, 4, 2), (5, 6, 8, 7), (1, 2, 6, 5), (3, 7, 8, 4), (1, 5, 7, 3), (2, 4, 8, 6)]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"v {x:g} {y:g} {z:g}\n" for x, y, z in corners)
                    + "".join(f"f {a} {b} {c}\nf {a} {c} {d}\n" for a, b, c, d in faces))


def test_pybullet_reads_the_mesh_the_load_checked_not_one_from_the_working_directory(client, tmp_path, monkeypatch):
    """A relative `<mesh filename>` names the file next to the model (`model.meshes.find_mesh_file`, which the load
    checks); PyBullet 3.2.7 tries the name relative to the working directory first. Before, a `meshes/box.obj` in
    the working directory was the collision shape (a 2 m box instead of the checked 0.2 m one: measured by its
    AABB). Now the bridge hands PyBullet the checked file's absolute path."""
    folder = tmp_path / "model"
    _box_mesh(folder / "meshes" / "box.obj", 0.1)
    _box_mesh(tmp_path / "elsewhere" / "meshes" / "box.obj", 1.0)
    text = (URDF / "coupled_chain.urdf").read_text().replace(
        '<link name="distal">',
        '<link name="distal">\n    <collision><geometry><mesh filename="meshes/box.obj"/></geometry></collision>')
    (folder / "chain.urdf").write_text(text)
    model = biobullet.load_model(folder / "chain.urdf")
    monkeypatch.chdir(tmp_path / "elsewhere")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        bridge = Bridge(model, client=client)
    bridge.reset_tree(np.zeros(3), np.zeros(3))   # (the box's AABB unrotated)
    low, high = pybullet.getAABB(bridge.body, _joint_ids(client, bridge.body)["wrist"], physicsClientId=client)
    assert np.subtract(high, low).max() == pytest.approx(0.2, abs=0.01)   # PyBullet's margin: a few mm


@pytest.mark.parametrize("name, driven, dt", [("coupled_chain.urdf", "shoulder", 1 / 240),
                                              ("coupled_chain.urdf", "shoulder", 1e-3),
                                              ("fourbar_knee.urdf", "knee_A", 1 / 240)])
@pytest.mark.parametrize("change", ["mass", "localInertiaDiagonal"])
def test_a_mass_or_inertia_changed_mid_run_is_followed(client, name, driven, dt, change):
    """changeDynamics(mass=1.5 m) or (localInertiaDiagonal=2 I) on the last two links after the bridge was made:
    the bridge's M and h kept the file's inertias, so every later step left the rows (chain 240 Hz: 2.5e-3 rad after
    every step; four-bar at 240 Hz with the mass: a DivergenceError after 56 steps), named once and projected back
    each time. Now the step after the change is named once and the bridge takes PyBullet's new inertias: every later
    step holds."""
    residuals, said = [], []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        bridge = Bridge(URDF / name, client=client, dt=dt)
        links = list(range(pybullet.getNumJoints(bridge.body, physicsClientId=client)))[-2:]
        for k in range(120):
            if k == 30:
                for link in links:
                    info = pybullet.getDynamicsInfo(bridge.body, link, physicsClientId=client)
                    value = {"mass": 1.5 * info[0], "localInertiaDiagonal": [2.0 * v for v in info[2]]}[change]
                    pybullet.changeDynamics(bridge.body, link, physicsClientId=client, **{change: value})
            bridge.apply(generalized={driven: 2.0 * math.sin(6.0 * bridge.time)})
            pybullet.stepSimulation(physicsClientId=client)
            residuals.append(_residual(name, client, bridge.body))
        said = [str(w.message) for w in caught if issubclass(w.category, CouplingWarning)]
    residuals = np.array(residuals)
    assert residuals[:30].max() <= PROMISE and residuals[31:].max() <= PROMISE
    assert len(said) <= 1 and (residuals[30] <= PROMISE) == (said == [])
    assert all("mass or inertia of link" in m and "follows it" in m for m in said)


def test_a_floating_base_turned_between_apply_and_step_is_named(client):
    """resetBasePositionAndOrientation of a floating base between apply() and stepSimulation() turns gravity in the
    base frame under that step's torques (1.7e-3 rad off the chain's elbow at 240 Hz); the one warning named a
    velocity reset (resetBaseVelocity / resetJointState), not the call made. It now names it; the next steps hold."""
    model = biobullet.load_model(URDF / "coupled_chain.urdf", floating_base=True)
    residuals = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        bridge = Bridge(model, client=client, dt=1 / 240)
        for k in range(60):
            bridge.apply(generalized={"shoulder": 2.0 * math.sin(6.0 * bridge.time)})
            if k == 30:
                position = pybullet.getBasePositionAndOrientation(bridge.body, physicsClientId=client)[0]
                pybullet.resetBasePositionAndOrientation(bridge.body, position, pybullet.getQuaternionFromEuler(
                    [0.3, 0.2, 0.1]), physicsClientId=client)
            pybullet.stepSimulation(physicsClientId=client)
            residuals.append(_residual("coupled_chain.urdf", client, bridge.body))
    said = [str(w.message) for w in caught if issubclass(w.category, CouplingWarning)]
    assert len(said) == 1 and "resetBasePositionAndOrientation" in said[0] and BETWEEN in said[0]
    assert residuals[30] > PROMISE and np.delete(residuals, 30).max() <= PROMISE


@pytest.mark.parametrize("dt", [1 / 240, 1e-3])
def test_a_reset_before_apply_on_a_floating_spherical_arm_is_no_frame_skip(client, dt, tmp_path):
    """The floating arm with a spherical shoulder and pronation = f(elbow): a 0.1 rad resetJointState of the elbow
    before apply() was named "stepSimulation() ran 19 times since the last apply()" (255 times at 1 kHz) — one
    joint's jump fits any number of steps. A joint that moved by one step without a jump rules a frame skip out:
    now nothing is said, and pronation = 0.1 + 0.5 elbow − 0.3 elbow² (`tests/spherical_arms.py`) holds after every
    step, read from PyBullet's joint states."""
    sys.path.insert(0, str(URDF.parent / "tests"))
    from spherical_arms import COUPLED
    (tmp_path / "arm.urdf").write_text(COUPLED)
    model = biobullet.load_model(tmp_path / "arm.urdf", floating_base=True)
    residuals = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        bridge = Bridge(model, client=client, dt=dt)
        elbow = bridge.joint_index["elbow"]
        for k in range(120):
            if k % 60 == 30:
                pybullet.resetJointState(bridge.body, elbow, pybullet.getJointState(
                    bridge.body, elbow, physicsClientId=client)[0] + 0.1, physicsClientId=client)
            bridge.apply(generalized={"elbow": math.sin(6.0 * bridge.time)})
            pybullet.stepSimulation(physicsClientId=client)
            elbow_angle, pronation = (pybullet.getJointState(bridge.body, bridge.joint_index[name],
                                                             physicsClientId=client)[0] for name in ("elbow", "pronation"))
            residuals.append(abs(pronation - (0.1 + 0.5 * elbow_angle - 0.3 * elbow_angle ** 2)))
    assert [str(w.message) for w in caught if issubclass(w.category, CouplingWarning)] == []
    assert max(residuals) <= PROMISE


def test_a_reset_deep_beyond_a_urdf_limit_is_named_where_the_step_cannot_hold_it():
    """The shoulder model's elbow has <limit lower="0">, a stop f = k p² (forces.elements.urdf_limit_stops). A
    `bridge.reset(elbow_flexion=-0.29)` at 240 Hz put the elbow where that stop's stiffness 2 k p makes PyBullet's
    explicit step unstable: the run diverged after 12 steps (elbow at 7e4 rad/s) and the DivergenceError blamed "a
    force outside the bridge". Now the reset says so, once, naming the joint and the limit — and the divergence it
    announces happens (PyBullet's own joint states); at 1 kHz, or just inside the stable range, nothing is said."""
    from biobullet.bridge.lifecycle import BridgeWarning, DivergenceError
    model = biobullet.load_model(URDF / "shoulder_rhythm.urdf")

    def reset(dt: float, elbow: float) -> tuple[Bridge, int, list[str]]:
        client = pybullet.connect(pybullet.DIRECT)
        pybullet.setGravity(*model.gravity, physicsClientId=client)
        bridge = Bridge(model, client=client, dt=dt)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            bridge.reset(elbow_flexion=elbow)
        return bridge, client, [str(w.message) for w in caught if issubclass(w.category, BridgeWarning)]

    for dt, elbow in ((1 / 240, -0.02), (1e-3, -0.29)):
        _, client, said = reset(dt, elbow)
        pybullet.disconnect(client)
        assert not said, (dt, elbow, said)
    bridge, client, said = reset(1 / 240, -0.29)
    try:
        assert len(said) == 1 and "'elbow_flexion'" in said[0] and "beyond the lower limit 0" in said[0], said
        elbow = _joint_ids(client, bridge.body)["elbow_flexion"]
        speeds = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(DivergenceError):
                for _ in range(60):
                    bridge.apply()
                    pybullet.stepSimulation(physicsClientId=client)
                    speeds.append(abs(pybullet.getJointState(bridge.body, elbow, physicsClientId=client)[1]))
        assert max(speeds) > 1e4   # PyBullet's own elbow rate: the divergence the warning announced
    finally:
        pybullet.disconnect(client)
