"""PyBullet `spherical` joints on the bridge: the conventions of `conventions.PyBulletMap` (checked against PyBullet's
own kinematics and its own forward dynamics), M and h of `Bridge` against Pinocchio's joint models, the bridge as
semi-implicit Euler on the reference equations, first-order convergence to the reference engine, the CLI, and the
errors for joint functions on spherical joints.

Tolerances. PyBullet stores each link's inertia as the result of its principal-axes diagonalisation (an iterative
eigen-solver): M, h and accelerations on those values agree with the file's to ~3e-11 relative on these links
(measured: M 2.5e-11, h 3.5e-12, one-step forward dynamics 1.9e-11 on the arm, 1e-14 on the pendulum); the tests
allow 1e-9 — a frame or motor error is O(1) (measured 1e2 to 1e3 with the default motor on). Link placements and
velocities: double-precision compositions, 1e-12.
"""
from __future__ import annotations

import csv

import numpy as np
import pytest

p = pytest.importorskip("pybullet")
pin = pytest.importorskip("pinocchio")

from biobullet import load_model  # noqa: E402
from biobullet.algorithms.kinematics import frame_jacobian, frame_placement  # noqa: E402
from biobullet.bridge import Bridge  # noqa: E402
from biobullet.bridge.connection import prepare_body  # noqa: E402
from biobullet.bridge.simulation import simulate_bridge  # noqa: E402
from biobullet.conventions import PyBulletMap  # noqa: E402
from biobullet.core.errors import ModelError  # noqa: E402
from biobullet.validate.oracles import PinocchioOracle  # noqa: E402
from bridge_convergence import bridge_orders  # noqa: E402  (tests/bridge_convergence.py)
import in_process  # noqa: E402  (tests/in_process.py)
from spherical_arms import ARM, ARM_LINKS, COUPLED, PENDULUM, SHOULDER, robot_text  # noqa: E402


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("spherical")
    out = {}
    for name, text in (("pendulum", PENDULUM), ("arm", ARM), ("coupled", COUPLED)):
        out[name] = folder / f"{name}.urdf"
        out[name].write_text(text)
    return out


@pytest.fixture
def bullet():
    client = p.connect(p.DIRECT)
    yield client
    p.disconnect(client)


def _mapped(model, client, prepare=True):
    body = p.loadURDF(str(model.file), useFixedBase=not model.floating_base, flags=p.URDF_USE_INERTIA_FROM_FILE,
                      physicsClientId=client)
    mapping = PyBulletMap(model, body, client)
    if prepare:
        prepare_body(model, client, body, mapping.joint_indices, joint_limits=False)
    return mapping


def _random_state(model, seed):
    rng = np.random.default_rng(seed)
    q = model.normalize_configuration(model.neutral_configuration() + 0.6 * rng.normal(size=model.nq))
    q[:4] *= -1.0 if q[3] > 0 else 1.0   # a negative-w quaternion: the sign must survive the round trip
    return q, rng.normal(size=model.nv), rng


# ------------------------------------------------------------------ conventions (PyBullet's own kinematics)
@pytest.mark.parametrize("name, floating", [("pendulum", False), ("arm", False), ("arm", True)])
def test_state_round_trip_and_link_kinematics(files, bullet, name, floating):
    """x → PyBullet → x exactly, and PyBullet's link poses and velocities (getLinkState, its own forward
    kinematics) equal ours: the quaternion and angular velocity conventions of its spherical joints."""
    model = load_model(files[name], floating_base=floating)
    mapping = _mapped(model, bullet)
    q, v, _ = _random_state(model, 1)
    x, xd, _, _ = model.joint_state(q, v)
    mapping.state_to_pybullet(x, xd)
    x_back, xd_back = mapping.state_from_pybullet()
    if floating:   # PyBullet's base quaternion: q and −q are the same rotation
        x_back[3:7] *= np.sign(x_back[3:7] @ x[3:7])
    assert np.abs(x_back - x).max() < 1e-14 and np.abs(xd_back - xd).max() < 1e-14
    for link in model.link_names:
        rotation, position, linear, angular = mapping.link_state(link)
        our_r, our_p = frame_placement(model, x, link)
        assert np.abs(position - our_p).max() < 1e-12, link
        assert np.abs(rotation - our_r).max() < 1e-12, link
        twist = frame_jacobian(model, x, link, point=mapping.link_com(link)) @ xd
        assert np.abs(linear - twist[:3]).max() < 1e-12 and np.abs(angular - twist[3:]).max() < 1e-12, link


