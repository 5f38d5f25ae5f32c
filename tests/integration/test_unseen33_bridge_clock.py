"""The bridge's clock in the user's own loop on bodies that are only a floating base (a ball, a box): `bridge.time`
against PyBullet's own elapsed time (the sum of the fixedTimeStep of the steps it took) to 1e-12 s, and the contact
log's onset against free fall's closed form t = sqrt(2 h / g). Two defects of the watch (`bridge/outside.py`): a
setTimeStep was seen in the joints' positions only, so a body without joints never followed one; and a step that
left the state equal bit for bit while a torque was sent (a ball resting on its compliant contact, the contact force
its weight to the last bit) was taken for a repeated apply() — the clock stopped and the next step ran without the
contact force.
"""
from __future__ import annotations

import math

import numpy as np

import pytest

pybullet = pytest.importorskip("pybullet")

from biobullet.bridge import Bridge  # noqa: E402
from biobullet.loader import load_text  # noqa: E402

G, MASS, RADIUS = 9.81, 2.0, 0.1
STIFFNESS = 1e5   # N/m, critically damped below: the ball comes to rest on the ground within ≈ 0.1 s


@pytest.fixture
def client():
    cid = pybullet.connect(pybullet.DIRECT)
    pybullet.setGravity(0.0, 0.0, -G, physicsClientId=cid)   # the models' <gravity>: no BridgeWarning
    yield cid
    pybullet.disconnect(cid)


def _body(contact: bool, offset: str = "0 0 0") -> str:
    """A solid ball of MASS kg on a floating base (its COM at `offset` in the link frame), with a Kelvin–Voigt
    contact sphere of RADIUS at the link origin or none."""
    inertia = 0.4 * MASS * RADIUS ** 2
    law = (f'<contact name="C" link="ball" xyz="0 0 0" radius="{RADIUS!r}" normal_law="kelvin_voigt" '
           f'stiffness="{STIFFNESS!r}" damping="{2.0 * math.sqrt(STIFFNESS * MASS)!r}"/>' if contact else "")
    return (f'<robot name="unseen33_ball"><link name="ball"><inertial><origin xyz="{offset}"/>'
            f'<mass value="{MASS!r}"/><inertia ixx="{inertia!r}" iyy="{inertia!r}" izz="{inertia!r}" ixy="0" '
            f'ixz="0" iyz="0"/></inertial></link><biobullet version="1"><gravity xyz="0 0 {-G!r}"/>'
            f'<base type="floating"/>{law}</biobullet></robot>')


def _run(bridge: Bridge, client: int, steps: int, change_at: int, new_dt: float) -> tuple[list[float], list[float]]:
    """bridge.step() `steps` times, setTimeStep(new_dt) before step `change_at`: (bridge.time, PyBullet's elapsed
    time) after every step."""
    clock, elapsed, pybullet_time = [], [], 0.0
    for k in range(steps):
        if k == change_at:
            pybullet.setTimeStep(new_dt, physicsClientId=client)
        bridge.step()
        pybullet_time += pybullet.getPhysicsEngineParameters(physicsClientId=client)["fixedTimeStep"]
        clock.append(bridge.time)
        elapsed.append(pybullet_time)
    return clock, elapsed


@pytest.mark.parametrize("offset", ["0 0 0", "0.03 -0.02 0.05"])
def test_a_floating_body_without_joints_follows_set_time_step(client, tmp_path, offset):
    # a ball (and one whose COM is off its link frame) falling from 30 m, setTimeStep(1 ms → 0.25 ms) after 1000
    # steps: the clock read 2.0 s where PyBullet was at 1.25 s — the watch's step test looked at the joints after
    # the base only. Now the base's COM is tested too (p_{n+1} = p_n + h v_{n+1}, world axes)
    model = load_text(_body(contact=False, offset=offset), tmp_path)
    with Bridge(model, client, dt=1e-3, initial={"base_z": 30.0}) as bridge:
        clock, elapsed = _run(bridge, client, 2000, 1000, 2.5e-4)
        assert bridge.dt == 2.5e-4
    assert elapsed[-1] == pytest.approx(1.25, abs=1e-12)
    for k in range(2000):
        if k != 1000:   # (the step with the new dt shows in the state the next apply() reads)
            assert clock[k] == pytest.approx(elapsed[k], abs=1e-12), k


