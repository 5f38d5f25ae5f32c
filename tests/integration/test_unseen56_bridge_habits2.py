"""Habits of a PyBullet user's own loop with a Bridge that test_unseen{3,4,6,12,15,28,32,33,34,51}_*.py and
test_bridge_*.py do not cover (bridgeprobe2).

Sub-steps on a model with a stiff element: PyBullet's `numSubSteps` holds the bridge's torque over every sub-step,
so the step of a linear element (stiffness k_r, damping c_r per unit of effective inertia) becomes
x⁺ = x + dt v + c dt² a, v⁺ = v + dt a with c = (k+1)/(2k). Its step matrix has the determinant
1 − c_r dt + (1 − c) k_r dt², above 1 — growth — beyond dt = c_r / ((1 − c) k_r) (closed form), far inside the
one-step limit k_r dt² + 2 c_r dt < 4 the bridge checked (and whose message recommended sub-steps). Oracle: PyBullet
itself, the spring applied by hand as TORQUE_CONTROL held over the sub-steps (no bridge), decays 10 % inside that
edge and grows 10 % beyond it; the closed form gives the edge."""
from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

pybullet = pytest.importorskip("pybullet")

from biobullet.bridge import Bridge  # noqa: E402
from biobullet.bridge.connection import load_body  # noqa: E402
from biobullet.core.errors import ModelError  # noqa: E402
from biobullet.loader import load_text  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit" / "bridge"))
from test_bridge_stability import DAMPING, MASS, STIFFNESS, slider  # noqa: E402

K_R, C_R = STIFFNESS / MASS, DAMPING / MASS   # the slider's exact w = 1/m


def held_weight(substeps: int) -> float:
    """c of x⁺ = x + dt v + c dt² a for `substeps` semi-implicit sub-steps with a held (closed form)."""
    return (substeps + 1.0) / (2.0 * substeps)


def edge(substeps: int, k_r: float = K_R, c_r: float = C_R) -> float:
    """The step (s) beyond which the held spring grows: the determinant 1 − c_r dt + (1 − c) k_r dt² reaches 1."""
    return c_r / ((1.0 - held_weight(substeps)) * k_r)


def bare_pybullet_peaks(model, dt: float, substeps: int, steps: int, k: float = STIFFNESS,
                        c: float = DAMPING) -> tuple[float, float]:
    """(max |x| over the first, over the last tenth of `steps`) of the slider stepped by PyBullet alone with
    τ = −k x − c ẋ held over `substeps` sub-steps (no bridge; PyBullet's velocity clamp and damping off)."""
    client = pybullet.connect(pybullet.DIRECT)
    try:
        pybullet.setGravity(0, 0, 0, physicsClientId=client)
        pybullet.setTimeStep(dt, physicsClientId=client)
        pybullet.setPhysicsEngineParameter(numSubSteps=substeps, physicsClientId=client)
        body = load_body(model, client, None)
        pybullet.setJointMotorControl2(body, 0, pybullet.VELOCITY_CONTROL, force=0, physicsClientId=client)
        pybullet.changeDynamics(body, 0, linearDamping=0, angularDamping=0, jointDamping=0, maxJointVelocity=1e9,
                                physicsClientId=client)
        pybullet.resetJointState(body, 0, 0.01, 0.0, physicsClientId=client)
        trace = []
        for _ in range(steps):
            x, v = pybullet.getJointState(body, 0, physicsClientId=client)[:2]
            trace.append(abs(x))
            pybullet.setJointMotorControl2(body, 0, pybullet.TORQUE_CONTROL, force=-k * x - c * v,
                                           physicsClientId=client)
            pybullet.stepSimulation(physicsClientId=client)
        tenth = steps // 10
        return max(trace[:tenth]), max(trace[-tenth:])
    finally:
        pybullet.disconnect(client)


@pytest.fixture(scope="module")
def sprung(tmp_path_factory):
    return load_text(slider(f'<joint_spring name="stiff" joint="slide" stiffness="{STIFFNESS}" '
                            f'damping="{DAMPING}"/>'), tmp_path_factory.mktemp("sprung"))


