"""The bridge in a PyBullet user's own loop (issue 25): with what PyBullet users do every day — motors, rigid contact,
external forces, damping, user constraints, time-step and gravity changes, resets — the joint function holds to
PROMISE (1e-6 rad) after every `stepSimulation()` at 240 Hz and 1 kHz, or the bridge has said why (one
CouplingWarning naming the joint, the cause and the remedy) by the first step where it does not.

Scene: KUKA iiwa from pybullet_data, the coupling joint 3 = 0.5 sin(joint 2) + 0.2 joint 4² written into a copy of
its URDF (tests/bridge_user_loop.py); the residual is read from PyBullet's joint states with the formula
above, not through the bridge's rows. A few hundred DIRECT steps per test."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

pybullet = pytest.importorskip("pybullet")
pytest.importorskip("pybullet_data")

from biobullet.bridge import Bridge  # noqa: E402
from biobullet.bridge.lifecycle import BridgeClosedError, BridgeWarning, DivergenceError  # noqa: E402
from biobullet.bridge.outside import PROMISE, CouplingWarning  # noqa: E402
from biobullet.core.errors import ModelError  # noqa: E402

from bridge_user_loop import (J2, J3, J4, coupled_rate_residual, episodes, pybullet_residual,  # noqa: E402
                              write_coupled_kuka)

RATES = [1 / 240, 1e-3]


@pytest.fixture(scope="module")
def kuka(tmp_path_factory):
    return write_coupled_kuka(tmp_path_factory.mktemp("kuka"))


@pytest.fixture
def bare_client():
    """A DIRECT client of the user's, as PyBullet leaves it (no gravity, 1/240 s)."""
    client = pybullet.connect(pybullet.DIRECT)
    yield client
    pybullet.disconnect(client)


@pytest.fixture
def scene(kuka, request):
    """(pybullet client id, bridge) on a client of the user's (gravity set by the user, as PyBullet users do)."""
    dt = getattr(request, "param", 1 / 240)
    client = pybullet.connect(pybullet.DIRECT)
    pybullet.setGravity(0, 0, -9.81, physicsClientId=client)
    pybullet.setTimeStep(dt, physicsClientId=client)
    bridge = Bridge(kuka, client=client)
    yield client, bridge
    bridge.close()
    pybullet.disconnect(client)


def _hold(bridge) -> np.ndarray:
    """A gentle PD on the first four independent coordinates around the initial pose (N·m)."""
    _, q, v = bridge.generalized_state()
    gains = np.array([1.0, 1.0, 1.0, 1.0, 0.0, 0.0])
    return gains * (20.0 * (bridge.model.initial_state()[0] - q) - 2.0 * v)


def _run(client, bridge, steps, before_step=None, hold=True):
    """`steps` of apply + the user's stepSimulation; asserts the promise: the residual after every step is ≤ PROMISE,
    or a CouplingWarning has been issued by the bridge's next apply() (the first moment it sees that step's
    state). Returns (largest residual, messages of the CouplingWarnings issued)."""
    worst, pending = 0.0, 0.0
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for k in range(steps + 1):
            if before_step is not None and k < steps:
                before_step(k)
            bridge.apply(generalized=_hold(bridge) if hold else None)
            said = [w for w in caught if issubclass(w.category, CouplingWarning)]
            assert pending <= PROMISE or said, f"step {k}: residual {pending:.3g} rad and no CouplingWarning"
            pybullet.stepSimulation(physicsClientId=client)
            pending = pybullet_residual(pybullet, bridge.body, client)
            worst = max(worst, pending) if k < steps else worst
    return worst, [str(w.message) for w in caught if issubclass(w.category, CouplingWarning)]


def _on_manifold_after_apply(client, bridge) -> None:
    """The next apply() puts the state back on the joint function."""
    bridge.apply(generalized=_hold(bridge))
    assert pybullet_residual(pybullet, bridge.body, client) <= 1e-9
    pybullet.stepSimulation(physicsClientId=client)


@pytest.mark.parametrize("scene", RATES, indirect=True)
def test_own_loop_holds_without_anything_else(scene):
    client, bridge = scene
    worst, said = _run(client, bridge, 240)
    assert worst <= PROMISE and not said


