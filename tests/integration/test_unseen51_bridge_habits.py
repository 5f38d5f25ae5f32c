"""Scene habits of a PyBullet user's own loop with a Bridge that has `<contact>`s (bridgeprobe), beyond
test_unseen6/15/25_*_habits.py, test_bridge_own_loop.py and test_bridge_whole_model.py: bodies removed and
created mid-run, `resetSimulation` or a reconnect without `close()`, a floating body whose contact is on its base
link beside other bodies, two bridged bodies touching.

Oracles, none computed by the bridge: the reference engine (`simulate`, adaptive, located contact events) on the
same ball with its ground at the box top, for the bounce apex (the bridge's documented accuracy at dt = 1e-4 s:
within 1e-3 relative, test_bridge_whole_model.py); free flight in closed form (x0 + v t, a torque-free sphere's
constant spin) read from PyBullet's base state; the closed-form peak overlap of two masses on a linear spring."""
from __future__ import annotations

import math
import warnings
from pathlib import Path

import numpy as np
import pytest

pybullet = pytest.importorskip("pybullet")

from biobullet.bridge import Bridge  # noqa: E402
from biobullet.bridge.outside import PROMISE, CouplingWarning  # noqa: E402
from biobullet.contact.testbed import drop_urdf  # noqa: E402
from biobullet.core.errors import ModelError  # noqa: E402
from biobullet.integrate import simulate  # noqa: E402
from biobullet.loader import load_text  # noqa: E402

DT, Z0, TOP, T_END = 1e-4, 0.3, 0.2, 0.25   # onset on the box top at 0.10 s, apex 0.278 m at ≈ 0.2 s
RADIUS = 0.05
HU_GUO = {"normal_law": "hu_guo", "stiffness": "1e5", "restitution": "0.8"}
FAR = "-50"   # the file's own ground far below: only the user's box can hold the ball


def _apex(t: np.ndarray, z: np.ndarray, start: float) -> float:
    return float(np.max(z[t > start + 0.02]))


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    """(onset, apex) of the reference engine's ball on a ground at the box top."""
    on_top = load_text(drop_urdf({**HU_GUO, "ground_height": repr(TOP)}, radius=RADIUS),
                       tmp_path_factory.mktemp("on_top"))
    run = simulate(on_top, T_END, initial={"drop": Z0}, progress=False, rtol=1e-10, atol=1e-12,
                   t_eval=np.linspace(0.0, T_END, 2501))
    start = run.meta["discrete"]["C"]["intervals"][0]["start"]
    return start, _apex(np.asarray(run.t), run.column("drop"), start)


def _box(client: int, top: float = TOP, x: float = 0.0) -> int:
    shape = pybullet.createCollisionShape(pybullet.GEOM_BOX, halfExtents=[0.3, 0.3, 0.1], physicsClientId=client)
    return pybullet.createMultiBody(0, shape, basePosition=[x, 0.0, top - 0.1], physicsClientId=client)


def _bounce(bridge: Bridge) -> tuple[float, float, float]:
    """(lowest z, first onset, apex after it) of the ball dropped from Z0 at t = 0 (steps of DT to T_END)."""
    bridge.reset(drop=Z0)
    t, z = [0.0], [bridge.state()[1][0]]
    for _ in range(int(round(T_END / DT))):
        t.append(bridge.step())
        z.append(bridge.state()[1][0])
    onsets = [i["start"] for i in bridge.contacts.intervals()]
    start = onsets[0] if onsets else math.nan
    return min(z), start, (_apex(np.array(t), np.array(z), start) if onsets else math.nan)


def _check_bounce(got: tuple[float, float, float], engine: tuple[float, float]) -> None:
    lowest, start, apex = got
    assert lowest > TOP, f"the ball fell through (lowest {lowest:.4g} m, box top or ground at {TOP} m)"
    assert abs(start - engine[0]) <= 2 * DT
    assert apex == pytest.approx(engine[1], rel=1e-3)


@pytest.fixture
def client_240():
    """A DIRECT client at PyBullet's default 1/240 s with the models' gravity."""
    cid = pybullet.connect(pybullet.DIRECT)
    pybullet.setGravity(0.0, 0.0, -9.81, physicsClientId=cid)
    yield cid
    pybullet.disconnect(cid)