def test_sub_steps_shrink_a_springs_stable_step_as_pybullet_does(sprung):
    """4 sub-steps: the edge is 0.107 ms, 26× inside the one-step limit 2.79 ms. PyBullet alone decays at 0.9× and
    grows at 1.1× it. Before, the bridge took 2× the edge with set_time_step(dt, 4) and the slider grew from 1 cm to
    1.83 m in 3000 steps, silently (only at 10× did a DivergenceError come). Now set_time_step refuses beyond the
    edge, naming the element and the sub-steps (and leaving the client's step as it was), and inside it the
    bridge's run decays as PyBullet's does."""
    h = edge(4)
    early, late = bare_pybullet_peaks(sprung, 0.9 * h, 4, 6000)
    assert late < 0.7 * early
    early, late = bare_pybullet_peaks(sprung, 1.1 * h, 4, 6000)
    assert late > 1.5 * early
    with Bridge(sprung, dt=0.9 * h) as bridge:
        with pytest.raises(ModelError) as error:
            bridge.set_time_step(1.1 * h, substeps=4)
        text = str(error.value)
        assert '<joint_spring name="stiff"' in text and "4 PyBullet sub-steps" in text and "no sub-steps" in text
        engine = pybullet.getPhysicsEngineParameters(physicsClientId=bridge.client)
        assert engine["fixedTimeStep"] == pytest.approx(0.9 * h, rel=1e-12) and engine["numSubSteps"] <= 1
        bridge.set_time_step(0.9 * h, substeps=4)
        trace = []
        for _ in range(6000):
            bridge.step()
            trace.append(abs(bridge.state()[1][0]))
    assert max(trace[-600:]) < 0.7 * max(trace[:600])


def test_a_client_with_sub_steps_is_checked_at_construction_and_mid_run(sprung):
    """numSubSteps set on the user's client before the Bridge, or by setPhysicsEngineParameter mid-run: one
    ModelError naming the element, at construction or at the next apply() (before, both were taken)."""
    client = pybullet.connect(pybullet.DIRECT)
    try:
        pybullet.setGravity(0, 0, 0, physicsClientId=client)
        pybullet.setPhysicsEngineParameter(numSubSteps=4, physicsClientId=client)
        with pytest.raises(ModelError, match="stiff.*4 PyBullet sub-steps|4 PyBullet sub-steps.*stiff"):
            Bridge(sprung, client=client, dt=2.0 * edge(4))
        pybullet.setPhysicsEngineParameter(numSubSteps=0, physicsClientId=client)
        bridge = Bridge(sprung, client=client, dt=2.0 * edge(4))
        for _ in range(20):
            bridge.apply()
            pybullet.stepSimulation(physicsClientId=client)
        pybullet.setPhysicsEngineParameter(numSubSteps=4, physicsClientId=client)
        with pytest.raises(ModelError, match="4 PyBullet sub-steps"):
            for _ in range(5):
                bridge.apply()
                pybullet.stepSimulation(physicsClientId=client)
    finally:
        pybullet.disconnect(client)


def test_an_undamped_spring_has_no_stable_step_with_sub_steps(tmp_path):
    """Without damping the determinant is 1 + (1 − c) k_r dt² > 1 at every dt: PyBullet alone grows at a tenth of
    the one-step limit with 2 sub-steps (it holds without them), and the bridge refuses the sub-steps there."""
    model = load_text(slider(f'<joint_spring name="bare" joint="slide" stiffness="{STIFFNESS}" damping="0"/>'),
                      tmp_path)
    dt = 0.1 * 2.0 / np.sqrt(K_R)
    early, late = bare_pybullet_peaks(model, dt, 0, 600, c=0.0)
    assert late < 1.01 * early   # semi-implicit Euler without sub-steps: bounded
    early, late = bare_pybullet_peaks(model, dt, 2, 600, c=0.0)
    assert late > 5.0 * early
    with Bridge(model, dt=dt) as bridge:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            bridge.set_time_step(dt)   # without sub-steps it is stable, and nothing is said
        with pytest.raises(ModelError, match="bare.*2 PyBullet sub-steps|2 PyBullet sub-steps.*bare"):
            bridge.set_time_step(dt, substeps=2)