@pytest.mark.parametrize("scene", RATES, indirect=True)
def test_free_fall_holds_at_the_step_end(scene):
    """No PD: the arm falls and whips (tens of rad/s); the step-end Newton correction keeps the O(dt³) remainder of
    the Taylor target (4.9e-4 rad at 240 Hz before) below the promise."""
    client, bridge = scene
    worst, said = _run(client, bridge, int(0.8 / bridge.dt), hold=False)
    assert worst <= PROMISE and not said


@pytest.mark.parametrize("control", ["position", "velocity", "multidof"])
def test_pybullet_motor_on_an_input_is_named_once_and_the_coupling_recovers(scene, control):
    client, bridge = scene
    if control == "position":
        pybullet.setJointMotorControlArray(bridge.body, [1, 3], pybullet.POSITION_CONTROL, targetPositions=[0.8, -0.2],
                                           forces=[100.0, 100.0], physicsClientId=client)
    elif control == "multidof":
        pybullet.setJointMotorControlMultiDof(bridge.body, 1, pybullet.POSITION_CONTROL, targetPosition=[0.8],
                                              force=[100.0], physicsClientId=client)
    else:
        pybullet.setJointMotorControl2(bridge.body, 1, pybullet.VELOCITY_CONTROL, targetVelocity=0.5, force=100.0,
                                       physicsClientId=client)
    worst, said = _run(client, bridge, 120)
    assert len(said) == 1 and J2 in said[0] and "PyBullet motor" in said[0] and "set_motor" in said[0]
    assert worst < 0.1   # projected back after every step: never accumulates
    _on_manifold_after_apply(client, bridge)
    pybullet.setJointMotorControlArray(bridge.body, [1, 3], pybullet.VELOCITY_CONTROL, forces=[0.0, 0.0],
                                       physicsClientId=client)
    bridge.apply(generalized=_hold(bridge))
    pybullet.stepSimulation(physicsClientId=client)
    worst, said = _run(client, bridge, 120)   # motor off: the promise holds again, nothing more said
    assert worst <= PROMISE and not said


def test_pybullet_motor_on_the_dependent_joint_is_named(scene):
    client, bridge = scene
    pybullet.setJointMotorControl2(bridge.body, 2, pybullet.POSITION_CONTROL, targetPosition=0.0, force=50.0,
                                   physicsClientId=client)
    _, said = _run(client, bridge, 60)
    assert len(said) == 1 and f"dependent joint '{J3}'" in said[0]
    _on_manifold_after_apply(client, bridge)


@pytest.mark.parametrize("kind", ["external_force", "user_torque", "joint_damping"])
def test_forces_outside_the_solve_are_named_and_projected(scene, kind):
    """A push, the user's own TORQUE_CONTROL and joint damping act every step, outside the solve: the residual each
    leaves is named once (cause: a force outside the bridge's solve, remedy: tau=) and projected away after every
    step, so it never accumulates."""
    client, bridge = scene
    body = bridge.body
    if kind == "joint_damping":
        for joint in range(4):
            pybullet.changeDynamics(body, joint, jointDamping=0.5, physicsClientId=client)

    def act(k):
        if kind == "external_force":
            pybullet.applyExternalForce(body, 6, [0.0, 15.0, 5.0], [0.0, 0.0, 0.0], pybullet.LINK_FRAME,
                                        physicsClientId=client)

    def user_torque():   # after apply(): the user's own torque adds to the bridge's
        pybullet.setJointMotorControlArray(body, [1, 3], pybullet.TORQUE_CONTROL, forces=[6.0, -4.0],
                                           physicsClientId=client)

    worst, pending = 0.0, 0.0
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for k in range(200):
            act(k)
            bridge.apply(generalized=_hold(bridge))
            said = [str(w.message) for w in caught if issubclass(w.category, CouplingWarning)]
            assert pending <= PROMISE or said, f"step {k}: residual {pending:.3g} and nothing said"
            if kind == "user_torque":
                user_torque()
            pybullet.stepSimulation(physicsClientId=client)
            pending = pybullet_residual(pybullet, body, client)
            worst = max(worst, pending)
    assert bridge.watch.disturbed_steps >= 1
    assert len(said) <= 1 and all("outside the bridge's solve" in s for s in said)
    assert worst < 1e-3   # one step's worth, never accumulated