def _quiet(function, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # the model's gravity set on a client of the user's (BridgeWarning)
        return function(*args, **kwargs)


def test_a_box_created_where_a_removed_body_was_is_a_scene_body(engine, tmp_path):
    """The ball bounces on a box; removeBody(box), then a new box: PyBullet gives the new box the removed one's id.
    Before, the scene kept every id it had seen as scanned, so the new box was no scene body (no compliant contact)
    while the pair filter set for the old one kept PyBullet's own contact off: the ball fell through it (lowest
    −0.51 m), silently. The removed box's contact intervals stay in the log until the next reset."""
    model = load_text(drop_urdf({**HU_GUO, "ground_height": FAR}, radius=RADIUS), tmp_path)
    with Bridge(model, dt=DT, initial={"drop": Z0}) as bridge:
        c = bridge.client
        old = _box(c)
        first = _bounce(bridge)
        logged = bridge.contacts.intervals()
        pybullet.removeBody(old, physicsClientId=c)
        bridge.step()               # the bridge sees the body count change: the old box is gone
        assert bridge.contacts.intervals() == logged
        new = _box(c)
        assert new == old           # (PyBullet's id reuse: the habit's point)
        got = _bounce(bridge)
        assert pybullet.getContactPoints(bridge.body, new, physicsClientId=c) == ()
    _check_bounce(first, engine)
    _check_bounce(got, engine)


@pytest.mark.parametrize("how", ["resetSimulation", "reconnect"])
def test_a_users_box_at_an_old_query_spheres_id_is_a_scene_body(engine, tmp_path, how):
    """A bridge whose contact has no matching collision sphere queries the scene with a sphere body of its own. An
    episode loop that calls resetSimulation (or disconnects and connects again: PyBullet reuses the client id)
    without closing that bridge: the next episode's bodies get the old ids. Before, a module table of query-object
    ids per client id outlived them, so the user's box at the old sphere's id was skipped as a query object and the
    ball fell through it (lowest −0.49 m), silently."""
    model = _no_collision_ball(tmp_path)
    client = pybullet.connect(pybullet.DIRECT)
    pybullet.setGravity(0, 0, -9.81, physicsClientId=client)
    try:
        first = _quiet(Bridge, model, client=client, dt=DT)
        first.step()
        ids = {pybullet.getBodyUniqueId(i, physicsClientId=client)
               for i in range(pybullet.getNumBodies(physicsClientId=client))}
        if how == "resetSimulation":
            pybullet.resetSimulation(physicsClientId=client)
        else:
            pybullet.disconnect(client)
            assert pybullet.connect(pybullet.DIRECT) == client   # (PyBullet's id reuse: the habit's point)
        pybullet.setGravity(0, 0, -9.81, physicsClientId=client)
        boxes = [_box(client, x=5.0), _box(client)]
        assert boxes[1] in ids - {first.body}   # the box under the ball has the old query sphere's id
        second = _quiet(Bridge, model, client=client, dt=DT)
        got = _bounce(second)
        second.close()
    finally:
        pybullet.disconnect(client)
    _check_bounce(got, engine)


FREE_BALL = f"""<robot name="free_ball"><link name="ball"><inertial><origin xyz="0 0 0"/><mass value="1"/>
<inertia ixx="0.001" ixy="0" ixz="0" iyy="0.001" iyz="0" izz="0.001"/></inertial>
<collision><geometry><sphere radius="{RADIUS}"/></geometry></collision></link>
<biobullet version="1"><gravity xyz="0 0 0"/><base type="floating"/>
<contact name="C" link="ball" xyz="0 0 0" radius="{RADIUS}" normal_law="kelvin_voigt" stiffness="1e4" damping="0"
 friction_law="none" ground_height="{FAR}"/></biobullet></robot>"""


def test_a_floating_bodys_base_link_contact_beside_another_body_keeps_its_motion(tmp_path):
    """A floating ball whose `<contact>` sits on its base link (PyBullet's link −1) with the matching collision
    sphere, and a box far away in the scene: free flight, x = x0 + v t and a torque-free sphere's constant spin.
    Before, the scene query took link −1 for one of its own query spheres and moved the body there every step
    (resetBasePositionAndOrientation): velocity and spin zeroed, orientation reset, silently."""
    model = load_text(FREE_BALL, tmp_path)
    client = pybullet.connect(pybullet.DIRECT)
    try:
        bridge = Bridge(model, client=client, dt=1e-3)
        _box(client, x=3.0)
        pybullet.resetBaseVelocity(bridge.body, [1.0, 0.5, 0.0], [0.0, 0.0, 2.0], physicsClientId=client)
        for _ in range(200):
            bridge.step()
        position, orientation = pybullet.getBasePositionAndOrientation(bridge.body, physicsClientId=client)
        velocity, spin = pybullet.getBaseVelocity(bridge.body, physicsClientId=client)
        bridge.close()
    finally:
        pybullet.disconnect(client)
    assert np.allclose(velocity, [1.0, 0.5, 0.0], atol=1e-12) and np.allclose(spin, [0.0, 0.0, 2.0], atol=1e-12)
    assert np.allclose(position, [0.2, 0.1, 0.0], atol=1e-12)
    angle = 2.0 * 0.2
    assert np.allclose(orientation, [0.0, 0.0, math.sin(angle / 2), math.cos(angle / 2)], atol=1e-12)


def _head_on(tmp_path, remedy: bool) -> tuple[float, list[str]]:
    """Peak overlap (m) of two FREE_BALLs, each run by its own Bridge on one client, meeting at 1 m/s each without
    gravity; the warnings given. remedy: the second bridge with scene_contacts=False."""
    model = load_text(FREE_BALL, tmp_path)
    client = pybullet.connect(pybullet.DIRECT)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            first = Bridge(model, client=client, dt=1e-5)
            second = Bridge(model, client=client, dt=1e-5, scene_contacts=not remedy)
            for bridge, x, v in ((first, -0.06, 1.0), (second, 0.06, -1.0)):
                pybullet.resetBasePositionAndOrientation(bridge.body, [x, 0, 0], [0, 0, 0, 1], physicsClientId=client)
                pybullet.resetBaseVelocity(bridge.body, [v, 0, 0], [0, 0, 0], physicsClientId=client)
            overlap = 0.0
            for _ in range(4000):
                first.apply()
                second.apply()
                pybullet.stepSimulation(physicsClientId=client)
                gap = (pybullet.getBasePositionAndOrientation(second.body, physicsClientId=client)[0][0]
                       - pybullet.getBasePositionAndOrientation(first.body, physicsClientId=client)[0][0])
                overlap = max(overlap, 2 * RADIUS - gap)
            said = [str(w.message) for w in caught if "another Bridge" in str(w.message)]
            first.close()
            second.close()
    finally:
        pybullet.disconnect(client)
    return overlap, said


def test_two_bridged_bodies_whose_contacts_touch_are_named_once(tmp_path):
    """Two bridged balls, each with a `<contact>` on its link (Kelvin–Voigt k = 1e4 N/m, no damping), meet head on:
    each bridge finds the touch and applies its law and the reaction, so the pair bears 2k — peak overlap
    v_rel √(m_r/2k) = 0.0100 m where one law gives v_rel √(m_r/k) = 0.0141 m (m_r = 0.5 kg, v_rel = 2 m/s). Before,
    silently; now one BridgeWarning names it (from the first bridge; the second names it too, each once), and the
    remedy it gives (scene_contacts=False on one bridge) leaves one law: the closed-form overlap to 1e-3."""
    overlap, said = _head_on(tmp_path, remedy=False)
    assert overlap == pytest.approx(2.0 * math.sqrt(0.5 / 2e4), rel=1e-2)   # (what the two laws do, measured)
    assert len(said) == 2 and all("scene_contacts=False" in text for text in said)
    overlap, said = _head_on(tmp_path, remedy=True)
    assert said == []
    assert overlap == pytest.approx(2.0 * math.sqrt(0.5 / 1e4), rel=1e-3)


CHAIN = Path(__file__).resolve().parents[2] / "urdf" / "coupled_chain.urdf"


def _elbow_residual(client: int, body: int) -> float:
    """|elbow − (0.1 + 0.6 s − 0.4 s² + 0.2 s³)| (s: shoulder) from PyBullet's joint states (coupled_chain.urdf's
    polynomial written out)."""
    ids = {pybullet.getJointInfo(body, j, physicsClientId=client)[1].decode(): j
           for j in range(pybullet.getNumJoints(body, physicsClientId=client))}
    s = pybullet.getJointState(body, ids["shoulder"], physicsClientId=client)[0]
    elbow = pybullet.getJointState(body, ids["elbow"], physicsClientId=client)[0]
    return abs(elbow - (0.1 + 0.6 * s - 0.4 * s ** 2 + 0.2 * s ** 3))


def test_a_users_constraint_changed_then_removed_is_named_once(client_240):
    """The user pins the chain's tip with createConstraint, moves the pin with changeConstraint, then removes it
    (removeConstraint) before an apply(). The pinned steps are named once (the constraint) and projected; the step
    in which the pin last acted is seen by the apply() after the removal. Before, that apply() found no constraint
    any more and issued a second warning blaming "a force outside the bridge's solve" (0.0023 rad off at 240 Hz):
    now it is the named constraint's step. After it, every step holds the promise with nothing named."""
    client = client_240
    bridge = _quiet(Bridge, CHAIN, client=client)
    tip = pybullet.getNumJoints(bridge.body, physicsClientId=client) - 1
    after = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for step in range(360):
            if step == 60:
                pin = pybullet.createConstraint(
                    bridge.body, tip, -1, -1, pybullet.JOINT_POINT2POINT, [0, 0, 0], [0, 0, 0],
                    list(pybullet.getLinkState(bridge.body, tip, physicsClientId=client)[0]), physicsClientId=client)
            elif step == 120:
                pybullet.changeConstraint(pin, [0.1, 0.0, 0.5], maxForce=50.0, physicsClientId=client)
            elif step == 200:
                pybullet.removeConstraint(pin, physicsClientId=client)
            bridge.apply(generalized={"shoulder": 2.0 * math.sin(6.0 * bridge.time)})
            pybullet.stepSimulation(physicsClientId=client)
            if step >= 200:
                after.append(_elbow_residual(client, bridge.body))
    said = [str(w.message) for w in caught if issubclass(w.category, CouplingWarning)]
    assert len(said) == 1 and f"PyBullet constraint {pin}" in said[0], said
    assert max(after) <= PROMISE


@pytest.mark.parametrize("enable", [0, 1])
def test_pybullets_contact_switched_on_again_for_a_contact_pair_is_named(engine, tmp_path, enable):
    """The bridge switches PyBullet's rigid contact off for every (contact link, scene body) pair; the user calls
    setCollisionFilterPair on that pair. enableCollision=0 (as the bridge left it): the ball bounces as the engine's
    on a ground at the box top, nothing said. enableCollision=1: PyBullet's rigid contact holds the ball at the top
    (no rebound: lowest and last z 0.24999 m, where the engine's Hu–Guo ball rebounds to 0.278 m), silently before;
    now one BridgeWarning at the onset names the pair and the call."""
    model = load_text(drop_urdf({**HU_GUO, "ground_height": FAR}, radius=RADIUS), tmp_path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with Bridge(model, dt=DT, initial={"drop": Z0}) as bridge:
            box = _box(bridge.client)
            bridge.step()   # (the bridge scans the new box: its filter pair off)
            pybullet.setCollisionFilterPair(bridge.body, box, bridge.joint_index["drop"], -1, enable,
                                            physicsClientId=bridge.client)
            if enable:
                for _ in range(int(round(T_END / DT))):
                    bridge.step()
            else:
                _check_bounce(_bounce(bridge), engine)
    said = [str(w.message) for w in caught if "rigid contact" in str(w.message)]
    assert len(said) == enable
    assert all("setCollisionFilterPair" in text and f"body {box}" in text for text in said)


def _no_collision_ball(tmp_path):
    """The drop ball without its collision sphere (the bridge then queries the scene with a sphere body of its own),
    its file's ground far below."""
    text = drop_urdf({**HU_GUO, "ground_height": FAR}, radius=RADIUS)
    return load_text(text[:text.index("<collision>")] + text[text.index("</collision>") + len("</collision>"):],
                     tmp_path)


def test_an_old_episodes_bridge_closed_late_leaves_the_new_episodes_bodies(tmp_path, client_240):
    """An episode loop: resetSimulation, a box and a new Bridge, then the old episode's bridge closed (a finally
    clause, a context manager left late). Before, its close() removed its query sphere by id — now the new
    robot's id — and the new bridge's next step raised BridgeClosedError ("body 1 is gone"). Now it removes only
    bodies that still carry its own mark: every body of the new episode stays and the new bridge steps on."""
    client = client_240
    model = _no_collision_ball(tmp_path)
    old = _quiet(Bridge, model, client=client, dt=DT)
    pybullet.resetSimulation(physicsClientId=client)
    pybullet.setGravity(0.0, 0.0, -9.81, physicsClientId=client)
    box = _box(client)
    new = _quiet(Bridge, model, client=client, dt=DT)

    def bodies() -> set[int]:
        return {pybullet.getBodyUniqueId(i, physicsClientId=client)
                for i in range(pybullet.getNumBodies(physicsClientId=client))}

    made = bodies()
    assert {box, new.body} < made and old.body in made   # (ids reused: the habit's point)
    old.close()
    assert bodies() == made
    new.step()
    new.close()
    assert bodies() == {box}


@pytest.mark.parametrize("scene", [True, False])
def test_a_ground_body_removed_mid_run_leaves_the_files_ground(engine, tmp_path, scene):
    """`ground_body=` a box whose top is the file's `<contact>` ground (its geometry queried from PyBullet); the
    user removes the box before the ball lands. Before, getClosestPoints found nothing any more and the contact had
    no ground at all: the ball fell through where the file's ground is (−0.17 m at 0.3 s), silently. Now one
    BridgeWarning names the body and the contact, which takes the file's own ground: the engine's bounce on it."""
    model = load_text(drop_urdf({**HU_GUO, "ground_height": repr(TOP)}, radius=RADIUS), tmp_path)
    client = pybullet.connect(pybullet.DIRECT)
    pybullet.setGravity(0.0, 0.0, -9.81, physicsClientId=client)
    try:
        box = _box(client)
        bridge = Bridge(model, client=client, dt=DT, initial={"drop": Z0}, ground_body=box, scene_contacts=scene)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            pybullet.removeBody(box, physicsClientId=client)
            got = _bounce(bridge)
            intervals = bridge.contacts.intervals()
        bridge.close()
    finally:
        pybullet.disconnect(client)
    said = [str(w.message) for w in caught if "ground_body" in str(w.message)]
    assert len(said) == 1 and f"PyBullet body {box}" in said[0] and "'C'" in said[0]
    assert "body" not in intervals[0]   # the file's ground, not a scene body
    _check_bounce(got, engine)


def _chain_habit(habit: str, client: int, body: int) -> None:
    ids = {pybullet.getJointInfo(body, j, physicsClientId=client)[1].decode(): j
           for j in range(pybullet.getNumJoints(body, physicsClientId=client))}
    joints, elbow = list(ids.values()), ids["elbow"]   # (the elbow's child link is the coupled one)
    if habit == "cone friction, solver iterations":
        pybullet.setPhysicsEngineParameter(enableConeFriction=0, numSolverIterations=3, physicsClientId=client)
    elif habit == "friction of a link out of contact":
        pybullet.changeDynamics(body, elbow, lateralFriction=2.0, spinningFriction=0.1, rollingFriction=0.1,
                                physicsClientId=client)
    elif habit == "force-torque sensor":
        pybullet.enableJointForceTorqueSensor(body, elbow, 1, physicsClientId=client)
    elif habit == "motors switched off":
        pybullet.setJointMotorControlArray(body, joints, pybullet.VELOCITY_CONTROL, forces=[0.0] * len(joints),
                                           physicsClientId=client)
    elif habit == "world-frame force on the dependent link":
        pybullet.applyExternalForce(body, elbow, [0, 0, 5], [0.1, 0, 0], pybullet.WORLD_FRAME, physicsClientId=client)
    elif habit == "torque array on every joint":
        pybullet.setJointMotorControlArray(body, joints, pybullet.TORQUE_CONTROL, forces=[0.5] * len(joints),
                                           physicsClientId=client)


@pytest.mark.parametrize("habit, named", [
    ("cone friction, solver iterations", False), ("friction of a link out of contact", False),
    ("force-torque sensor", False), ("motors switched off", False),
    ("world-frame force on the dependent link", True), ("torque array on every joint", True)])
def test_chain_habits_hold_or_are_named_once(client_240, habit, named):
    """The coupled chain at 240 Hz, the habit done before every apply() of steps 10–69. Habits that change nothing
    the bridge solves hold the promise after every step with nothing said; forces outside the solve are named once
    (CouplingWarning) and the state is back on the coupling after every apply() (the file's polynomial on PyBullet's
    joint states, both)."""
    client = client_240
    bridge = _quiet(Bridge, CHAIN, client=client)
    after_step, after_apply = [], []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for step in range(120):
            if 10 <= step < 70:
                _chain_habit(habit, client, bridge.body)
            bridge.apply(generalized={"shoulder": 2.0 * math.sin(6.0 * bridge.time)})
            after_apply.append(_elbow_residual(client, bridge.body))
            pybullet.stepSimulation(physicsClientId=client)
            after_step.append(_elbow_residual(client, bridge.body))
    said = [str(w.message) for w in caught if issubclass(w.category, CouplingWarning)]
    assert len(said) == int(named), said
    assert max(after_apply) <= PROMISE
    assert max(after_step if not named else after_step[71:]) <= PROMISE


def test_an_old_episodes_bridge_closed_late_leaves_the_new_episodes_constraints(client_240):
    """The knee four-bar with `native_loops=True` (its loop as a PyBullet constraint): resetSimulation, a new
    Bridge, then the old one closed. PyBullet numbers constraints afresh, so the new loop constraint has the old
    one's id; before, the old bridge's close() removed it (no constraint left in the client) before finding that the
    body was not its own any more. Now it removes nothing that is not on its own body."""
    client = client_240
    old = _quiet(Bridge, "fourbar_knee", client=client, native_loops=True)
    pybullet.resetSimulation(physicsClientId=client)
    pybullet.setGravity(0.0, 0.0, -9.81, physicsClientId=client)
    new = _quiet(Bridge, "fourbar_knee", client=client, native_loops=True)
    (loop,) = new.native_constraints.values()
    assert loop in old.native_constraints.values()   # (the same id: the habit's point)
    old.close()
    assert [pybullet.getConstraintUniqueId(i, physicsClientId=client)
            for i in range(pybullet.getNumConstraints(physicsClientId=client))] == [loop]
    assert pybullet.getConstraintInfo(loop, physicsClientId=client)[0] == new.body
    new.close()
    assert pybullet.getNumConstraints(physicsClientId=client) == 0


@pytest.mark.parametrize("ground_body, words", [
    (99, "no body 99 in PyBullet client"), (-1, "no body -1 in PyBullet client"),
    (0.5, "argument 'ground_body' is float"), ("0", "argument 'ground_body' is str"),
    (True, "argument 'ground_body' is bool"), ("own", "the bridge's own body")])
def test_a_ground_body_that_is_no_other_body_is_one_model_error(tmp_path, client_240, ground_body, words):
    """`ground_body=` an id of no body (a typo, a body of another client), a float, a text, a bool, or the robot
    itself. Before, every one was taken: int(0.5) and int("0") named the box by accident, 99 left the contact
    without any ground (the ball fell through the file's ground, silently). Now one ModelError names the argument."""
    client = client_240
    _box(client)
    model = load_text(drop_urdf({**HU_GUO, "ground_height": repr(TOP)}, radius=RADIUS), tmp_path)
    if ground_body == "own":
        body = pybullet.loadURDF(str(model.file), useFixedBase=True, flags=pybullet.URDF_USE_INERTIA_FROM_FILE,
                                 physicsClientId=client)
        arguments = {"body_id": body, "ground_body": body}
    else:
        arguments = {"ground_body": ground_body}
    with pytest.raises(ModelError, match="ground_body") as raised:
        Bridge(model, client=client, dt=DT, **arguments)
    assert words in str(raised.value)


@pytest.mark.parametrize("steps", [2, 3])
def test_the_clock_counts_the_steps_of_a_frame_skip(client_240, steps):
    """stepSimulation() `steps` times per apply() (an action repeat) on the coupled chain at 240 Hz, 120 apply()
    calls: PyBullet's clock is at 120 · steps · dt. The skip is named once and projected every time; before, the
    bridge's clock counted one step per apply() (0.5 s / 1 s behind PyBullet's after 120 calls), so a row that is a
    function of time would have been held at a time PyBullet had left. Now it counts the skipped steps wherever the
    watch recognises them — by the residual they leave; a skip from rest that leaves the rows within the promise
    is not seen (here one, at the start): within one step of PyBullet's."""
    client = client_240
    bridge = _quiet(Bridge, CHAIN, client=client)
    dt = bridge.dt
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(120):
            bridge.apply(generalized={"shoulder": 2.0 * math.sin(6.0 * bridge.time)})
            for _ in range(steps):
                pybullet.stepSimulation(physicsClientId=client)
        bridge.apply()   # (reads the last calls' steps; its own dt is the coming step's)
    said = [str(w.message) for w in caught if f"ran {steps} times" in str(w.message)]
    assert len(said) == 1
    assert abs((bridge.time - dt) - 120 * steps * dt) <= dt * (1 + 1e-9)


def test_two_bridges_each_calling_step_are_told_to_apply_each_then_step_once(client_240):
    """Two coupled chains on one client, each driven by its own `bridge.step()`: every step() steps the whole
    client, so each body gets two steps per apply(). Before, the frame skip's remedy said "use bridge.step()" —
    what the user did. Now it names the other bridge's body and says: apply() of every bridge, then one
    stepSimulation(); the second bridge's first apply(), whose body the first's step() stepped without its torques,
    names that too (before, only resets and restoreState). With that loop both hold the promise after every step,
    nothing named."""
    client = client_240
    first, second = _quiet(Bridge, CHAIN, client=client), _quiet(Bridge, CHAIN, client=client)
    pybullet.resetBasePositionAndOrientation(second.body, [1, 0, 0], [0, 0, 0, 1], physicsClientId=client)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(24):
            for bridge in (first, second):
                bridge.step(generalized={"shoulder": 2.0 * math.sin(6.0 * bridge.time)})
    said = [str(w.message) for w in caught if "ran 2 times" in str(w.message)]
    assert len(said) == 2
    assert f"bodies [{second.body}]" in said[0] + said[1] and f"bodies [{first.body}]" in said[0] + said[1]
    assert all("stepSimulation() once" in text for text in said)
    assert len([w for w in caught if "before this bridge's first apply()" in str(w.message)]) == 1
    first.close()
    second.close()
    first, second = _quiet(Bridge, CHAIN, client=client), _quiet(Bridge, CHAIN, client=client)
    pybullet.resetBasePositionAndOrientation(second.body, [1, 0, 0], [0, 0, 0, 1], physicsClientId=client)
    worst = 0.0
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(120):
            for bridge in (first, second):
                bridge.apply(generalized={"shoulder": 2.0 * math.sin(6.0 * bridge.time)})
            pybullet.stepSimulation(physicsClientId=client)
            worst = max(worst, _elbow_residual(client, first.body), _elbow_residual(client, second.body))
    assert not [w for w in caught if issubclass(w.category, CouplingWarning)]
    assert worst <= PROMISE


def _settle_then_push(client: int, sleeping: bool) -> tuple[np.ndarray, list[float], list[str]]:
    """The coupled chain damped to rest for 10 s at 240 Hz (`generalized` −5 v), sleeping enabled first or not,
    then 3 N·m on the shoulder for 1 s: (q at the end, elbow residual after each pushed step, CouplingWarnings)."""
    bridge = _quiet(Bridge, CHAIN, client=client)
    after = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if sleeping:
            pybullet.changeDynamics(bridge.body, -1, activationState=pybullet.ACTIVATION_STATE_ENABLE_SLEEPING,
                                    physicsClientId=client)
        for _ in range(2400):
            bridge.apply(generalized={"shoulder": -5.0 * bridge.generalized_state()[2][0]})
            pybullet.stepSimulation(physicsClientId=client)
        for _ in range(240):
            bridge.apply(generalized={"shoulder": 3.0})
            pybullet.stepSimulation(physicsClientId=client)
            after.append(_elbow_residual(client, bridge.body))
    q = bridge.generalized_state()[1]
    bridge.close()
    return q, after, [str(w.message) for w in caught if issubclass(w.category, CouplingWarning)]


def test_a_body_let_sleep_moves_again_when_the_bridge_pushes_it(client_240):
    """changeDynamics(activationState=ACTIVATION_STATE_ENABLE_SLEEPING) on the bridged chain (the bridge disables
    sleeping at construction): at rest PyBullet puts it to sleep and stops stepping it. Its state then reads equal
    bit for bit after a step, which the bridge took for apply() called twice: under 3 N·m on the shoulder for 1 s
    it never moved (q stayed at rest), silently. Now the first such apply() wakes the body and disables sleeping;
    the step that slept is named once, and the run ends where the same run without sleeping ends (to 1e-5 rad:
    measured 8e-7, the one step's difference) with the coupling held after every pushed step."""
    awake, _, quiet = _settle_then_push(client_240, sleeping=False)
    assert quiet == []
    q, after, said = _settle_then_push(client_240, sleeping=True)
    assert len(said) == 1 and "asleep" in said[0], said
    assert np.allclose(q, awake, atol=1e-5)
    assert max(after) <= PROMISE


def _rest_then_lift(tmp_path, sleeping: bool) -> tuple[float, float]:
    """The drop ball (no rows) resting on its file's ground for 4 s at 1 ms, sleeping enabled first or not, then
    lifted by 20 N on its joint for 0.3 s: (z at the end, the bridge's clock)."""
    model = load_text(drop_urdf({"normal_law": "hunt_crossley", "stiffness": "1e5", "restitution": "0.5",
                                 "ground_height": "0"}, radius=RADIUS), tmp_path)
    with Bridge(model, dt=1e-3, initial={"drop": 0.06}) as bridge:
        if sleeping:
            pybullet.changeDynamics(bridge.body, -1, activationState=pybullet.ACTIVATION_STATE_ENABLE_SLEEPING,
                                    physicsClientId=bridge.client)
        for _ in range(4000):
            bridge.step()
        for _ in range(300):
            bridge.step(tau={"drop": 20.0})
        return float(bridge.state()[1][0]), bridge.time


def test_a_resting_body_without_rows_let_sleep_keeps_its_clock_and_moves(tmp_path):
    """The same habit on the plan without rows: the ball at rest on its contact fell asleep, every later step read
    as apply() repeated — the clock stopped (2.386 s where PyBullet was at 4.3 s) and the lift started late (z 0.5164
    instead of 0.5240 m), silently. Now the first such apply() wakes it for good: the run is the awake run's (z to
    1e-9 m; the clock within the 2 steps that slept, counted as repeats)."""
    z_awake, t_awake = _rest_then_lift(tmp_path, sleeping=False)
    z, t = _rest_then_lift(tmp_path, sleeping=True)
    assert z == pytest.approx(z_awake, abs=1e-9)
    assert abs(t - t_awake) <= 2e-3 + 1e-9


def test_a_cleanup_that_removes_every_body_but_the_robot_leaves_the_contacts_working(engine, tmp_path, client_240):
    """A user's scene reset: removeBody of every body but the robot — the bridge's query sphere with them — then a
    new box (PyBullet gives it the sphere's id). Before, the contact queried the removed sphere (no contact with
    anything) and the box at its id was no scene body: the ball fell through it (z 0.10 m at 0.2 s over a box top
    at 0.2 m), silently. Now the bridge makes its query sphere again: the engine's bounce on the box."""
    client = client_240
    bridge = _quiet(Bridge, _no_collision_ball(tmp_path), client=client, dt=DT)
    _box(client, x=5.0)
    bridge.step()
    for body in {pybullet.getBodyUniqueId(i, physicsClientId=client)
                 for i in range(pybullet.getNumBodies(physicsClientId=client))} - {bridge.body}:
        pybullet.removeBody(body, physicsClientId=client)
    box = _box(client)
    got = _bounce(bridge)
    assert pybullet.getBasePositionAndOrientation(box, physicsClientId=client)[0] == (0.0, 0.0, TOP - 0.1)
    bridge.close()
    _check_bounce(got, engine)


def test_a_cleanup_that_removes_the_bridges_query_plane_leaves_the_files_ground(engine, tmp_path, client_240):
    """contact_geometry="pybullet": the bridge queries a plane body of its own for the file's ground. The user's
    cleanup removes every body but the robot, the plane with them; before, the contact then had no ground (the
    ball fell through where the file's ground is). Now the plane is made again: the engine's bounce on it."""
    client = client_240
    model = load_text(drop_urdf({**HU_GUO, "ground_height": repr(TOP)}, radius=RADIUS), tmp_path)
    bridge = _quiet(Bridge, model, client=client, dt=DT, contact_geometry="pybullet", scene_contacts=False)
    assert bridge.contacts.geometry_of("C") == "pybullet"
    bridge.step()
    for body in {pybullet.getBodyUniqueId(i, physicsClientId=client)
                 for i in range(pybullet.getNumBodies(physicsClientId=client))} - {bridge.body}:
        pybullet.removeBody(body, physicsClientId=client)
    got = _bounce(bridge)
    bridge.close()
    _check_bounce(got, engine)
