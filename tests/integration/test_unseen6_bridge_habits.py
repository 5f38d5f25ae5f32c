"""PyBullet habits in a user's own loop with the Bridge (hunt6): the joint functions hold to PROMISE after every
`stepSimulation()`, or the bridge's next `apply()` names the cause once, or construction refuses a body the bridge
cannot simulate — never a silently broken coupling or a raw PyBullet error.

The residual is read from PyBullet's joint states and the `<joint_function>` of the file written out here (the
coupled chain's cubic elbow = 0.1 + 0.6 s − 0.4 s² + 0.2 s³; the shoulder rhythm's linear rows parsed from its
`<biobullet>` block with ElementTree), not through the bridge's rows. Each habit was first measured on the code
before its fix (numbers in the test docstrings)."""
from __future__ import annotations

import math
import warnings
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import numpy as np
import pytest

pybullet = pytest.importorskip("pybullet")

from biobullet.bridge import Bridge  # noqa: E402
from biobullet.bridge.lifecycle import BridgeClosedError, DivergenceError  # noqa: E402
from biobullet.bridge.outside import PROMISE, CouplingWarning  # noqa: E402
from biobullet.core.errors import ModelError  # noqa: E402

URDF = Path(__file__).resolve().parents[2] / "urdf"
CHAIN = URDF / "coupled_chain.urdf"
SHOULDER = URDF / "shoulder_rhythm.urdf"
DT = 1 / 240


def _joint_ids(client: int, body: int) -> dict[str, int]:
    return {pybullet.getJointInfo(body, j, physicsClientId=client)[1].decode(): j
            for j in range(pybullet.getNumJoints(body, physicsClientId=client))}


def _residual(path: Path, client: int, body: int) -> float:
    """max |q_out − f(q_in)| over the file's polynomial and linear joint functions, from PyBullet's joint states."""
    ids = _joint_ids(client, body)

    def q(name: str) -> float:
        return pybullet.getJointState(body, ids[name], physicsClientId=client)[0]

    worst = 0.0
    for element in ElementTree.parse(path).getroot().find("biobullet").findall("joint_function"):
        inputs = element.get("inputs").split()
        coefficients = [float(c) for c in element.get("coefficients").split()]
        if element.get("type") == "polynomial":
            value = sum(c * q(inputs[0]) ** k for k, c in enumerate(coefficients))
        else:
            value = float(element.get("offset", "0")) + sum(c * q(n) for c, n in zip(coefficients, inputs))
        worst = max(worst, abs(q(element.get("joint")) - value))
    return worst


def _drive(bridge: Bridge, name: str) -> dict[str, float]:
    return {name: 2.0 * math.sin(6.0 * bridge.time)}


@pytest.fixture
def client():
    cid = pybullet.connect(pybullet.DIRECT)
    pybullet.setGravity(0, 0, -9.81, physicsClientId=cid)
    pybullet.setTimeStep(DT, physicsClientId=cid)
    yield cid
    pybullet.disconnect(cid)


def _bridge(path: Path, client: int, **kwargs) -> Bridge:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # the model's gravity set on the client (BridgeWarning)
        return Bridge(path, client=client, **kwargs)


@pytest.mark.parametrize("path, driven", [(CHAIN, "shoulder"), (SHOULDER, "elevation")])
def test_a_second_apply_before_the_step_replaces_the_first(client, path, driven):
    """PyBullet adds TORQUE_CONTROL torques up until its step: a second apply() used to send the constraint torques
    twice (measured 1.2e-3 rad on the chain, 1.3e-3 on the shoulder after the first step, then an 'outside force'
    warning and a projection every step) and advanced the clock twice. Now it replaces the first: the run equals the
    one with a single apply() per step, the coupling holds and the clock counts steps."""
    steps = 60
    single = _bridge(path, client)
    for _ in range(steps):
        single.apply(generalized=_drive(single, driven))
        pybullet.stepSimulation(physicsClientId=client)
    expected = single.state()[1:]
    single.close()
    bridge = _bridge(path, client)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CouplingWarning)
        for k in range(steps):
            command = _drive(bridge, driven)   # (at the step's time: the first apply() advances the clock)
            bridge.apply(generalized={driven: -1.0})   # a first command, replaced by the second
            bridge.apply(generalized=command)
            pybullet.stepSimulation(physicsClientId=client)
            assert _residual(path, client, bridge.body) <= PROMISE, k
    assert bridge.time == pytest.approx(steps * DT, rel=1e-12)
    _, x, xd = bridge.state()
    np.testing.assert_allclose(x, expected[0], rtol=0, atol=1e-10)
    np.testing.assert_allclose(xd, expected[1], rtol=0, atol=1e-8)