def test_a_bullet_client_made_in_the_call_stays_connected_while_the_bridge_is_open():
    """`Bridge(model, client=BulletClient(p.DIRECT))`: a BulletClient disconnects its client when it is collected,
    and the bridge kept only its id, so the first step raised BridgeClosedError ("client 0 was disconnected").
    Now the bridge holds the object while it is open: the run is the one on an int client of the same scene, bit for
    bit, and close() lets it go (the connection ends with the object, none is left behind)."""
    import gc

    from pybullet_utils.bullet_client import BulletClient

    from biobullet import load_model
    chain = load_model("coupled_chain")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # (the client's gravity set to the model's: one BridgeWarning each)
        bridge = Bridge(chain, client=BulletClient(pybullet.DIRECT), dt=1e-3)
        gc.collect()
        client = pybullet.connect(pybullet.DIRECT)
        try:
            reference = Bridge(chain, client=client, dt=1e-3)
            for _ in range(50):
                bridge.step()
                reference.step()
            assert np.array_equal(bridge.state()[1], reference.state()[1])
            assert np.array_equal(bridge.state()[2], reference.state()[2])
        finally:
            pybullet.disconnect(client)
    held = bridge.client
    bridge.close()
    gc.collect()
    assert not pybullet.isConnected(physicsClientId=held)


def _pivot_gap(client: int, info) -> float:
    """|world point of the parent pivot − world point of the child pivot| of a PyBullet POINT2POINT constraint
    (`getConstraintInfo`: pivots in the links' COM frames), from PyBullet's own link states (m)."""
    points = []
    for body, link, pivot in ((info[0], info[1], info[6]), (info[2], info[3], info[7])):
        if link < 0:
            position, orientation = pybullet.getBasePositionAndOrientation(body, physicsClientId=client)
        else:
            position, orientation = pybullet.getLinkState(body, link, computeForwardKinematics=1,
                                                          physicsClientId=client)[:2]
        rotation = np.array(pybullet.getMatrixFromQuaternion(orientation)).reshape(3, 3)
        points.append(np.asarray(position) + rotation @ np.asarray(pivot))
    return float(np.linalg.norm(points[0] - points[1]))


def test_a_native_loop_removed_by_a_cleanup_of_every_constraint_is_named():
    """Bridge(native_loops=True) closes the knee four-bar with a PyBullet POINT2POINT constraint. A user's cleanup
    of every constraint (getNumConstraints / removeConstraint) removed it too: the loop opened by 3.4e-2 m within
    0.3 s at 1 ms (PyBullet's own link states at the constraint's pivots), and nothing was said — no row of the
    bridge holds a native loop. Now one CouplingWarning names the loop and removeConstraint at the next checked step."""
    from biobullet.bridge.outside import CouplingWarning
    client = pybullet.connect(pybullet.DIRECT)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            bridge = Bridge("fourbar_knee", client=client, dt=1e-3, native_loops=True)
            (name, cid), = bridge.native_constraints.items()
            info = pybullet.getConstraintInfo(cid, physicsClientId=client)
            closed = []
            for _ in range(20):
                bridge.apply()
                pybullet.stepSimulation(physicsClientId=client)
                closed.append(_pivot_gap(client, info))
            assert not [w for w in caught if issubclass(w.category, CouplingWarning)]
            for k in reversed(range(pybullet.getNumConstraints(physicsClientId=client))):
                pybullet.removeConstraint(pybullet.getConstraintUniqueId(k, physicsClientId=client),
                                          physicsClientId=client)
            opened = []
            for _ in range(300):
                bridge.apply()
                pybullet.stepSimulation(physicsClientId=client)
                opened.append(_pivot_gap(client, info))
        said = [str(w.message) for w in caught if issubclass(w.category, CouplingWarning)]
        assert max(closed) < 1e-4 and max(opened) > 1e-2
        assert len(said) == 1 and f"native loop {name!r}" in said[0] and "removeConstraint" in said[0], said
        bridge.close()
    finally:
        pybullet.disconnect(client)