def test_pybullet_spherical_frame_is_the_inertial_frame(files, bullet):
    """The claim is not vacuous: PyBullet's own quaternion and velocity differ from ours (its joint frame is the
    child's principal-axes frame, R_i ≠ 1), and the naive use of ours gives a wrong pose."""
    model = load_model(files["pendulum"])
    mapping = _mapped(model, bullet)
    q, v, _ = _random_state(model, 2)
    mapping.state_to_pybullet(q, v)
    own_q, own_v = p.getJointStateMultiDof(mapping.body_id, mapping.spherical_indices[0], physicsClientId=bullet)[:2]
    assert np.abs(np.abs(own_q) - np.abs(q[:4])).max() > 0.05 and np.abs(np.array(own_v) - v).max() > 0.05
    p.resetJointStateMultiDof(mapping.body_id, mapping.spherical_indices[0], q[:4].tolist(), v.tolist(),
                              physicsClientId=bullet)
    rotation, _, _, _ = mapping.link_state("bob")
    assert np.abs(rotation - frame_placement(model, q, "bob")[0]).max() > 0.05


@pytest.mark.parametrize("name", ["pendulum", "arm"])
def test_torques_and_pybullet_forward_dynamics(files, name):
    """One PyBullet step from (x, ẋ) under torques τ sent as the bridge sends them: PyBullet's acceleration
    (Δẋ/dt, exact for its semi-implicit Euler) equals our forward dynamics M⁻¹(τ − h) — torque frames, inertia
    and the switched-off default motor together. Without prepare_body the default spherical motor is there."""
    model = load_model(files[name])
    q, v, rng = _random_state(model, 3)
    tau = rng.normal(size=model.nv)
    expected = model.forward_dynamics(q, v, tau)
    dt = 1e-3
    for prepare in (True, False):
        client = p.connect(p.DIRECT)
        try:
            mapping = _mapped(model, client, prepare=prepare)
            p.setTimeStep(dt, physicsClientId=client)
            p.setGravity(*model.gravity, physicsClientId=client)
            for link in range(-1, p.getNumJoints(mapping.body_id, physicsClientId=client)):
                p.changeDynamics(mapping.body_id, link, linearDamping=0.0, angularDamping=0.0, jointDamping=0.0,
                                 physicsClientId=client)
            mapping.state_to_pybullet(q, v)
            p.setJointMotorControlArray(mapping.body_id, mapping.joint_indices.tolist(), p.VELOCITY_CONTROL,
                                        forces=[0.0] * len(mapping.joint_indices), physicsClientId=client)
            if len(mapping.joint_indices):
                p.setJointMotorControlArray(mapping.body_id, mapping.joint_indices.tolist(), p.TORQUE_CONTROL,
                                            forces=tau[model.base_nv:].tolist(), physicsClientId=client)
            p.setJointMotorControlMultiDofArray(mapping.body_id, mapping.spherical_indices, p.TORQUE_CONTROL,
                                                forces=mapping.spherical_torques(tau), physicsClientId=client)
            p.stepSimulation(physicsClientId=client)
            acceleration = (mapping.state_from_pybullet()[1] - v) / dt
        finally:
            p.disconnect(client)
        error = np.abs(acceleration - expected).max() / np.abs(expected).max()
        if prepare:
            assert error < 1e-9
        else:
            assert error > 1.0


