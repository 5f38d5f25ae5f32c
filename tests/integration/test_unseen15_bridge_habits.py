"""Habits of a user who already has PyBullet code, probed on the bridge in the user's own loop (hunt12), beyond
test_unseen6_bridge_habits.py and test_unseen12_bridge_guarantees.py:

* a body of the user's loaded with `globalScaling` is refused also where only its centres of mass or its spherical
  joints' frames show the scale (before: a pendulum hinged at its base frame was taken and simulated another robot);
* a body loaded with `useMaximalCoordinates=True` is named as such (before: "URDF_MERGE_FIXED_LINKS?");
* a PyBullet motor on a spherical joint is named as a motor on that joint (before: "a force outside the solve").

Every check is against something the bridge does not compute: PyBullet's own stored numbers, the file's numbers
written out here, and the coupling's own polynomial evaluated on PyBullet's joint states."""
from __future__ import annotations

import math
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

pybullet = pytest.importorskip("pybullet")

import biobullet  # noqa: E402
from biobullet.bridge import Bridge  # noqa: E402
from biobullet.bridge.lifecycle import DivergenceError  # noqa: E402
from biobullet.bridge.outside import PROMISE, CouplingWarning  # noqa: E402
from biobullet.core.errors import ModelError  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
URDF = REPO / "urdf"
sys.path.insert(0, str(REPO / "tests"))
from spherical_arms import COUPLED, PENDULUM as SPHERICAL_PENDULUM  # noqa: E402

# a pendulum hinged at its base link's frame (joint origin 0), its bob's centre of mass 0.5 m out: no joint frame
# is away from its parent's, so the scale shows in the centres of mass alone
PENDULUM = """<?xml version="1.0"?>
<robot name="pendulum">
  <link name="base"><inertial><mass value="1"/><inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/>
    </inertial></link>
  <joint name="hinge" type="continuous"><parent link="base"/><child link="bob"/><axis xyz="0 1 0"/></joint>
  <link name="bob"><inertial><origin xyz="0.5 0 0"/><mass value="2"/>
    <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial></link>
  <biobullet version="1"><gravity xyz="0 0 -9.81"/></biobullet>
</robot>
"""


@pytest.fixture
def client():
    cid = pybullet.connect(pybullet.DIRECT)
    pybullet.setGravity(0.0, 0.0, -9.81, physicsClientId=cid)   # the models' <gravity>: no BridgeWarning
    yield cid
    pybullet.disconnect(cid)


@pytest.mark.parametrize("name, text, link, file_com, words", [
    ("pendulum", PENDULUM, "bob", (0.5, 0.0, 0.0), "centre of mass of link 'bob'"),
    ("spherical_pendulum", SPHERICAL_PENDULUM, "bob", (0.03, -0.02, -0.5), "frames of joint 'ball'")])
def test_a_body_loaded_with_global_scaling_is_refused_where_no_hinge_frame_shows_it(client, tmp_path, name, text,
                                                                                  link, file_com, words):
    """`check_user_body` measured the scale on revolute joints away from their parent's frame only. A pendulum
    hinged at its base frame (joint origin 0) and a spherical pendulum (its one joint spherical) loaded with
    globalScaling=2 were taken silently: the pendulum swung to 0.44 rad in 0.3 s at dt = 1 ms where the reference
    engine and the unscaled body reach 0.84 — PyBullet's stored COM is twice the file's (checked here on PyBullet's
    own getDynamicsInfo). Now one ModelError names globalScaling and where it shows."""
    path = tmp_path / f"{name}.urdf"
    path.write_text(text)
    model = biobullet.load_model(path)
    body = pybullet.loadURDF(str(path), useFixedBase=True, globalScaling=2.0, flags=pybullet.URDF_USE_INERTIA_FROM_FILE,
                             physicsClientId=client)
    stored = pybullet.getDynamicsInfo(body, 0, physicsClientId=client)[3]
    np.testing.assert_allclose(stored, 2.0 * np.array(file_com), atol=1e-12)   # what globalScaling did
    with pytest.raises(ModelError, match="globalScaling") as error:
        Bridge(model, client, body_id=body, dt=1e-3)
    assert words in str(error.value) and "body_id" in str(error.value)
    # the same file loaded without the scale is taken (the check is not a refusal of the file)
    plain = pybullet.loadURDF(str(path), useFixedBase=True, basePosition=[2.0, 0.0, 0.0],
                              flags=pybullet.URDF_USE_INERTIA_FROM_FILE, physicsClientId=client)
    Bridge(model, client, body_id=plain, dt=1e-3).close()