def test_a_resting_ball_keeps_the_clock_and_follows_set_time_step(client, tmp_path):
    # the ball dropped from 0.2 m onto its critically damped contact comes to rest where the contact force is its
    # weight to the last bit: a step then leaves the state unchanged although a force is sent, which the watch took
    # for a repeated apply() (5 of 2000 steps: the clock 5 ms behind PyBullet's, and each next step ran without the
    # contact force — the ball fell 9.8e-6 m). At rest the positions cannot show a setTimeStep either (the clock
    # kept 1 ms a step after it): the client's time step is read there
    model = load_text(_body(contact=True), tmp_path)
    with Bridge(model, client, dt=1e-3, initial={"base_z": RADIUS + 0.2}) as bridge:
        clock, elapsed = _run(bridge, client, 2000, 1000, 2.5e-4)
        height = pybullet.getBasePositionAndOrientation(bridge.body, physicsClientId=client)[0][2]
        assert max(abs(a - b) for a, b in zip(clock[:1000], elapsed[:1000])) <= 1e-12   # (1 ms steps)
        assert bridge.dt == 2.5e-4
    assert max(abs(a - b) for a, b in zip(clock, elapsed)) <= 1e-12
    # at rest on the contact: its deflection is the weight's, m g / k (Hooke; the damper is idle at rest)
    assert height == pytest.approx(RADIUS - MASS * G / STIFFNESS, abs=1e-12)


def test_the_contact_onset_follows_a_time_step_changed_in_the_fall(client, tmp_path):
    # the ball dropped from h = 0.2 m, setTimeStep(1 ms → 0.25 ms) after 0.1 s: its onset was logged at ≈ 0.5 s
    # (the clock counting 1 ms for each 0.25 ms step). Now at free fall's t = sqrt(2h/g) = 0.2019 s to first order
    # in dt: semi-implicit Euler's fall leads by ½ g t dt in position, so by ≤ dt/2 = 0.5 ms in time at the larger
    # dt, and the onset is logged at the end of the step that finds the penetration (≤ one step of 0.25 ms later)
    h = 0.2
    model = load_text(_body(contact=True), tmp_path)
    with Bridge(model, client, dt=1e-3, initial={"base_z": RADIUS + h}) as bridge:
        clock, elapsed = _run(bridge, client, 800, 100, 2.5e-4)
        onset = bridge.contacts.intervals()[0]["start"]
    assert clock[-1] == pytest.approx(elapsed[-1], abs=1e-12)
    assert abs(onset - math.sqrt(2.0 * h / G)) <= 0.5e-3 + 2.5e-4


def test_a_second_apply_is_still_a_repeat_on_the_ball(client, tmp_path):
    # the repeat test now asks whether a step would have moved the state: a ball thrown down onto its contact
    # (0.1 s of fall, then 50 ms pressed into it, not yet at rest), apply() twice before each stepSimulation(),
    # against one apply() per step: the same states and the same clock (the second call replaces the first; a missed
    # repeat sends the contact force twice and advances the clock twice — on merge every falling step's second
    # apply() did: nothing is sent there, and a sent torque was the test)
    model = load_text(_body(contact=True), tmp_path)
    runs = []
    for twice in (False, True):
        with Bridge(model, client, dt=1e-3, initial={"base_z": RADIUS + 0.1, "base_vz_dot": -0.5}) as bridge:
            for _ in range(150):
                bridge.apply()
                if twice:
                    bridge.apply()
                pybullet.stepSimulation(physicsClientId=client)
            runs.append((bridge.time, pybullet.getBasePositionAndOrientation(bridge.body, physicsClientId=client)[0],
                         pybullet.getBaseVelocity(bridge.body, physicsClientId=client)[0]))
    (t1, p1, v1), (t2, p2, v2) = runs
    assert t1 == pytest.approx(0.15, abs=1e-12) and t2 == pytest.approx(t1, abs=1e-12)
    assert p2 == pytest.approx(p1, abs=1e-12) and v2 == pytest.approx(v1, abs=1e-10)


# ---------------------------------------------------------------------------------------------- the watch with rows
# `apply()` with rows (joint functions, loops) or with a tau= argument takes the watch's `observe` (`_surprise_py`),
# which tested the 1-DOF joints' positions only and, without rows, followed nothing at all: a setTimeStep was missed
# by a body at rest, by a floating base whose joints do not move, by a body of spherical joints alone, and by any
# body stepped with tau= — the clock kept 1 ms a step after the change to 0.25 ms (0.4 s where PyBullet was at
# 0.25 s after 400 steps). Now `observe` tests a floating base's COM too, reads the client's time step where no
# tested position moved (`_blind_step`) and follows a jump without rows as the plan without rows does.