@pytest.mark.parametrize("path, driven", [(CHAIN, "shoulder"), (SHOULDER, "elevation")])
def test_two_steps_per_apply_from_rest_are_named_at_the_first_apply_after(client, path, driven):
    """Frame skip (two stepSimulation() per apply()) from rest: the second step runs without the bridge's torques.
    Its jump x − x_n = dt(ẋ₁ + ẋ₂) was compared with 2 dt ẋ₂ (a third off from rest), so the first ones passed for
    resets and were projected back with no word (chain 6.1e-5 rad, shoulder 1.3e-3 rad; named from the 3rd/5th)."""
    bridge = _bridge(path, client)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        bridge.apply(generalized=_drive(bridge, driven))
        pybullet.stepSimulation(physicsClientId=client)
        pybullet.stepSimulation(physicsClientId=client)
        broken = _residual(path, client, bridge.body)
        bridge.apply(generalized=_drive(bridge, driven))
    said = [str(w.message) for w in caught if issubclass(w.category, CouplingWarning)]
    assert broken > PROMISE   # the habit breaks the coupling: it must be named
    assert len(said) == 1 and "stepSimulation() ran 2 times" in said[0], said
    assert _residual(path, client, bridge.body) <= PROMISE   # projected back by that apply()


@pytest.mark.parametrize("path, load, words", [
    (CHAIN, dict(globalScaling=2.0), "2 times the model file's size"),
    (CHAIN, dict(globalScaling=0.5), "0.5 times the model file's size"),
    (CHAIN, dict(useFixedBase=False), "useFixedBase=False"),
    (CHAIN, dict(baseOrientation=(0.0, 0.2955202066613396, 0.0, 0.955336489125606)), "fixed base rotated by 0.6 rad"),
    (SHOULDER, dict(flags=pybullet.URDF_USE_INERTIA_FROM_FILE | pybullet.URDF_MERGE_FIXED_LINKS), "no links hand"),
])
def test_a_body_loaded_otherwise_than_the_file_is_refused(client, path, load, words):
    """A body of the user's that is not the model file's robot in the bridge's frame: globalScaling (scales lengths
    and COMs, not masses or inertias) used to be accepted silently — the bridge then simulated another robot —,
    useFixedBase=False on a fixed-base model ended in a SystemError from calculateInverseDynamics, a rotated fixed
    base (gravity in another base direction than the bridge's dynamics take) broke the coupling by 4.9e-4 rad after
    every step under a warning blaming 'a force outside the solve', and URDF_MERGE_FIXED_LINKS (the shoulder's hand
    merged into its forearm) was blamed on a missing URDF_USE_INERTIA_FROM_FILE. Each is one ModelError naming it."""
    options = dict(useFixedBase=True, flags=pybullet.URDF_USE_INERTIA_FROM_FILE)
    options.update(load)
    body = pybullet.loadURDF(str(path), physicsClientId=client, **options)
    with pytest.raises(ModelError, match="body_id") as error:
        _bridge(path, client, body_id=body)
    assert words in str(error.value)


def test_a_body_moved_but_not_rotated_is_taken_and_holds(client):
    """The counterpart: a fixed base placed elsewhere (basePosition) is the same robot in an inertial frame."""
    body = pybullet.loadURDF(str(CHAIN), basePosition=(0.3, -0.2, 1.0), useFixedBase=True,
                             flags=pybullet.URDF_USE_INERTIA_FROM_FILE, physicsClientId=client)
    bridge = _bridge(CHAIN, client, body_id=body)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CouplingWarning)
        for _ in range(120):
            bridge.apply(generalized=_drive(bridge, "shoulder"))
            pybullet.stepSimulation(physicsClientId=client)
            assert _residual(CHAIN, client, body) <= PROMISE