@pytest.mark.parametrize("name", ["coupled_chain.urdf", "fourbar_knee.urdf"])
def test_a_body_with_maximal_coordinates_is_named_as_such(client, name):
    """useMaximalCoordinates=True makes PyBullet's body a set of free rigid bodies without joints (getNumJoints 0):
    the error said "no links base, upper, … (loaded with URDF_MERGE_FIXED_LINKS, or from another file?)"."""
    body = pybullet.loadURDF(str(URDF / name), useFixedBase=True, useMaximalCoordinates=True,
                             flags=pybullet.URDF_USE_INERTIA_FROM_FILE, physicsClientId=client)
    assert pybullet.getNumJoints(body, physicsClientId=client) == 0
    with pytest.raises(ModelError, match="useMaximalCoordinates") as error:
        Bridge(biobullet.load_model(URDF / name), client, body_id=body)
    assert "MERGE_FIXED_LINKS" not in str(error.value)


def _pronation_residual(client: int, bridge: Bridge) -> float:
    """|pronation − (0.1 + 0.5 elbow − 0.3 elbow²)| (rad) of `tests/spherical_arms.py`'s COUPLED, from PyBullet."""
    elbow, pronation = (pybullet.getJointState(bridge.body, bridge.joint_index[name], physicsClientId=client)[0]
                        for name in ("elbow", "pronation"))
    return abs(pronation - (0.1 + 0.5 * elbow - 0.3 * elbow ** 2))


@pytest.mark.parametrize("floating", [False, True])
@pytest.mark.parametrize("call", ["single", "array"])
def test_a_pybullet_motor_on_a_spherical_joint_is_named_as_a_motor(client, tmp_path, floating, call):
    """setJointMotorControlMultiDof(Array)(POSITION_CONTROL) on the coupled arm's spherical shoulder: PyBullet's
    motor acts inside the step (1.9e-3 rad off pronation = f(elbow) at 240 Hz, read from PyBullet's joint states).
    The bridge projected it back but named "a force outside the bridge's solve" with the remedy apply(tau=) — the
    motor's appliedJointMotorTorque (getJointStatesMultiDof) was read for 1-DOF joints only. Now the warning names
    the motor and the spherical joint; the coupling is back on the rows after every apply()."""
    (tmp_path / "arm.urdf").write_text(COUPLED)
    model = biobullet.load_model(tmp_path / "arm.urdf", floating_base=floating)
    after_apply = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        bridge = Bridge(model, client, dt=1 / 240)
        shoulder = bridge.joint_index["shoulder"]
        target = [0.0, math.sin(0.2), 0.0, math.cos(0.2)]
        for k in range(60):
            if k == 10:
                if call == "single":
                    pybullet.setJointMotorControlMultiDof(bridge.body, shoulder, pybullet.POSITION_CONTROL,
                                                          targetPosition=target, force=[50.0] * 3,
                                                          physicsClientId=client)
                else:
                    pybullet.setJointMotorControlMultiDofArray(bridge.body, [shoulder], pybullet.POSITION_CONTROL,
                                                               targetPositions=[target], forces=[[50.0] * 3],
                                                               physicsClientId=client)
            bridge.apply()
            after_apply.append(_pronation_residual(client, bridge))
            pybullet.stepSimulation(physicsClientId=client)
    messages = [str(w.message) for w in caught if issubclass(w.category, CouplingWarning)]
    assert len(messages) == 1, messages
    assert "motor" in messages[0] and "spherical joint 'shoulder'" in messages[0], messages[0]
    assert "outside the bridge's solve" not in messages[0]
    assert max(after_apply) <= PROMISE