def _clock_run(bridge: Bridge, client: int, tau=None) -> tuple[list[float], list[float]]:
    """400 steps (bridge.step(tau)), setTimeStep(1 ms → 0.25 ms) before step 200: (bridge.time, PyBullet's elapsed
    time) after every step."""
    clock, elapsed, pybullet_time = [], [], 0.0
    for k in range(400):
        if k == 200:
            pybullet.setTimeStep(2.5e-4, physicsClientId=client)
        bridge.step(tau)
        pybullet_time += pybullet.getPhysicsEngineParameters(physicsClientId=client)["fixedTimeStep"]
        clock.append(bridge.time)
        elapsed.append(pybullet_time)
    return clock, elapsed


def _assert_clock_follows(bridge: Bridge, clock: list[float], elapsed: list[float]) -> None:
    assert bridge.dt == 2.5e-4
    assert elapsed[-1] == pytest.approx(0.25, abs=1e-12)   # 200 steps of 1 ms, 200 of 0.25 ms
    for k in range(400):
        if k != 200:   # (the step with the new dt shows in the state the next apply() reads)
            assert clock[k] == pytest.approx(elapsed[k], abs=1e-12), k


def test_a_spherical_pendulum_stepped_with_tau_follows_set_time_step(client, tmp_path):
    # a fixed base whose only joint is spherical (no 1-DOF joint to show the step's length), stepped with a torque
    # argument (the watch's `observe`, no rows): the clock read 0.4 s where PyBullet was at 0.25 s
    from spherical_arms import PENDULUM   # (tests/spherical_arms.py)
    model = load_text(PENDULUM.replace(
        "</robot>", f'<biobullet version="1"><gravity xyz="0 0 {-G!r}"/></biobullet></robot>'), tmp_path)
    with Bridge(model, client, dt=1e-3) as bridge:
        clock, elapsed = _clock_run(bridge, client, tau=[0.01, -0.02, 0.005])
        _assert_clock_follows(bridge, clock, elapsed)


def test_an_arm_stepped_with_tau_follows_set_time_step(client, tmp_path):
    # a swinging arm (a 1-DOF elbow between two spherical joints) stepped with tau=: its joints showed the jump,
    # but the watch followed a jump only where there were rows to project
    from spherical_arms import ARM
    model = load_text(ARM.replace("</robot>", f'<biobullet version="1"><gravity xyz="0 0 {-G!r}"/></biobullet>'
                                              "</robot>"), tmp_path)
    with Bridge(model, client, dt=1e-3) as bridge:
        clock, elapsed = _clock_run(bridge, client, tau=np.zeros(model.n_tangent))
        _assert_clock_follows(bridge, clock, elapsed)


def test_a_floating_coupled_arm_in_free_fall_follows_set_time_step(client, tmp_path):
    # a joint function's rows on a floating base in free fall from rest: uniform gravity leaves every joint at rest,
    # only the base's COM moves (p_{n+1} = p_n + h v_{n+1}), which `_surprise_py` did not test
    from spherical_arms import COUPLED
    text = COUPLED.replace('velocity="1.5"', 'velocity="0"').replace(
        "<biobullet>", f'<biobullet><gravity xyz="0 0 {-G!r}"/>')
    (tmp_path / "coupled_arm.urdf").write_text(text)
    import biobullet
    model = biobullet.load_model(tmp_path / "coupled_arm.urdf", floating_base=True)
    with Bridge(model, client, dt=1e-3) as bridge:
        clock, elapsed = _clock_run(bridge, client)
        _assert_clock_follows(bridge, clock, elapsed)
        assert max(abs(r) for r in bridge.constraint_residuals().values()) <= 1e-6   # (the bridge's promise)


def test_a_loop_model_at_rest_follows_set_time_step(client, tmp_path):
    # the four-bar knee (loop rows) without gravity, at rest: no position moves, so none can show the step's
    # length; the client's time step is read there (as the plan without rows reads it for a resting body)
    from pathlib import Path
    text = (Path(__file__).resolve().parents[2] / "urdf" / "fourbar_knee.urdf").read_text()
    assert text.count('<gravity xyz="0 0 -9.81"/>') == 1
    model = load_text(text.replace('<gravity xyz="0 0 -9.81"/>', '<gravity xyz="0 0 0"/>'), tmp_path)
    pybullet.setGravity(0.0, 0.0, 0.0, physicsClientId=client)
    with Bridge(model, client, dt=1e-3) as bridge:
        clock, elapsed = _clock_run(bridge, client)
        _assert_clock_follows(bridge, clock, elapsed)