@pytest.mark.parametrize("habit", ["rotate", "turn"])
def test_a_fixed_base_rotated_or_set_turning_mid_run_is_named(client, habit):
    """resetBasePositionAndOrientation (rotated) or resetBaseVelocity (PyBullet moves a fixed base at the velocity
    it is given) mid-run: the warning names the fixed base (it blamed 'a force outside the bridge's solve')."""
    bridge = _bridge(CHAIN, client)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for k in range(30):
            if k == 10 and habit == "rotate":
                pybullet.resetBasePositionAndOrientation(bridge.body, (0, 0, 0),
                                                         pybullet.getQuaternionFromEuler((0.3, 0, 0)),
                                                         physicsClientId=client)
            if k == 10 and habit == "turn":
                pybullet.resetBaseVelocity(bridge.body, (0.5, 0, 0), (0, 0.5, 0.2), physicsClientId=client)
            bridge.apply(generalized=_drive(bridge, "shoulder"))
            pybullet.stepSimulation(physicsClientId=client)
    said = [str(w.message) for w in caught if issubclass(w.category, CouplingWarning)]
    assert len(said) == 1 and "the fixed base was rotated or set turning" in said[0], said


def test_sub_steps_are_named_as_the_cause(client):
    """With numSubSteps the bridge's torques are held over sub-steps it cannot see: on the chain at 240 Hz the
    coupling misses the promise (1.3e-6 rad by step 5); the warning used to blame 'a force outside the solve'."""
    bridge = _bridge(CHAIN, client)
    bridge.set_time_step(DT, substeps=4)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(40):
            bridge.apply(generalized=_drive(bridge, "shoulder"))
            pybullet.stepSimulation(physicsClientId=client)
    said = [str(w.message) for w in caught if issubclass(w.category, CouplingWarning)]
    assert len(said) == 1 and "4 sub-steps per stepSimulation" in said[0], said


def test_sub_steps_on_near_massless_links_end_in_an_error_naming_them(client):
    """The shoulder's 1e-6 kg links held by constraint torques over 4 sub-steps run away in the first step; the
    DivergenceError said 'use a smaller dt, weaker gains, or look for a force outside the bridge'."""
    pybullet.setPhysicsEngineParameter(numSubSteps=4, physicsClientId=client)
    bridge = _bridge(SHOULDER, client)
    with pytest.raises(DivergenceError, match="4 PyBullet sub-steps"):
        for _ in range(3):
            bridge.apply(generalized=_drive(bridge, "elevation"))
            pybullet.stepSimulation(physicsClientId=client)


@pytest.mark.parametrize("habit", ["removeBody", "resetSimulation"])
def test_the_body_removed_under_the_bridge_is_named(client, habit):
    """removeBody(bridge.body) or resetSimulation() in the user's loop: the next apply() raises BridgeClosedError
    naming them (it led with 'client id now belongs to another connection', the rarer cause)."""
    bridge = _bridge(CHAIN, client)
    bridge.step()
    if habit == "removeBody":
        pybullet.removeBody(bridge.body, physicsClientId=client)
    else:
        pybullet.resetSimulation(physicsClientId=client)
    with pytest.raises(BridgeClosedError, match=r"gone from PyBullet client \d+ \(removeBody or resetSimulation\)"):
        bridge.apply()