def _restore_run(client: int, name: str, driven: str, dt: float, steps: int, when: str):
    """Drive `driven` by a sine through apply(); saveState at step 20, restoreState at step 60 `when` = "before"
    apply() or "between" apply() and stepSimulation(). Returns (residuals after each step from PyBullet's joint
    states, CouplingWarning messages)."""
    from test_unseen12_bridge_guarantees import _residual
    residuals = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        bridge = Bridge(URDF / name, client=client, dt=dt)
        saved = None
        for k in range(steps):
            if k == 20:
                saved = pybullet.saveState(physicsClientId=client)
            if k == 60 and when == "before":
                pybullet.restoreState(saved, physicsClientId=client)
            bridge.apply(generalized={driven: 2.0 * math.sin(6.0 * bridge.time)})
            if k == 60 and when == "between":
                pybullet.restoreState(saved, physicsClientId=client)
            pybullet.stepSimulation(physicsClientId=client)
            residuals.append(_residual(name, client, bridge.body))
    return np.array(residuals), [str(w.message) for w in caught if issubclass(w.category, CouplingWarning)]


@pytest.mark.parametrize("name, driven", [("coupled_chain.urdf", "shoulder"), ("fourbar_knee.urdf", "knee_A")])
def test_restore_state_between_apply_and_step_is_named(client, name, driven):
    """restoreState between apply() and stepSimulation() (a rollout habit): the step runs from the restored state
    with the torques apply() computed for the state before it. Every joint jumps, so no joint is left whose rate
    the step predicted, and the watch took it for a reset before apply(): put back silently, though that step
    left the coupled chain 6.8e-5 rad and the four-bar 8.3e-5 m off their rows at 240 Hz (residuals from PyBullet's
    joint states). Now one CouplingWarning names it; every other step holds, and the same restore before apply()
    stays silent (the restored state is on the rows)."""
    residuals, messages = _restore_run(client, name, driven, 1 / 240, 120, "between")
    assert residuals[60] > 10 * PROMISE   # the step this habit cannot hold
    assert np.delete(residuals, 60).max() <= PROMISE
    assert len(messages) == 1 and "restoreState" in messages[0] and "between apply() and stepSimulation()" \
        in messages[0], messages
    residuals, messages = _restore_run(client, name, driven, 1 / 240, 120, "before")
    assert residuals.max() <= PROMISE and messages == []


def test_restore_state_between_apply_and_step_that_runs_away_names_it(client):
    """The shoulder's 1e-6 kg links, held by constraint torques, run away in that step (4.1e5 rad/s at 240 Hz):
    the DivergenceError blamed "a force outside the bridge"; it names the restore now."""
    with pytest.raises(DivergenceError, match="restoreState of every joint"):
        _restore_run(client, "shoulder_rhythm.urdf", "elevation", 1 / 240, 120, "between")


@pytest.mark.parametrize("name, driven, dt", [("coupled_chain.urdf", "shoulder", 1e-3),
                                              ("fourbar_knee.urdf", "knee_A", 1 / 240)])
@pytest.mark.parametrize("change", ["mass", "localInertiaDiagonal"])
def test_a_floating_bases_own_mass_or_inertia_changed_mid_run_is_followed(client, name, driven, dt, change):
    """changeDynamics(body, -1, ...) on a floating base's root link (PyBullet's base, link index −1). The bridge
    named it "followed from now on", but its own recursions skipped index −1 when they re-read PyBullet's stored
    inertias, so every later step was off: the floating four-bar 1.3e-2 m after every step (×1.5 mass), the
    floating coupled chain ran away (DivergenceError). (PyBullet's changeDynamics(mass=) of a base also replaces
    its inertia by its collision shape's — 0.01 → 6.7e-7 kg·m² on the chain's base: read back, not assumed.) Now
    one CouplingWarning names the link, and every step after the one that used the old values holds, read from
    PyBullet's joint states."""
    from test_unseen12_bridge_guarantees import _residual
    model = biobullet.load_model(URDF / name, floating_base=True)
    residuals = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        bridge = Bridge(model, client, dt=dt)
        for k in range(120):
            if k == 60:
                info = pybullet.getDynamicsInfo(bridge.body, -1, physicsClientId=client)
                value = dict(mass=1.5 * info[0]) if change == "mass" else dict(
                    localInertiaDiagonal=[2.0 * v for v in info[2]])
                pybullet.changeDynamics(bridge.body, -1, physicsClientId=client, **value)
            bridge.apply(generalized={driven: 2.0 * math.sin(6.0 * bridge.time)})
            pybullet.stepSimulation(physicsClientId=client)
            residuals.append(_residual(name, client, bridge.body))
    messages = [str(w.message) for w in caught if issubclass(w.category, CouplingWarning)]
    assert max(residuals[:60]) <= PROMISE and max(residuals[62:]) <= PROMISE
    # (the chain's base, left with 6.7e-7 kg·m² by PyBullet, spins up to ≈ 1e3 rad/s: the step-end correction may
    # name its own miss once as well)
    assert messages and f"link {model.description.root_link!r}" in messages[0], messages
    assert not any("outside the bridge" in m for m in messages), messages