def test_pybullet_dynamics_calls_are_refused(files, bullet):
    """calculateInverseDynamics fails on a fixed body with a spherical joint, and calculateMassMatrix (given the
    quaternion as getJointStateMultiDof reports it) is not the mass matrix: the map refuses both instead."""
    model = load_model(files["arm"])
    mapping = _mapped(model, bullet)
    q, v, _ = _random_state(model, 6)
    mapping.state_to_pybullet(q, v)
    states = p.getJointStatesMultiDof(mapping.body_id, list(range(p.getNumJoints(mapping.body_id,
                                                                                 physicsClientId=bullet))),
                                      physicsClientId=bullet)
    positions = [value for state in states for value in state[0]]
    with pytest.raises((p.error, SystemError)):   # PyBullet 3.2.x: "returned a result with an exception set"
        p.calculateInverseDynamics(mapping.body_id, positions, [0.0] * len(positions), [0.0] * len(positions),
                                   physicsClientId=bullet)
    try:
        theirs = np.asarray(p.calculateMassMatrix(mapping.body_id, positions, physicsClientId=bullet))
    except p.error:
        theirs = None
    if theirs is not None and theirs.shape == (model.nv, model.nv):
        # u_pb = T ẋ: PyBullet's dof order (uIndex) and frames (R_iᵀ ω for a spherical joint)
        info = [p.getJointInfo(mapping.body_id, i, physicsClientId=bullet)
                for i in range(p.getNumJoints(mapping.body_id, physicsClientId=bullet))]
        first = min(i[4] for i in info if i[4] > -1)
        t = np.zeros((model.nv, model.nv))
        for index, _, vi, rotation, _ in mapping.spherical:
            u = info[index][4] - first
            t[u:u + 3, vi:vi + 3] = rotation.T
        for k, joint in enumerate(mapping.joint_indices):
            t[info[joint][4] - first, model.base_nv + k] = 1.0
        ours = PinocchioOracle(model).tree_mass_matrix(q)   # measured: 0.16 off on a 0.82 scale
        assert np.abs(t.T @ theirs @ t - ours).max() > 1e-2 * np.abs(ours).max()
    x = model.neutral_configuration()
    with pytest.raises(ModelError, match="calculateInverseDynamics does not take spherical joints"):
        mapping.inverse_dynamics(x, np.zeros(model.nv), np.zeros(model.nv))
    with pytest.raises(ModelError, match="shoulder, wrist"):
        mapping.mass_matrix_from_pybullet(np.eye(model.nv))


# ------------------------------------------------------------------ the bridge
@pytest.mark.parametrize("name, floating", [("pendulum", False), ("arm", False), ("arm", True), ("coupled", False)])
def test_bridge_mass_matrix_and_bias_equal_pinocchio(files, name, floating):
    """Bridge.tree_mass_and_bias / inverse_dynamics (biobullet's recursions on PyBullet's stored inertia) against
    Pinocchio's JointModelSpherical model of the same file, and state() in the Model's (x, ẋ) convention."""
    model = load_model(files[name], floating_base=floating)
    oracle = PinocchioOracle(model)
    with Bridge(model) as bridge:
        for seed in range(3):
            q, v, rng = _random_state(model, 10 + seed)
            x, xd, _, _ = model.joint_state(q, v)
            bridge.reset_tree(x, xd)
            _, x_read, xd_read = bridge.state()
            if floating:
                x_read[3:7] *= np.sign(x_read[3:7] @ x[3:7])
            assert np.abs(x_read - x).max() < 1e-14 and np.abs(xd_read - xd).max() < 1e-14
            mass, bias = bridge.tree_mass_and_bias(x, xd)
            pin_mass = oracle.tree_mass_matrix(x)
            pin_bias = oracle.tree_inverse_dynamics(x, xd, np.zeros(model.n_tangent))
            assert np.abs(mass - pin_mass).max() < 1e-9 * np.abs(pin_mass).max()
            assert np.abs(bias - pin_bias).max() < 1e-9 * np.abs(pin_bias).max()
            qdd = rng.normal(size=model.nv)
            expected = oracle.mass_matrix(q) @ qdd + oracle.bias_forces(q, v)   # Pinocchio, reduced by G
            assert np.abs(bridge.inverse_dynamics(q, v, qdd) - expected).max() < 1e-9 * np.abs(expected).max()