@pytest.mark.parametrize("path, driven, start", [(CHAIN, "shoulder", 0.0), (SHOULDER, "elevation", 0.9)])
def test_a_starting_pose_set_with_reset_joint_state_before_the_first_apply_is_followed(client, path, driven, start):
    """The habit: make the bridge, set the starting pose with PyBullet's resetJointState, start the loop. The first
    apply() after construction compared nothing, so the dependent joints were stepped from where they were and the
    step-end target yanked them onto the rows in one step (chain: 0.36 rad off at that apply, 1.6e-6 rad after the
    step, no word; the shoulder ran away within 5 steps). They now follow their inputs at that apply()."""
    bridge = _bridge(path, client)
    pybullet.resetJointState(bridge.body, bridge.joint_index[driven], start, 0.5, physicsClientId=client)
    assert _residual(path, client, bridge.body) > 0.01   # the pose the user set is off the rows
    with warnings.catch_warnings():
        warnings.simplefilter("error", CouplingWarning)
        bridge.apply(generalized=_drive(bridge, driven))
        assert _residual(path, client, bridge.body) <= 1e-9
        assert pybullet.getJointState(bridge.body, bridge.joint_index[driven], physicsClientId=client)[:2] \
            == (start, 0.5)   # the user's input and its rate stay
        for _ in range(30):
            pybullet.stepSimulation(physicsClientId=client)
            assert _residual(path, client, bridge.body) <= PROMISE
            bridge.apply(generalized=_drive(bridge, driven))


def test_a_dependent_joint_set_before_the_first_apply_is_named_and_undone(client):
    """The same with the dependent joint: one warning naming it, and it goes back where its input places it."""
    bridge = _bridge(CHAIN, client)
    pybullet.resetJointState(bridge.body, bridge.joint_index["elbow"], 1.2, physicsClientId=client)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        bridge.apply()
    said = [str(w.message) for w in caught if issubclass(w.category, CouplingWarning)]
    assert len(said) == 1 and "dependent joint 'elbow' was reset" in said[0], said
    assert _residual(CHAIN, client, bridge.body) <= 1e-9


def test_restore_state_is_a_reset_not_a_frame_skip(client):
    """saveState / restoreState in the loop (rollouts): a jump between two states on the rows, which the constant
    rows' two-step test (J ẋ₁ = 0 with ẋ₁ = (x − x_n)/dt − ẋ) cannot tell from a frame skip — it is one only when
    it broke the rows. No warning, and the coupling holds."""
    bridge = _bridge(SHOULDER, client)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CouplingWarning)
        for k in range(80):
            if k == 20:
                saved = pybullet.saveState(physicsClientId=client)
            if k in (50, 70):
                pybullet.restoreState(saved, physicsClientId=client)
            bridge.apply(generalized=_drive(bridge, "elevation"))
            pybullet.stepSimulation(physicsClientId=client)
            assert _residual(SHOULDER, client, bridge.body) <= PROMISE


@pytest.mark.parametrize("name, dt, steps", [("prosthesis_fourbar.urdf", 1e-4, 200),    # rows, springs, contacts
                                             ("elastic_robot_3link.urdf", 1e-4, 300)])  # no rows: the plain plan
def test_a_second_apply_replaces_the_first_for_force_elements_and_contacts(client, name, dt, steps):
    """The same habit on models whose force elements and contacts the bridge sends: a second apply() per step sent
    them twice (the prosthesis 0.063 m / 21.8 m/s off the single-apply run after 0.02 s, the elastic robot's
    segment springs 1.1e-6 m / 1.1e-4 m/s after 0.03 s) and advanced the clock twice. Now the runs agree."""
    runs = []
    for twice in (False, True):
        bridge = _bridge(URDF / name, client, dt=dt)
        for _ in range(steps):
            bridge.apply()
            if twice:
                bridge.apply()
            pybullet.stepSimulation(physicsClientId=client)
        runs.append(bridge.state())
        bridge.close()
    (t1, x1, v1), (t2, x2, v2) = runs
    assert t2 == pytest.approx(t1, abs=dt * 1.01)   # (a first apply() sending nothing: one dt, see docs)
    np.testing.assert_allclose(x2, x1, rtol=0, atol=1e-12)
    np.testing.assert_allclose(v2, v1, rtol=0, atol=1e-10)


def _server_client():
    """A connection whose server steps by itself under setRealTimeSimulation(1) (as GUI does; DIRECT ignores it)."""
    cid = pybullet.connect(pybullet.SHARED_MEMORY_SERVER)
    if cid < 0:
        pytest.skip("no PyBullet shared-memory server connection on this machine")
    pybullet.setGravity(0, 0, -9.81, physicsClientId=cid)
    pybullet.setTimeStep(DT, physicsClientId=cid)
    return cid