def _drop(client: int, model, ground_body: int | None) -> tuple[float, list[str]]:
    """The ball of `contact.testbed.drop_urdf` dropped from 0.5 m for 0.4 s at dt = 1e-4 s: (its lowest height,
    the BridgeWarnings that name a contact)."""
    from biobullet.bridge.lifecycle import BridgeWarning
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        bridge = Bridge(model, client, dt=1e-4, initial={"drop": 0.5}, ground_body=ground_body)
        lowest = np.inf
        for _ in range(4000):
            bridge.step()
            lowest = min(lowest, float(bridge.state()[1][0]))
        bridge.close()
    return lowest, [str(w.message) for w in caught
                    if issubclass(w.category, BridgeWarning) and "contact" in str(w.message)]


def test_a_plane_loaded_where_the_files_ground_is_is_named(client, tmp_path):
    """PyBullet's most common first line, p.loadURDF("plane.urdf") (pybullet_data: a box whose top is z = 0), on a
    model whose <contact> has the file's ground at z = 0: the bridge's scene contact and its file-ground contact
    both pushed the ball, silently — its lowest point 0.0316 m where the reference engine's (DOP853, the file's
    ground) is 0.0256 m, peak normal force 524 N instead of 400 N. Now one BridgeWarning names the body and the
    remedy ground_body=; with ground_body=plane the ball bounces as the engine's (and nothing is said)."""
    pybullet_data = pytest.importorskip("pybullet_data")
    from biobullet.contact.testbed import drop_urdf
    from biobullet.loader import load_text
    model = load_text(drop_urdf({"normal_law": "hu_guo", "stiffness": "1e5", "restitution": "0.8"}, radius=0.05),
                      tmp_path)
    reference = biobullet.simulate(model, 0.4, initial={"drop": 0.5}, progress=False, rtol=1e-10, atol=1e-12,
                                   t_eval=np.linspace(0.0, 0.4, 40001))
    engine_lowest = float(np.min(reference.column("drop")))
    pybullet.setAdditionalSearchPath(pybullet_data.getDataPath(), physicsClientId=client)
    plane = pybullet.loadURDF("plane.urdf", physicsClientId=client)
    lowest, messages = _drop(client, model, None)
    assert lowest - engine_lowest > 3e-3                      # pushed twice: it stops higher
    assert len(messages) == 1 and f"PyBullet body {plane}" in messages[0] \
        and f"ground_body={plane}" in messages[0], messages
    lowest, messages = _drop(client, model, plane)
    assert abs(lowest - engine_lowest) <= 5e-4 and messages == []   # first order in dt: ≈ g dt per impact


def test_a_box_above_the_files_ground_is_not_named(client, tmp_path):
    """The counterpart: a box whose top (0.2 m) is above the file's ground is another surface, touched alone."""
    from biobullet.contact.testbed import drop_urdf
    from biobullet.loader import load_text
    model = load_text(drop_urdf({"normal_law": "hu_guo", "stiffness": "1e5", "restitution": "0.8"}, radius=0.05),
                      tmp_path)
    shape = pybullet.createCollisionShape(pybullet.GEOM_BOX, halfExtents=[0.3, 0.3, 0.1], physicsClientId=client)
    pybullet.createMultiBody(0, shape, basePosition=[0.0, 0.0, 0.1], physicsClientId=client)
    lowest, messages = _drop(client, model, None)
    assert 0.2 < lowest < 0.25 and messages == []