def test_rigid_contact_with_a_box_holds_or_is_named(scene):
    """A heavy box in the arm's way (PyBullet's rigid contact with a link that has no <contact>)."""
    client, bridge = scene
    box = pybullet.createMultiBody(0.0, pybullet.createCollisionShape(pybullet.GEOM_BOX, halfExtents=[0.2, 0.2, 0.2],
                                                                      physicsClientId=client),
                                   basePosition=[0.45, 0.0, 0.55], physicsClientId=client)
    worst, said = _run(client, bridge, 240, hold=False)
    assert worst > PROMISE   # the arm hits the box (measured 9.4e-3 rad in that step at 240 Hz)
    assert len(said) == 1 and "rigid contact" in said[0] and "<contact>" in said[0]
    _on_manifold_after_apply(client, bridge)


def test_user_constraint_holds_or_is_named(scene):
    client, bridge = scene
    position = pybullet.getLinkState(bridge.body, 6, physicsClientId=client)[0]
    pybullet.createConstraint(bridge.body, 6, -1, -1, pybullet.JOINT_POINT2POINT, [0, 0, 0], [0, 0, 0],
                              [position[0], position[1], position[2] + 0.05], physicsClientId=client)
    worst, said = _run(client, bridge, 120)
    assert worst > PROMISE   # measured 5.4e-3 rad at 240 Hz: PyBullet's constraint pulls the tip up
    assert len(said) == 1 and "createConstraint" in said[0] and "<loop>" in said[0]
    _on_manifold_after_apply(client, bridge)


def test_projection_after_an_outside_force_never_adds_kinetic_energy(kuka, bare_client):
    """No gravity, a push every step outside the solve: each velocity projection the next apply() makes is the
    M-weighted (plastic) one, so at the projected configuration the kinetic energy ½ẋᵀMẋ (M from PyBullet's own
    calculateMassMatrix) of the projected rates is never above that of the rates PyBullet reported."""
    client = bare_client
    with Bridge(kuka, client=client, gravity="client") as bridge:   # the client's gravity: 0
        body = bridge.body

        def rates():
            return np.array([s[1] for s in pybullet.getJointStates(body, range(7), physicsClientId=client)])

        changes = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", CouplingWarning)
            for _ in range(120):
                pybullet.applyExternalForce(body, 6, [0.0, 20.0, 10.0], [0.0, 0.0, 0.0], pybullet.LINK_FRAME,
                                            physicsClientId=client)
                before, projections = rates(), bridge.watch.projections
                bridge.apply()
                if bridge.watch.projections > projections:
                    q = [s[0] for s in pybullet.getJointStates(body, range(7), physicsClientId=client)]
                    mass = np.asarray(pybullet.calculateMassMatrix(body, q, physicsClientId=client))
                    after = rates()
                    changes.append((0.5 * after @ mass @ after - 0.5 * before @ mass @ before,
                                    0.5 * before @ mass @ before))
                pybullet.stepSimulation(physicsClientId=client)
    assert len(changes) > 100
    assert all(change <= 1e-12 * energy for change, energy in changes)
    assert min(change for change, _ in changes) < 0.0


def test_set_time_step_and_gravity_are_followed(scene):
    client, bridge = scene
    _run(client, bridge, 20)
    pybullet.setTimeStep(1e-3, physicsClientId=client)
    pybullet.setGravity(0.0, 0.0, -3.0, physicsClientId=client)
    _run(client, bridge, 2)   # the step in which they changed
    assert bridge.dt == 1e-3 and bridge.gravity == (0.0, 0.0, -3.0)
    worst, said = _run(client, bridge, 200)
    assert worst <= PROMISE
    bridge.set_time_step(1 / 240)   # the bridge's own call changes both at once: nothing to correct
    worst, said_after = _run(client, bridge, 100)
    assert worst <= PROMISE and said_after == said


@pytest.mark.parametrize("substeps", [2, 4])
def test_sub_steps(kuka, bare_client, substeps):
    pybullet.setPhysicsEngineParameter(numSubSteps=substeps, physicsClientId=bare_client)
    with Bridge(kuka, client=bare_client, gravity="client") as bridge:
        assert bridge.substeps == substeps
        worst, said = _run(bare_client, bridge, 240)
        assert worst <= PROMISE or said