PENDULUM = """<robot name="pend"><link name="base"/>
 <joint name="hinge" type="continuous"><parent link="base"/><child link="arm"/><axis xyz="0 1 0"/></joint>
 <link name="arm"><inertial><origin xyz="0.3 0 0"/><mass value="1"/>
  <inertia ixx="0.001" ixy="0" ixz="0" iyy="0.001" iyz="0" izz="0.001"/></inertial></link>
 <biobullet version="1"><gravity xyz="0 0 -9.81"/>
  <contact name="tip" link="arm" xyz="0.3 0 0" radius="0.05" ground_height="-50" normal_law="hu_guo"
   stiffness="1e5" restitution="0.5"/></biobullet></robot>"""


def _swing_onto_a_box(model, path: Path, height: float) -> tuple[float, list, float]:
    """(hinge angle after 0.6 s, contact intervals (start, body), PyBullet's tip height at the first onset) of the
    pendulum loaded by the user at basePosition (0, 0, height) above a static box whose top is 0.2 m below it."""
    client = pybullet.connect(pybullet.DIRECT)
    try:
        pybullet.setGravity(0, 0, -9.81, physicsClientId=client)
        body = pybullet.loadURDF(str(path), basePosition=[0, 0, height], useFixedBase=True,
                                 flags=pybullet.URDF_USE_INERTIA_FROM_FILE, physicsClientId=client)
        shape = pybullet.createCollisionShape(pybullet.GEOM_BOX, halfExtents=[1, 1, 0.1], physicsClientId=client)
        box = pybullet.createMultiBody(0, shape, basePosition=[0, 0, height - 0.3], physicsClientId=client)
        bridge = Bridge(model, client=client, dt=1e-3, body_id=body)
        onset_z = np.nan
        for _ in range(600):
            bridge.step()
            if np.isnan(onset_z) and bridge.contacts.intervals():
                onset_z = pybullet.getLinkState(body, 0, computeForwardKinematics=1, physicsClientId=client)[0][2]
        intervals = [(round(i["start"], 6), i.get("body") == box) for i in bridge.contacts.intervals()]
        return float(bridge.state()[1][0]), intervals, onset_z - height
    finally:
        pybullet.disconnect(client)


def test_scene_contacts_of_a_fixed_base_loaded_elsewhere_are_where_pybullet_has_it(tmp_path):
    """A fixed base the user loaded at a basePosition is taken (test_unseen6: the same robot in an inertial frame),
    but its scene contacts were queried where the model's kinematics put the links (base at the origin): hung 1 m
    up over a box 0.2 m below its hinge, the tip's sphere was looked for 1 m below the box, met nothing and the arm
    passed through the box (PyBullet's rigid contact is off for contact links): 3.10 rad after 0.6 s, no contact.
    Now the scene is PyBullet's world: the run is the same as with the base at the origin (translation
    invariance), and each onset is where PyBullet's own link state puts the sphere on the box top (0.2 m below the
    hinge plus its 0.05 m radius, to two steps' travel)."""
    model = load_text(PENDULUM, tmp_path)
    path = tmp_path / "user.urdf"
    path.write_bytes(model.description.source_text)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # (the client's gravity, PyBullet's inertia of the massless base link)
        angle_0, intervals_0, onset_0 = _swing_onto_a_box(model, path, 0.0)
        angle_1, intervals_1, onset_1 = _swing_onto_a_box(model, path, 1.0)
    assert intervals_0 and all(on_box for _, on_box in intervals_0)
    assert intervals_1 == intervals_0
    assert abs(angle_1 - angle_0) <= 1e-9
    for onset in (onset_0, onset_1):   # the tip moves ≈ 1.5 m/s at the onset, read after the step that logged it
        assert abs(onset - (-0.2 + 0.05)) <= 2 * 1.6e-3   # (two steps' travel)