@pytest.mark.parametrize("name, driven, dependent", [("coupled_chain.urdf", "shoulder", "elbow"),
                                                     ("fourbar_knee.urdf", "knee_A", "knee_D")])
def test_every_joint_reset_off_the_rows_before_apply_is_named(client, name, driven, dependent):
    """A random starting pose per episode, set joint by joint with resetJointState — dependent joints included —
    before apply(). The watch puts the dependent joints back where their inputs place them; with only dependent
    joints reset it says so, but with their inputs reset too it said nothing, though the values the user set were
    replaced (the chain's elbow 0.3 rad, the four-bar 0.1 rad). Now one warning names the dependent joint; every
    step holds, read from PyBullet's joint states."""
    from test_unseen12_bridge_guarantees import _residual
    residuals = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        bridge = Bridge(URDF / name, client=client, dt=1 / 240)
        for k in range(60):
            if k == 30:
                for joint, index in bridge.joint_index.items():
                    pybullet.resetJointState(bridge.body, index, pybullet.getJointState(
                        bridge.body, index, physicsClientId=client)[0] + (0.3 if joint == dependent else 0.1),
                        physicsClientId=client)
            bridge.apply(generalized={driven: 2.0 * math.sin(6.0 * bridge.time)})
            pybullet.stepSimulation(physicsClientId=client)
            residuals.append(_residual(name, client, bridge.body))
    messages = [str(w.message) for w in caught if issubclass(w.category, CouplingWarning)]
    assert max(residuals) <= PROMISE
    assert len(messages) == 1 and dependent in messages[0] and "(dependent)" in messages[0], messages


def test_set_time_step_mid_run_is_followed_on_a_model_without_rows(client, tmp_path):
    """setTimeStep without telling the bridge, on a model with nothing to hold (its plan reads, checks for a
    runaway, sends): the rows' watch follows a changed dt at its next disturbed step, this plan never did. A ball
    dropped from 0.5 m with dt doubled (1e-4 → 2e-4 s) after 0.1 s: the bridge's clock ran on at 1e-4 s a step and
    logged the contact onset at 0.2015 s, where PyBullet's time and the reference engine's onset are 0.303 s. Now
    the clock follows PyBullet's (its sum of fixedTimeStep) and the onset is the engine's to a step."""
    from biobullet.contact.testbed import drop_urdf
    from biobullet.loader import load_text
    model = load_text(drop_urdf({"normal_law": "hu_guo", "stiffness": "1e5", "restitution": "0.8"}, radius=0.05),
                      tmp_path)
    reference = biobullet.simulate(model, 0.4, initial={"drop": 0.5}, progress=False, rtol=1e-10, atol=1e-12)
    onset = reference.meta["discrete"]["C"]["intervals"][0]["start"]
    bridge = Bridge(model, client, dt=1e-4, initial={"drop": 0.5})
    pybullet_time = 0.0
    for k in range(2500):
        if k == 1000:
            pybullet.setTimeStep(2e-4, physicsClientId=client)
        bridge.step()
        pybullet_time += pybullet.getPhysicsEngineParameters(physicsClientId=client)["fixedTimeStep"]
        if k != 1000:   # (the step with the new dt is seen by the next apply(): its state's jump)
            assert bridge.time == pytest.approx(pybullet_time, abs=1e-12)
    assert bridge.dt == 2e-4
    assert abs(bridge.contacts.intervals()[0]["start"] - onset) <= 2 * 2e-4


