"""The PyBullet bridge: client types, body attachment, what it switches off, bad input."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pybullet = pytest.importorskip("pybullet")

import biobullet  # noqa: E402
from biobullet.bridge import Bridge  # noqa: E402
from biobullet.core.errors import ModelError  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
SHOULDER = REPO / "urdf" / "shoulder_rhythm.urdf"

# A point-mass-like pendulum about the y axis, with URDF damping and a joint limit that PyBullet would apply
# (both must be switched off by the bridge). COM at (L, 0, 0): θ̈ = (m g L / I_O) cos θ with gravity −z.
MASS, LENGTH, I_COM = 2.0, 0.5, 0.01
PENDULUM = f"""<?xml version="1.0"?>
<robot name="pendulum">
  <link name="base"><inertial><origin xyz="0 0 0"/><mass value="1"/>
    <inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial></link>
  <joint name="hinge" type="revolute"><parent link="base"/><child link="bob"/><axis xyz="0 1 0"/>
    <limit lower="-0.2" upper="0.2" effort="1" velocity="1"/><dynamics damping="0.5" friction="0"/></joint>
  <link name="bob"><inertial><origin xyz="{LENGTH} 0 0"/><mass value="{MASS}"/>
    <inertia ixx="{I_COM}" ixy="0" ixz="0" iyy="{I_COM}" iyz="0" izz="{I_COM}"/></inertial>
    <visual><origin xyz="0.25 0 0"/><geometry><box size="0.5 0.04 0.04"/></geometry></visual></link>
  <biobullet version="1"><gravity xyz="0 0 -9.81"/><initial joint="hinge" position="0"/></biobullet>
</robot>
"""


@pytest.fixture
def pendulum(tmp_path):
    path = tmp_path / "pendulum.urdf"
    path.write_text(PENDULUM)
    # the oracle (the exact pendulum ODE) has no limit, and these tests check that the bridge switches PyBullet's
    # own limit off: the model opts out of biobullet's URDF limit stops (joint_limits=False)
    return biobullet.load_model(path, joint_limits=False)


@pytest.fixture(scope="module")
def shoulder():
    return biobullet.load_model(SHOULDER)


def _pendulum_rhs(theta: float) -> float:
    """θ̈ of the pendulum: gravity torque about +y of a mass at (L cos θ, 0, −L sin θ) / I_O."""
    return MASS * 9.81 * LENGTH * np.cos(theta) / (I_COM + MASS * LENGTH ** 2)


def test_own_connection_is_direct_and_closed(shoulder):
    with Bridge(shoulder) as bridge:
        client = bridge.client
        assert pybullet.isConnected(physicsClientId=client)
        assert pybullet.getConnectionInfo(physicsClientId=client)["connectionMethod"] == pybullet.DIRECT
        assert bridge.dt == pytest.approx(1e-3)
        bridge.step()
    assert not pybullet.isConnected(physicsClientId=client)


def test_int_client_is_used_and_left_open(shoulder):
    client = pybullet.connect(pybullet.DIRECT)
    try:
        bridge = Bridge(shoulder, client, dt=2e-3)
        assert bridge.client == client and pybullet.getNumBodies(physicsClientId=client) == 1
        assert pybullet.getPhysicsEngineParameters(physicsClientId=client)["fixedTimeStep"] == 2e-3
        bridge.step()
        assert bridge.state()[0] == pytest.approx(2e-3)
        bridge.close()
        assert pybullet.isConnected(physicsClientId=client)
    finally:
        pybullet.disconnect(client)


def test_bullet_client_and_user_loaded_body(shoulder):
    from pybullet_utils.bullet_client import BulletClient
    bc = BulletClient(connection_mode=pybullet.DIRECT)
    try:
        other = bc.loadURDF(str(SHOULDER), useFixedBase=True, flags=pybullet.URDF_USE_INERTIA_FROM_FILE)
        body = bc.loadURDF(str(SHOULDER), basePosition=[1, 0, 0], useFixedBase=True,
                           flags=pybullet.URDF_USE_INERTIA_FROM_FILE)
        with Bridge(shoulder, bc, body_id=body) as bridge:
            assert bridge.client == bc._client and bridge.body == body
            assert bc.getNumBodies() == 2  # nothing extra loaded
            for _ in range(5):
                bridge.step()
            assert other != body
            assert bridge.time == pytest.approx(5 * bridge.dt)
        assert bc.isConnected()
    finally:
        bc.disconnect()


def test_user_body_without_file_inertia_is_rejected(shoulder):
    client = pybullet.connect(pybullet.DIRECT)
    try:
        body = pybullet.loadURDF(str(SHOULDER), useFixedBase=True, physicsClientId=client)
        with pytest.raises(ModelError, match="URDF_USE_INERTIA_FROM_FILE"):
            Bridge(shoulder, client, body_id=body)
        with pytest.raises(ModelError, match="body_id"):
            Bridge(shoulder, client, body_id=99)
    finally:
        pybullet.disconnect(client)


@pytest.mark.parametrize("kwargs, argument", [
    (dict(client="local"), "client"),
    (dict(client=12345), "client"),
    (dict(baumgarte=(1.0,)), "baumgarte"),
    (dict(baumgarte=(-1.0, 2.0)), "baumgarte"),
    (dict(dt=0.0), "dt"),
])
def test_bad_arguments_raise_model_error(shoulder, kwargs, argument):
    with pytest.raises(ModelError) as info:
        Bridge(shoulder, **kwargs)
    assert info.value.attribute == argument


def test_bad_model_and_vectors(shoulder):
    with pytest.raises(ModelError, match="model"):
        Bridge(42)
    with Bridge(str(SHOULDER)) as by_path:   # a path is loaded (issue 25)
        assert by_path.model.name == shoulder.name
    with Bridge(shoulder) as bridge:
        with pytest.raises(ModelError, match="tau"):
            bridge.apply(np.zeros(3))
        with pytest.raises(ModelError, match="record"):
            bridge.trajectory()


def test_gui_without_display_falls_back_to_direct(shoulder, monkeypatch):
    monkeypatch.delenv("DISPLAY", raising=False)
    with pytest.warns(RuntimeWarning, match="DISPLAY"):
        bridge = Bridge(shoulder, gui=True)
    with bridge:
        assert pybullet.getConnectionInfo(physicsClientId=bridge.client)["connectionMethod"] == pybullet.DIRECT


def test_plain_pybullet_would_hold_the_pendulum(pendulum):
    """Why the bridge exists: loaded as is, PyBullet's default velocity motors hold the joint still."""
    client = pybullet.connect(pybullet.DIRECT)
    try:
        body = pybullet.loadURDF(pendulum.file, useFixedBase=True, flags=pybullet.URDF_USE_INERTIA_FROM_FILE,
                                 physicsClientId=client)
        pybullet.setGravity(0, 0, -9.81, physicsClientId=client)
        for _ in range(200):
            pybullet.stepSimulation(physicsClientId=client)
        assert abs(pybullet.getJointState(body, 0, physicsClientId=client)[0]) < 0.05
    finally:
        pybullet.disconnect(client)