def test_reset_of_an_input_moves_the_dependent_joint_at_the_next_apply(scene):
    client, bridge = scene
    _run(client, bridge, 10)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CouplingWarning)   # an input reset is no mistake: nothing said
        pybullet.resetJointState(bridge.body, 1, 0.9, 0.0, physicsClientId=client)
        bridge.apply(generalized=_hold(bridge))
    assert pybullet.getJointState(bridge.body, 1, physicsClientId=client)[0] == 0.9
    assert pybullet_residual(pybullet, bridge.body, client) <= 1e-12
    assert coupled_rate_residual(pybullet, bridge.body, client) <= 1e-12
    pybullet.stepSimulation(physicsClientId=client)
    worst, said = _run(client, bridge, 120)
    assert worst <= PROMISE and not said
    velocities = [s[1] for s in pybullet.getJointStates(bridge.body, range(7), physicsClientId=client)]
    assert max(abs(v) for v in velocities) < 50.0   # no kick (was −171 rad/s)


def test_reset_of_the_dependent_joint_is_named_and_undone(scene):
    client, bridge = scene
    _run(client, bridge, 10)
    pybullet.resetJointState(bridge.body, 2, 1.2, physicsClientId=client)
    with pytest.warns(CouplingWarning, match=f"dependent joint '{J3}' was reset"):
        bridge.apply(generalized=_hold(bridge))
    assert pybullet_residual(pybullet, bridge.body, client) <= 1e-12
    pybullet.stepSimulation(physicsClientId=client)
    worst, said = _run(client, bridge, 60)
    assert worst <= PROMISE and not said


def test_steps_without_apply_are_named(scene):
    """Two stepSimulation() per apply() (a frame-skip habit): the second step has none of the bridge's torques."""
    client, bridge = scene
    _run(client, bridge, 20, hold=False)
    with pytest.warns(CouplingWarning, match="stepSimulation\\(\\) ran 2 times since the last apply"):
        for _ in range(5):
            bridge.apply()
            pybullet.stepSimulation(physicsClientId=client)
            pybullet.stepSimulation(physicsClientId=client)
    _on_manifold_after_apply(client, bridge)


def test_reset_and_arguments_by_name(scene):
    client, bridge = scene
    assert bridge.coordinate_index == {"lbr_iiwa_joint_1": 0, J2: 1, J4: 3, "lbr_iiwa_joint_5": 4,
                                       "lbr_iiwa_joint_6": 5, "lbr_iiwa_joint_7": 6}
    assert bridge.joint_index[J3] == 2 and len(bridge.torque_names) == bridge.model.n_tangent == 7
    bridge.reset(**{J2: 0.5, f"{J4}_dot": 0.3})
    (q2, v2), (q3, v3), (q4, v4) = ((s[0], s[1]) for s in pybullet.getJointStates(bridge.body, [1, 2, 3],
                                                                                      physicsClientId=client))
    assert (q2, v2, q4, v4) == (0.5, 0.0, -0.6, 0.3)
    assert q3 == pytest.approx(0.5 * math.sin(0.5) + 0.2 * 0.36, abs=1e-15)
    assert v3 == pytest.approx(0.4 * -0.6 * 0.3, abs=1e-15)
    with pytest.raises(ModelError, match="dependent joint"):
        bridge.reset(**{J3: 0.1})
    with pytest.raises(ModelError, match="dependent joint"):
        bridge.apply(generalized={J3: 1.0})
    with pytest.raises(ModelError, match="not a name"):
        bridge.apply(tau={"elbow": 1.0})
    # by name = by position (tree order for tau, coordinate order for generalized)
    bridge.reset()
    by_vector = bridge.apply(tau=np.eye(7)[3] * 2.0, generalized=np.eye(6)[0] * 1.5)
    bridge.reset()
    by_name = bridge.apply(tau={J4: 2.0}, generalized={"lbr_iiwa_joint_1": 1.5})
    np.testing.assert_array_equal(by_vector, by_name)