def _lie_semi_implicit_euler(model, q, v, dt, steps):
    """v ← v + dt·v̇(q, v), q ← q ⊕ dt·v (the quaternion by the exponential of the child-frame ω dt, as
    Bullet's btMultiBody::stepPositionsMultiDof does): PyBullet's integrator applied to the reference equations."""
    for k in range(steps):
        v = v + dt * model.forward_dynamics(q, v, t=k * dt)
        q = model.integrate_configuration(q, v, dt)
    return q, v


@pytest.mark.parametrize("name", ["pendulum", "arm"])
def test_bridge_is_semi_implicit_euler_on_the_reference_equations(files, name):
    """Same dt, same integrator: the bridge and the reference equations agree step for step (200 steps of 1 ms)
    to the round-off of PyBullet's stored inertia (measured: q 7e-11, v 2e-9 on |v| ≈ 12 for the arm; allowed
    1e-9 and 1e-9 relative), far below the O(dt) = 1e-3 difference of a wrong convention or an active default
    motor. (With a non-linear joint function the bridge integrates the whole tree under constraint torques, a
    different first-order scheme than Euler on the reduced coordinates: the coupled arm is checked by its
    convergence below.)"""
    model = load_model(files[name])
    q0, v0 = _random_state(model, 4)[:2]
    dt, steps = 1e-3, 200
    trajectory = simulate_bridge(model, steps * dt, dt, initial=(q0, v0))
    q, v = _lie_semi_implicit_euler(model, q0, v0, dt, steps)
    assert trajectory.q.shape[1] == model.nq and trajectory.coordinate_names == model.coordinate_names
    assert np.abs(trajectory.q[-1] - q).max() < 1e-9
    assert np.abs(trajectory.v[-1] - v).max() < 1e-9 * max(1.0, np.abs(v).max())


@pytest.mark.parametrize("name", ["pendulum", "arm", "coupled"])
def test_bridge_converges_to_the_engine_at_first_order(files, name):
    """The bridge's error against an accurate reference-engine run (rtol 1e-11) at t = 0.3 s for dt = 4, 2, 1 ms:
    semi-implicit Euler is first order, so each halving halves the error. Observed orders (pendulum, arm,
    coupled): 0.99–1.01; accepted 0.85–1.15 (the next term, O(dt²), is ≤ 4 % of the error at 4 ms)."""
    model = load_model(files[name])
    q0, v0 = (model.initial_state() if name == "coupled" else _random_state(model, 5)[:2])
    errors, orders = bridge_orders(model, q0, v0)
    print(name, "errors", errors, "orders", orders)
    assert np.all((orders > 0.85) & (orders < 1.15)), (errors, orders)
    if name == "coupled":   # the joint function holds along the run (the bridge's 1e-6 rad bar; observed 8e-8)
        with Bridge(model, dt=1e-3) as bridge:
            worst = 0.0
            for _ in range(300):
                bridge.step()
                worst = max(worst, max(abs(r) for r in bridge.constraint_residuals().values()))
            assert worst < 1e-6


def test_cli_simulate_engine_pybullet(files, tmp_path):
    out = tmp_path / "arm.csv"
    # in this process (tests/in_process.py); the same command end to end as a process: test_bridge_accuracy.py
    result = in_process.cli("simulate", str(files["arm"]), "--t-end", "0.01", "--engine", "pybullet", "--dt", "1e-3",
                            "--set", "shoulder_qx=0.2", "--set", "shoulder_wz_dot=1.5", "--out", str(out))
    assert result.returncode == 0, result.stderr
    rows = list(csv.reader(open(out)))
    assert rows[0][:6] == ["t", "shoulder_qx", "shoulder_qy", "shoulder_qz", "shoulder_qw", "wrist_qx"]
    assert len(rows) == 12
    first = np.array([float(s) for s in rows[1][1:5]])
    assert first[0] == pytest.approx(0.2 / np.sqrt(1.04)) and np.linalg.norm(first) == pytest.approx(1.0)


@pytest.mark.parametrize("attribute, text", [
    ("joint", '<joint_function joint="shoulder" type="linear" inputs="elbow" coefficients="2"/>'),
    ("inputs", '<joint_function joint="elbow" type="linear" inputs="shoulder" coefficients="2"/>')])