def test_free_pendulum_is_semi_implicit_euler_of_the_exact_ode(pendulum):
    """Motors, damping and the ±0.2 rad limit are off: the bridge reproduces, step for step, the semi-implicit
    Euler solution of the exact pendulum ODE (differences are round-off), and swings well past the limit."""
    dt, steps = 1e-3, 600
    with Bridge(pendulum, dt=dt, record=True) as bridge:
        for _ in range(steps):
            bridge.step()
        trajectory = bridge.trajectory()
    theta, omega, expected = 0.0, 0.0, [0.0]
    for _ in range(steps):
        omega += dt * _pendulum_rhs(theta)
        theta += dt * omega
        expected.append(theta)
    assert trajectory.t.shape == (steps + 1,)
    np.testing.assert_allclose(trajectory.positions[:, 0], expected, rtol=0, atol=1e-10)
    assert trajectory.positions[:, 0].max() > 1.0  # far beyond the URDF limit of 0.2 rad


def test_free_pendulum_converges_to_the_ode_solution(pendulum):
    """Against an accurate ODE solution the error is first order in dt (semi-implicit Euler)."""
    from scipy.integrate import solve_ivp
    t_end = 0.6
    reference = solve_ivp(lambda t, y: [y[1], _pendulum_rhs(y[0])], (0, t_end), [0.0, 0.0], method="DOP853",
                          rtol=1e-12, atol=1e-12).y[0, -1]
    errors = []
    for dt in (4e-3, 2e-3, 1e-3):
        with Bridge(pendulum, dt=dt) as bridge:
            for _ in range(round(t_end / dt)):
                bridge.step()
            errors.append(abs(bridge.state()[1][0] - reference))
    orders = np.log2(np.array(errors[:-1]) / errors[1:])
    assert np.all(orders > 0.9) and np.all(orders < 1.1), (errors, orders)
    assert errors[-1] < 5e-3