@pytest.mark.parametrize("when", ["before", "during"])
def test_real_time_simulation_is_refused(when):
    """setRealTimeSimulation(1) on a connection that steps by itself: PyBullet's thread steps between and during the
    bridge's apply() calls, without its torques. Before, the bridge named it as 'stepSimulation() ran 7 times' and
    the coupling was 0.18 rad off right after an apply(); now one ModelError naming real-time simulation, at
    construction or at the first apply() that sees its steps."""
    import time
    server = _server_client()
    try:
        if when == "before":
            pybullet.setRealTimeSimulation(1, physicsClientId=server)
            with pytest.raises(ModelError, match=r"real-time simulation \(setRealTimeSimulation\(1\)\)"):
                _bridge(CHAIN, server)
            return
        bridge = _bridge(CHAIN, server)
        bridge.step()
        pybullet.setRealTimeSimulation(1, physicsClientId=server)
        _, x0, _ = bridge.state()
        deadline = time.monotonic() + 5.0
        while np.array_equal(bridge.state()[1], x0) and time.monotonic() < deadline:
            time.sleep(0.01)   # until the server's thread has stepped
        with pytest.raises(ModelError, match=r"real-time simulation \(setRealTimeSimulation\(1\)\)"):
            bridge.apply()
    finally:
        pybullet.setRealTimeSimulation(0, physicsClientId=server)
        pybullet.disconnect(server)


def test_real_time_simulation_on_direct_changes_nothing(client):
    """DIRECT does not step by itself: the flag is harmless there, and the bridge takes it."""
    pybullet.setRealTimeSimulation(1, physicsClientId=client)
    bridge = _bridge(CHAIN, client)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CouplingWarning)
        for _ in range(20):
            bridge.apply(generalized=_drive(bridge, "shoulder"))
            pybullet.stepSimulation(physicsClientId=client)
            assert _residual(CHAIN, client, bridge.body) <= PROMISE


def test_a_second_bridge_on_the_same_body_takes_it_over_and_says_so(client):
    """Bridge(model, body_id=b) twice on one body (a new bridge per episode on the user's robot): two bridges would
    send their constraint torques twice; the newer takes the body over, and the older one's next call says that
    (it said the client id belonged to another connection or the body was removed)."""
    body = pybullet.loadURDF(str(CHAIN), useFixedBase=True, flags=pybullet.URDF_USE_INERTIA_FROM_FILE,
                             physicsClientId=client)
    older = _bridge(CHAIN, client, body_id=body)
    newer = _bridge(CHAIN, client, body_id=body)
    with pytest.raises(BridgeClosedError, match="was taken over by another Bridge made on it"):
        older.apply()
    newer.apply()
    older.close()   # leaves the body, now the newer bridge's, alone
    newer.step()
    assert _residual(CHAIN, client, body) <= PROMISE


def test_a_second_apply_replaces_the_first_with_muscles(tmp_path):
    """With muscles (`set_excitations`) a second apply() advanced their activations and fibers a second time and
    sent their path forces twice: the leg was 0.28 rad and 3.6 rad/s off the single-apply run after 0.1 s. Now
    the second apply() starts from the muscle state the first one found and sends the difference."""
    from muscle_models import LEG_URDF, leg_pose
    import biobullet
    path = tmp_path / "leg.urdf"
    path.write_text(LEG_URDF)
    leg = biobullet.load_model(str(path), floating_base=True)
    runs = []
    for twice in (False, True):
        with Bridge(leg, dt=1e-3, initial=leg_pose()) as bridge:
            muscles = bridge.set_excitations(0.5, extensor=0.6, flexor=0.3, hip_flexor=0.5)
            for _ in range(60):
                bridge.apply()
                if twice:
                    bridge.apply()
                pybullet.stepSimulation(physicsClientId=bridge.client)
            runs.append((*bridge.state(), muscles.state.copy()))
    (t1, x1, v1, m1), (t2, x2, v2, m2) = runs
    assert t2 == t1
    np.testing.assert_allclose(x2, x1, rtol=0, atol=1e-12)
    np.testing.assert_allclose(v2, v1, rtol=0, atol=1e-10)
    np.testing.assert_allclose(m2, m1, rtol=0, atol=1e-12)