def test_joint_functions_on_spherical_joints_are_one_clear_error(tmp_path, attribute, text):
    """A joint function maps 1-DOF coordinates; a spherical joint (3 DOF, a quaternion) is neither its output nor
    an input: one ModelError naming the element, the attribute and the joint."""
    path = tmp_path / "bad.urdf"
    path.write_text(robot_text("bad", ARM_LINKS[:3], SHOULDER, text))
    with pytest.raises(ModelError) as info:
        load_model(path)
    message = str(info.value)
    assert f"attribute '{attribute}'" in message and "'shoulder' is spherical" in message
    assert '<joint_function joint="' in message


def test_pybullet_spherical_limit_is_one_clear_error(tmp_path):
    """PyBullet enforces a spherical joint's <limit> by a constraint no call removes (pybullet_data's
    spherical_joint_limit.urdf: the bridge ran 1.05 rad away from the engine); the bridge refuses it by name unless
    joint_limits=True keeps PyBullet's limit."""
    path = tmp_path / "limited.urdf"
    path.write_text(PENDULUM.replace('<origin xyz="0 0 1" rpy="0.2 0.1 -0.3"/></joint>',
                                     '<origin xyz="0 0 1" rpy="0.2 0.1 -0.3"/>'
                                     '<limit effort="100" lower="0.2" upper="0.8" twist="0.3"/></joint>'))
    model = load_model(path)
    with pytest.raises(ModelError) as info:
        Bridge(model)
    assert "spherical joint 'ball'" in str(info.value) and "attribute 'limit'" in str(info.value)
    with Bridge(model, joint_limits=True) as bridge:
        bridge.step()


@pytest.mark.parametrize("name, floating, stepped", [("arm", False, True), ("coupled", False, False),
                                                     ("arm", True, False)])
def test_validate_compares_pybullet_through_its_own_step(files, name, floating, stepped):
    """`validate` against PyBullet on spherical joints: no M and h (its calls do not take them) but its own forward
    dynamics (one step's velocity change; fixed base, no joint functions), link velocities and inertias — all
    within validate's PyBullet tolerance (observed forward dynamics 1e-10 relative on the arm)."""
    from biobullet.validate.report import validate_model
    model = load_model(files[name], floating_base=floating)
    report = validate_model(model, samples=2, formulations=["reduced"])
    keys = {(check.quantity, check.oracle) for check in report.checks}
    notes = " ".join(report.notes)
    assert report.ok, report.to_table()
    assert "do not take spherical joints" in notes and "oracle pybullet not used" not in notes
    assert ("link_velocity", "pybullet") in keys and ("spatial_inertia", "pybullet") in keys
    assert ("mass_matrix", "pybullet") not in keys and ("bias_forces", "pybullet") not in keys
    assert (("forward_dynamics", "pybullet") in keys) == stepped


@pytest.mark.parametrize("mimic_on", ["elbow", "shoulder"])
def test_mimic_with_a_spherical_joint_is_ignored_with_a_warning(tmp_path, mimic_on):
    """URDF <mimic> (read as a linear joint function) couples single coordinates. PyBullet ignores <mimic>, so such
    a file still loads — with one warning naming the joint and its type, the joint independent."""
    joints = list(SHOULDER)
    if mimic_on == "elbow":
        joints[1] = joints[1].replace('<axis xyz="0 1 0"/>', '<axis xyz="0 1 0"/><mimic joint="shoulder"/>')
    else:
        joints[0] = joints[0].replace("</joint>", '<mimic joint="elbow"/></joint>')
    path = tmp_path / "mimic.urdf"
    path.write_text(robot_text("mimic", ARM_LINKS[:3], joints))
    with pytest.warns(UserWarning, match=rf'<joint name="{mimic_on}"> <mimic> involves the spherical joint '
                                         r"'shoulder', which has several degrees of freedom: ignored"):
        model = load_model(path)
    assert model.description.joint_functions == () and model.nv == 4