@pytest.mark.parametrize("name, initial", [("arm7.urdf", None), ("pitching_arm.urdf", {"elbow_flexion_dot": 2.0})])
def test_the_clock_follows_set_time_step_on_robots_without_rows(client, name, initial):
    """The same on a fixed arm and a floating pitching arm (no rows either): bridge.time against PyBullet's own sum
    of fixedTimeStep after setTimeStep(dt/2) mid-run (before: it kept counting the old dt). The change shows in the
    joints' positions (x_n + dt ẋ no longer explains them), so it is seen at the first step in which a joint moves
    (a floating body whose joints are at rest in free fall shows none: the elbow swings here)."""
    bridge = Bridge(URDF / name, client, dt=1 / 240, initial=initial)
    pybullet_time = 0.0
    for k in range(60):
        if k == 30:
            pybullet.setTimeStep(1 / 480, physicsClientId=client)
        bridge.step()
        pybullet_time += pybullet.getPhysicsEngineParameters(physicsClientId=client)["fixedTimeStep"]
    assert bridge.dt == 1 / 480 and bridge.time == pytest.approx(pybullet_time, abs=1e-12)


@pytest.mark.parametrize("name, driven", [("coupled_chain.urdf", "shoulder"), ("fourbar_knee.urdf", "knee_A")])
def test_a_floating_base_given_mass_zero_mid_run_is_one_model_error(client, name, driven):
    """changeDynamics(body, -1, mass=0) on a floating base: PyBullet makes the body static (its base fixed), which
    the bridge refuses at construction by name. Mid-run it ended in a SystemError traceback out of PyBullet's
    calculateMassMatrix ("Dimension error. System has 9 DOFs, but dim(q) = 3"). Now the same ModelError."""
    model = biobullet.load_model(URDF / name, floating_base=True)
    bridge = Bridge(model, client, dt=1 / 240)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CouplingWarning)
        with pytest.raises(ModelError, match="static") as error:
            for k in range(40):
                if k == 20:
                    pybullet.changeDynamics(bridge.body, -1, mass=0.0, physicsClientId=client)
                bridge.apply(generalized={driven: 2.0 * math.sin(6.0 * bridge.time)})
                pybullet.stepSimulation(physicsClientId=client)
    assert f"root link {model.description.root_link!r}" in str(error.value) and "mass 0" in str(error.value)
    assert pybullet.getDynamicsInfo(bridge.body, -1, physicsClientId=client)[0] == 0.0


@pytest.mark.parametrize("name, driven, link", [("coupled_chain.urdf", "shoulder", "distal"),
                                                ("fourbar_knee.urdf", "knee_A", "anterior_link")])
def test_a_link_given_mass_zero_mid_run_is_named_as_what_cannot_be_held(client, name, driven, link):
    """changeDynamics(body, link, mass=0): PyBullet zeroes the link's inertia with its mass (read back here), so its
    joint carries no inertia — no step, the bridge's or PyBullet's, has a defined acceleration for it, and every
    later step is off (the chain 1.1e-3 rad, the four-bar 2.1e-5 m, from PyBullet's joint states). Before, the
    first warning said the bridge "follows it from now on" and the second blamed "a force outside the bridge's
    solve"; now one warning names the massless link."""
    from test_unseen12_bridge_guarantees import _residual
    residuals = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        bridge = Bridge(URDF / name, client=client, dt=1 / 240)
        index = next(j for j in range(pybullet.getNumJoints(bridge.body, physicsClientId=client))
                     if pybullet.getJointInfo(bridge.body, j, physicsClientId=client)[12].decode() == link)
        for k in range(90):
            if k == 30:
                pybullet.changeDynamics(bridge.body, index, mass=0.0, physicsClientId=client)
            bridge.apply(generalized={driven: 2.0 * math.sin(6.0 * bridge.time)})
            pybullet.stepSimulation(physicsClientId=client)
            residuals.append(_residual(name, client, bridge.body))
    assert pybullet.getDynamicsInfo(bridge.body, index, physicsClientId=client)[2] == (0.0, 0.0, 0.0)
    assert max(residuals[:30]) <= PROMISE and max(residuals[30:]) > PROMISE   # what cannot be held
    messages = [str(w.message) for w in caught if issubclass(w.category, CouplingWarning)]
    assert len(messages) == 1 and f"link {link!r} was given mass 0" in messages[0], messages