def test_a_ground_body_contact_of_a_fixed_base_loaded_elsewhere_has_its_friction_arm(tmp_path):
    """The tip carries its collision sphere, the box is the `ground_body` (PyBullet's geometry: getClosestPoints
    gives the point in PyBullet's world) and the contact has friction. The point's Jacobian was taken at that world
    point minus the model's link origin (base at the origin): 1 m off for a base loaded 1 m up, so the friction
    force's torque arm was wrong — one bounce of 116 N where the same scene at the origin has two (172.7 N, 37.4 N).
    Now the run is the origin's (translation invariance; the regularized friction law, v0 = 1e-4 m/s, amplifies
    PyBullet's single-precision geometry at another height: the angles agree to 1e-4 rad)."""
    text = PENDULUM.replace('izz="0.001"/></inertial></link>', 'izz="0.001"/></inertial><collision><origin '
                            'xyz="0.3 0 0"/><geometry><sphere radius="0.05"/></geometry></collision></link>')
    text = text.replace('restitution="0.5"', 'restitution="0.5" friction_law="regularized" mu="0.6" v0="1e-4"')
    model = load_text(text, tmp_path)
    path = tmp_path / "user.urdf"
    path.write_bytes(model.description.source_text)
    runs = []
    for height in (0.0, 1.0):
        client = pybullet.connect(pybullet.DIRECT)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                pybullet.setGravity(0, 0, -9.81, physicsClientId=client)
                body = pybullet.loadURDF(str(path), basePosition=[0, 0, height], useFixedBase=True,
                                         flags=pybullet.URDF_USE_INERTIA_FROM_FILE, physicsClientId=client)
                shape = pybullet.createCollisionShape(pybullet.GEOM_BOX, halfExtents=[1, 1, 0.1],
                                                      physicsClientId=client)
                box = pybullet.createMultiBody(0, shape, basePosition=[0, 0, height - 0.3], physicsClientId=client)
                bridge = Bridge(model, client=client, dt=1e-3, body_id=body, ground_body=box)
                assert bridge.contacts.geometry_of("tip") == "pybullet"
                for _ in range(600):
                    bridge.step()
            runs.append((float(bridge.state()[1][0]),
                         [(i["start"], i["peak_force"]) for i in bridge.contacts.intervals()]))
        finally:
            pybullet.disconnect(client)
    (angle_0, intervals_0), (angle_1, intervals_1) = runs
    assert len(intervals_0) == 2 and len(intervals_1) == 2
    for (start_0, peak_0), (start_1, peak_1) in zip(intervals_0, intervals_1):
        assert start_1 == pytest.approx(start_0, abs=1e-9) and peak_1 == pytest.approx(peak_0, rel=1e-3)
    assert abs(angle_1 - angle_0) <= 1e-4


def test_muscle_forces_on_a_fixed_base_loaded_elsewhere_act_as_at_the_origin(tmp_path):
    """The muscles' path forces go to PyBullet as one force and one torque per body about the model's origin
    (`bridge/muscles.py`), applied at PyBullet's world origin: for a fixed base the user loaded 1 m up, every
    wrench's moment was off by s × F, and the leg of tests/muscle_models.py was 1.64 rad off the same leg at the
    origin after 0.1 s (knee −0.47 rad instead of 1.17), silently. A rigid translation of a fixed-base scene under
    uniform gravity changes nothing: now the two runs agree to round-off."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from muscle_models import LEG_URDF

    from biobullet import load_model
    path = tmp_path / "leg.urdf"
    path.write_text(LEG_URDF)
    leg = load_model(str(path))
    assert not leg.floating_base
    states = []
    for height in (0.0, 1.0):
        client = pybullet.connect(pybullet.DIRECT)
        try:
            pybullet.setGravity(0, 0, -9.81, physicsClientId=client)
            body = pybullet.loadURDF(str(path), basePosition=[0, 0, height], useFixedBase=True,
                                     flags=pybullet.URDF_USE_INERTIA_FROM_FILE, physicsClientId=client)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")   # (PyBullet's inertia of the pelvis is the file's: nothing else)
                bridge = Bridge(leg, client=client, dt=1e-3, body_id=body, initial={"hip": 0.4, "knee": 1.1})
                bridge.set_excitations(0.5, extensor=0.6, flexor=0.3, hip_flexor=0.5)
                for _ in range(100):
                    bridge.step()
            states.append(bridge.state()[1:])
        finally:
            pybullet.disconnect(client)
    (x_0, v_0), (x_1, v_1) = states
    assert abs(x_0[1] - 1.1) > 1e-3   # the muscles moved the knee
    np.testing.assert_allclose(x_1, x_0, rtol=0, atol=1e-12)
    np.testing.assert_allclose(v_1, v_0, rtol=0, atol=1e-10)