@pytest.mark.parametrize("scene", RATES, indirect=True)
def test_own_motor_acts_inside_the_solve(scene):
    client, bridge = scene
    bridge.set_motor(J2, position=0.9, max_force=80.0)
    bridge.set_motor(J3, velocity=0.0, velocity_gain=0.2, max_force=5.0)   # a brake on the dependent joint
    worst, said = _run(client, bridge, int(1.0 / bridge.dt))
    assert worst <= PROMISE and not said
    assert abs(bridge.motor_torques[J2]) <= 80.0 and abs(bridge.motor_torques[J3]) <= 5.0
    assert pybullet.getJointState(bridge.body, 1, physicsClientId=client)[0] == pytest.approx(0.9, abs=0.05)
    bridge.clear_motor()
    assert not bridge.motors


def test_over_stiff_pd_raises_divergence_naming_joint_and_step(scene):
    client, bridge = scene
    with pytest.raises(DivergenceError, match=r"joint 'lbr_iiwa_joint_\d' .* step \d+|step \d+ .*joint"):
        for _ in range(200):
            _, q, v = bridge.generalized_state()
            bridge.apply(generalized=2000.0 * (bridge.model.initial_state()[0] - q) - 200.0 * v)
            pybullet.stepSimulation(physicsClientId=client)


@pytest.mark.parametrize("dt", [1e300, 10.0, 0.5, -1e-3, float("nan")])
def test_absurd_time_steps_are_refused(kuka, dt):
    with pytest.raises(ModelError, match="dt"):
        Bridge(kuka, dt=dt)


def test_lifecycle_gravity_and_paths(kuka, bare_client):
    client = bare_client
    with pytest.warns(BridgeWarning, match="gravity"):   # PyBullet's default gravity is 0: said, not silent
        first = Bridge(str(kuka), client=client)
    assert pybullet.getPhysicsEngineParameters(physicsClientId=client)["gravityAccelerationZ"] == -9.81
    first.close()
    assert pybullet.getNumBodies(physicsClientId=client) == 0   # close() removes what it loaded
    pybullet.setGravity(0.0, 0.0, -1.62, physicsClientId=client)
    with warnings.catch_warnings():
        warnings.simplefilter("error", BridgeWarning)
        moon = Bridge(kuka, client=client, gravity="client")
    assert moon.gravity == (0.0, 0.0, -1.62)
    assert pybullet.getPhysicsEngineParameters(physicsClientId=client)["gravityAccelerationZ"] == -1.62
    moon.close()
    own = pybullet.loadURDF(str(kuka), useFixedBase=True, flags=pybullet.URDF_USE_INERTIA_FROM_FILE,
                            physicsClientId=client)
    theirs = Bridge(kuka, client=client, body_id=own, gravity="client")
    theirs.close()
    assert pybullet.getNumBodies(physicsClientId=client) == 1   # the user's body stays theirs


def test_every_method_after_close_raises(kuka):
    bridge = Bridge(kuka)
    bridge.step()
    bridge.record()
    bridge.close()
    q, v = bridge.model.initial_state()
    calls = {"apply": (), "step": (), "state": (), "generalized_state": (), "constraint_residuals": (),
             "contact_forces": (), "reaction_forces": (), "joint_reactions": (), "record": (), "trajectory": (),
             "reset": (), "reset_tree": (np.zeros(7), np.zeros(7)), "tree_mass_and_bias": (np.zeros(7), np.zeros(7)),
             "inverse_dynamics": (q, v, np.zeros(6)), "set_motor": (J2, 0.1), "clear_motor": (),
             "set_time_step": (1e-3,), "engine_parameters": (), "changed_inertias": (), "set_excitations": (),
             "stored_bodies": (), "base_origin": ()}
    public = {name for name in dir(bridge) if not name.startswith("_") and callable(getattr(bridge, name))}
    assert public - {"close"} <= set(calls)
    for name, args in calls.items():
        with pytest.raises(BridgeClosedError):
            getattr(bridge, name)(*args)
    bridge.close()   # twice is fine


@pytest.mark.parametrize("reset_simulation", [False, True])
def test_episodes_on_one_client_do_not_pile_up(kuka, bare_client, reset_simulation):
    """Gym-style episodes: the client holds one robot at every episode (was: one more per episode); 100 episodes and
    their time per episode in tests/benchmarks/test_bridge_episodes.py."""
    counts = list(episodes(pybullet, kuka, bare_client, 20, reset_simulation=reset_simulation, steps=2))
    assert counts == [1] * 20 and pybullet.getNumBodies(physicsClientId=bare_client) == 0