# a double pendulum held up by two joint springs (no joint functions or loops: the plan without rows)
SPRUNG = """<?xml version="1.0"?>
<robot name="sprung">
  <link name="base"/>
  <joint name="hip" type="continuous"><parent link="base"/><child link="thigh"/><axis xyz="0 1 0"/></joint>
  <link name="thigh"><inertial><origin xyz="0 0 -0.2"/><mass value="2"/>
    <inertia ixx="0.02" ixy="0" ixz="0" iyy="0.02" iyz="0" izz="0.002"/></inertial></link>
  <joint name="knee" type="continuous"><parent link="thigh"/><child link="shank"/><origin xyz="0 0 -0.4"/>
    <axis xyz="0 1 0"/></joint>
  <link name="shank"><inertial><origin xyz="0 0 -0.2"/><mass value="1"/>
    <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.001"/></inertial></link>
  <biobullet version="1"><gravity xyz="0 0 -9.81"/>
    <joint_spring joint="hip" stiffness="60" rest="0.3" damping="0.5"/>
    <joint_spring joint="knee" stiffness="30" rest="-0.4" damping="0.2"/>
  </biobullet>
</robot>
"""


def test_several_steps_per_apply_on_a_model_without_rows_are_named(client, tmp_path):
    """An action repeat (apply() once, stepSimulation() twice) on a model whose force elements act every step: the
    second step has none of the bridge's torques (PyBullet clears them), so the springs act every other step.
    Named on models with rows; on a model without, silent: the sprung double pendulum ends 0.1 rad or more away
    from the reference engine's after 0.5 s, where apply() before every step follows it to 2e-2 rad (first order
    in dt). Now one warning names the repeat and the remedy."""
    path = tmp_path / "sprung.urdf"
    path.write_text(SPRUNG)
    model = biobullet.load_model(path)
    reference = biobullet.simulate(model, 0.5, progress=False, rtol=1e-10, atol=1e-12)
    end = np.array([reference.column(name)[-1] for name in ("hip", "knee")])
    for repeat in (1, 2):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            bridge = Bridge(model, client, dt=1e-3)
            for _ in range(500 // repeat):
                bridge.apply()
                for _ in range(repeat):
                    pybullet.stepSimulation(physicsClientId=client)
            got = np.array([pybullet.getJointState(bridge.body, bridge.joint_index[name],
                                                   physicsClientId=client)[0] for name in ("hip", "knee")])
            bridge.close()
        messages = [str(w.message) for w in caught if issubclass(w.category, CouplingWarning)]
        if repeat == 1:
            assert np.abs(got - end).max() <= 2e-2 and messages == []
        else:
            assert np.abs(got - end).max() > 0.1
            assert len(messages) == 1 and "stepSimulation() ran 2 times" in messages[0] \
                and "force elements" in messages[0], messages


@pytest.mark.parametrize("name", ["humanoid.urdf", "shoulder_rhythm.urdf"])
def test_a_reset_joint_state_deep_beyond_a_limit_is_named_before_the_run_diverges(client, name):
    """resetJointState of the user's (not bridge.reset) deep beyond a URDF <limit>: the bridge's stop pushes back
    with a stiffness that makes dt beyond its explicit step limit, and the run diverged within a few dozen steps with
    "use a smaller dt, weaker gains, or look for a force outside the bridge" (the humanoid's spine_stretch reset
    0.22 m below its lower limit −0.03 at 240 Hz; the shoulder's elbow 0.29 rad below its lower="0"). bridge.reset
    named it (`stability.check_stop_penetration`); the same check now names a reset read back from PyBullet."""
    from biobullet.bridge.lifecycle import BridgeWarning
    joint, value = {"humanoid.urdf": ("spine_stretch", -0.25), "shoulder_rhythm.urdf": ("elbow_flexion", -0.29)}[name]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        bridge = Bridge(URDF / name, client, dt=1 / 240)
        try:
            for k in range(60):
                if k == 5:
                    pybullet.resetJointState(bridge.body, bridge.joint_index[joint], value, physicsClientId=client)
                bridge.apply()
                pybullet.stepSimulation(physicsClientId=client)
        except DivergenceError:
            pass   # (it may run away: what matters is that the cause was named first)
    messages = [str(w.message) for w in caught if issubclass(w.category, BridgeWarning) and "limit" in str(w.message)]
    assert any(f"<joint name=\"{joint}\">" in m and "beyond the lower limit" in m for m in messages), messages