def test_planar_joints_are_one_clear_error_on_the_bridge(tmp_path):
    """URDF planar (and floating) joints: engine and Pinocchio only — the bridge names them."""
    path = tmp_path / "planar.urdf"
    path.write_text(robot_text("planar", ARM_LINKS[:2], [
        '<joint name="table" type="planar"><parent link="torso"/><child link="upper"/><axis xyz="0 0 1"/></joint>']))
    model = load_model(path)
    with pytest.raises(ModelError, match=r"table \(planar\)"):
        Bridge(model)


def test_floating_coupled_arm_steps_are_clean_and_a_push_is_still_seen(files):
    """The bridge's watch predicts every velocity of the next step except a floating base's linear velocity (PyBullet
    steps the base COM's velocity in the world frame: read back in the root frame it differs from ẋ + dt ẍ at first
    order in dt). Before, every clean step of this arm passed for a disturbed one and was projected (298 of 300);
    now none is, the joint function holds to the promise, and a push on the hand between apply() and
    stepSimulation() is still seen (its joints' velocities leave the prediction) and named."""
    from biobullet.bridge.outside import PROMISE, CouplingWarning
    model = load_model(files["coupled"], floating_base=True)
    with Bridge(model, dt=1e-3) as bridge:
        for _ in range(300):
            bridge.step()
        assert bridge.watch.disturbed_steps == 0 and bridge.watch.projections == 0
        assert max(abs(r) for r in bridge.constraint_residuals().values()) <= PROMISE
        bridge.apply()
        p.applyExternalForce(bridge.body, bridge.map.link_index["hand"], [2.0, 0.0, 0.0], [0.0, 0.0, 0.0],
                             p.LINK_FRAME, physicsClientId=bridge.client)
        p.stepSimulation(physicsClientId=bridge.client)
        with pytest.warns(CouplingWarning, match="pronation.function"):   # 1.0e-5 rad: beyond the promise
            bridge.apply()
        assert bridge.watch.disturbed_steps == 1


@pytest.mark.parametrize("name", ["arm", "coupled"])
def test_limit_stop_acts_from_the_first_step_beyond_it(files, name):
    """The force stage is skipped while every 1-DOF joint is inside the range no stop reaches (the watch's max |θ|
    below every |limit|, `ForceStage.quiet_below`): the elbow driven through its URDF upper limit 3 rad gets no
    stop torque inside and, from the first step beyond it, the smooth stop law f = k p² + c s(p) ṗ written out here
    (p = θ − 3, s the smoothstep over 1e-3 rad; k, c the limit's parameters) — on the plan without rows (arm) exactly,
    with a joint function (coupled arm) through the force stage's τ before the solve adds Φ_xᵀλ."""
    from biobullet.forces.collection import force_elements
    model = load_model(files[name])
    stop = next(e for e in force_elements(model) if e.name == "limit_elbow")
    assert stop.upper == 3.0
    with Bridge(model, dt=1e-3) as bridge:
        bridge.reset(elbow=2.97, elbow_dot=4.0)
        k = bridge.torque_names.index("elbow")
        seen_inside = seen_beyond = 0
        for _ in range(40):
            _, x, xd = bridge.state()
            theta, rate = x[model.base_nq + k - model.base_nv], xd[k]
            if name == "arm":
                stop_tau = bridge.apply()[k]   # τ sent: the stop's alone (no rows, no user torque)
                p.stepSimulation(physicsClientId=bridge.client)
            else:
                captured = []
                torque = bridge.forces.torque
                bridge.forces.torque = lambda *a: captured.append(torque(*a)) or captured[-1]
                bridge.step()
                del bridge.forces.torque
                # no call at all while the watch's max |θ| shows no stop can act (`ForceStage.idle_below`)
                stop_tau = 0.0 if not captured or captured[-1] is None else captured[-1][k]
            if theta <= 3.0:
                seen_inside += 1
                assert stop_tau == 0.0
            else:
                seen_beyond += 1
                pen = theta - 3.0
                u = min(pen / 1e-3, 1.0)
                expected = -(stop.stiffness * pen ** 2 + stop.damping * u * u * (3.0 - 2.0 * u) * rate)
                assert stop_tau == pytest.approx(expected, rel=1e-12, abs=1e-12)
        assert seen_inside >= 3 and seen_beyond >= 3
