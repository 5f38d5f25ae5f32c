"""The bridge inside the user's own PyBullet loop follows PyBullet's state as that loop sets it (bridgefix round):

- `joint_reactions` after `changeDynamics(body, link, mass=...)`: the masses PyBullet steps with, checked against
  PyBullet's own joint force-torque sensors (enableJointForceTorqueSensor) as tests/integration/
  test_bridge_reactions.py does (dt = 0.01 ms: the two differ by O(dt²), 1e-6 relative there);
- a jump (restoreState, resetBasePositionAndOrientation) into a compliant contact starts a new contact episode
  from the state jumped to, as a run started there does (`Contact.begin`: δ̇⁻ = the penetration rate there),
  checked against the reference engine started from that state;
- `setGravity` on a floating body is followed (bridge.gravity is the client's);
- a body the user loaded at a base pose of their own keeps it;
- a repeated `apply()` at an exact rest keeps the clock and sends the step's forces once.
"""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

pybullet = pytest.importorskip("pybullet")

import biobullet  # noqa: E402
from biobullet.bridge import Bridge  # noqa: E402
from biobullet.contact.testbed import ball_urdf  # noqa: E402
from biobullet.bridge.reactions import (  # noqa: E402
    enable_force_torque_sensors,
    joint_reactions,
    pybullet_sensor_reactions,
)
from biobullet.model.bundled import bundled_model  # noqa: E402
from test_unseen33_bridge_clock import client  # noqa: E402,F401  (a DIRECT client at the models' gravity)


# ------------------------------------------------------------------ joint reactions after changeDynamics(mass=)
def _reactions_after_mass_change(name: str, link: str, factor: float, dt: float = 1e-5) -> tuple[float, float]:
    """(force, moment) relative gap between `joint_reactions` and PyBullet's sensors for one actuated step from a
    random pose at rest, after `changeDynamics(mass=factor × stored)` of `link` (test_bridge_reactions' recipe)."""
    model = biobullet.load_model(bundled_model(name), joint_limits=False)
    with Bridge(model, dt=dt) as bridge:
        rng = np.random.default_rng(1)
        q = model.neutral_configuration()
        first = model.nq - len(model.joint_names) if model.floating_base else 0
        q[first:] = rng.uniform(-1.0, 1.0, model.nq - first)
        bridge.reset(q, np.zeros(model.nv))
        index = bridge.map.link_index[link]
        stored = pybullet.getDynamicsInfo(bridge.body, index, physicsClientId=bridge.client)[0]
        pybullet.changeDynamics(bridge.body, index, mass=factor * stored, physicsClientId=bridge.client)
        enable_force_torque_sensors(bridge)
        _, x, _ = bridge.state()
        bridge.apply(generalized=5.0 * rng.normal(size=model.nv))
        ours = joint_reactions(bridge)
        pybullet.stepSimulation(physicsClientId=bridge.client)
        theirs = pybullet_sensor_reactions(bridge, x)
    scale = max(max(np.abs(r.force).max(), np.abs(r.moment).max()) for r in theirs.values())
    return (max(np.abs(ours[k].force - theirs[k].force).max() for k in theirs) / scale,
            max(np.abs(ours[k].moment - theirs[k].moment).max() for k in theirs) / scale)


@pytest.mark.parametrize("name, link", [("arm7.urdf", "link_4"),            # fixed base
                                        ("coupled_chain.urdf", "middle"),   # a joint function's rows
                                        ("pitching_arm.urdf", "forearm"),   # floating base, a distal link
                                        ("pitching_arm.urdf", "upper_trunk")])   # the floating base itself
def test_joint_reactions_take_the_mass_pybullet_steps_with(name, link):
    # before: the file's masses (0.19, 0.85, 0.38 and 1.08 of the largest sensor reading off with the link at 3×
    # its mass); now the inertias PyBullet stores (≤ 3e-7 measured; 1e-6 is test_bridge_reactions' bound at this dt)
    force, moment = _reactions_after_mass_change(name, link, 3.0)
    assert force <= 1e-6 and moment <= 1e-6, (force, moment)


# ------------------------------------------------------------------ a jump into a compliant contact
HU_GUO = {"normal_law": "hu_guo", "stiffness": "1e5", "restitution": "0.8"}


def _engine_apex(model, q, v, coordinate: str, t_end: float) -> float:
    """The highest `coordinate` of the reference engine's run from (q, v) after its first separation (m)."""
    run = biobullet.simulate(model, t_end, initial=(q, v), progress=False, rtol=1e-10, atol=1e-12,
                             t_eval=np.linspace(0.0, t_end, 20001))
    end = run.meta["discrete"]["C"]["intervals"][0]["end"]
    return float(np.max(run.column(coordinate)[run.t >= end]))


def _bridge_apex(bridge, index: int, steps: int) -> float:
    """The highest tree coordinate x[index] over `steps` bridge.step() calls (m)."""
    top = -np.inf
    for _ in range(steps):
        bridge.step()
        top = max(top, float(bridge.state()[1][index]))
    return top


def test_restore_state_into_a_contact_starts_its_episode_there(client, tmp_path):
    # a Hu–Guo ball on a prismatic joint dropped from 0.5 m: saveState 2 ms into its first impact, run into the
    # second impact (δ̇⁻ 2.33 m/s there), restoreState. Before, the bridge kept the second episode's δ̇⁻ (the
    # restored state's own rate is 2.94 m/s): rebound apex 0.297 m. The reference engine started from the restored
    # state (its `Contact.begin`: δ̇⁻ = the rate there) reaches 0.327 m; the bridge now does to first order in dt
    # (measured 4.1e-4 m at dt = 0.1 ms; the O(dt) step error of an impact is ≈ g dt per impact: 1e-3 m)
    from biobullet.contact.testbed import drop_urdf
    from biobullet.loader import load_text
    model = load_text(drop_urdf(HU_GUO, radius=0.05), tmp_path)
    with Bridge(model, client, dt=1e-4, initial={"drop": 0.5}) as bridge:
        while bridge.state()[1][0] > 0.05:
            bridge.step()
        for _ in range(20):
            bridge.step()
        saved = pybullet.saveState(physicsClientId=client)
        _, q, v = bridge.generalized_state()
        _bridge_apex(bridge, 0, 4000)
        while bridge.state()[1][0] > 0.05:   # into the second impact
            bridge.step()
        for _ in range(20):
            bridge.step()
        pybullet.restoreState(saved, physicsClientId=client)
        apex = _bridge_apex(bridge, 0, 4000)
        episodes = bridge.contacts.intervals()
    reference = _engine_apex(model, q, v, "drop", 0.4)
    assert abs(apex - reference) <= 1e-3, (apex, reference)
    restored = episodes[-1]
    assert restored["initial"] and restored["impact_velocity"] == pytest.approx(-v[0], rel=1e-12)
    assert episodes[-2]["rebound_velocity"] is None and episodes[-2]["restitution"] is None   # cut by the jump


def test_a_base_reset_into_the_ground_starts_a_new_episode(client, tmp_path):
    # a Hu–Guo ball landed (δ̇⁻ ≈ 0.99 m/s), then resetBasePositionAndOrientation 4 mm into the ground, which
    # PyBullet does at rest (it zeroes the base velocity): the episode now starts there, δ̇⁻ = 0 floored at the
    # law's min_impact_velocity, as the reference engine started from that state does. Before, the landing's
    # δ̇⁻ stayed (a light damping where the state says a start at rest): 6.8e-5 m above the engine's after
    # 0.1 s; now 5.3e-8 m (the O(dt) step error of a slow creep; tau= takes the watch's general path, where a
    # floating base's reset shows in its COM only)
    from biobullet.loader import load_text
    model = load_text(ball_urdf(HU_GUO), tmp_path)
    depth, t_end = 0.004, 0.1
    with Bridge(model, client, dt=1e-4, initial={"base_z": 0.15}) as bridge:
        for _ in range(1200):
            bridge.step(tau=np.zeros(model.n_tangent))
        assert bridge.contacts.intervals()[0]["impact_velocity"] > 0.5   # landed
        pybullet.resetBasePositionAndOrientation(bridge.body, [0.0, 0.0, 0.1 - depth], [0.0, 0.0, 0.0, 1.0],
                                                 physicsClientId=client)
        _, q, v = bridge.generalized_state()
        assert not v.any()
        for _ in range(round(t_end / 1e-4)):
            bridge.step(tau=np.zeros(model.n_tangent))
        height = float(bridge.state()[1][2])
        episode = bridge.contacts.intervals()[-1]
    run = biobullet.simulate(model, t_end, initial=(q, v), progress=False, rtol=1e-10, atol=1e-12)
    assert abs(height - float(run.column("base_z")[-1])) <= 1e-6, (height, float(run.column("base_z")[-1]))
    assert episode["initial"] and episode["impact_velocity"] == 0.0


# ------------------------------------------------------------------ setGravity on a floating body
@pytest.mark.parametrize("name", ["coupled_chain.urdf", "fourbar_knee.urdf"])   # a joint function; a loop
def test_a_floating_body_in_flight_follows_set_gravity(client, name):
    # uniform gravity moves no joint of a body in flight, and the watch skipped the base's linear velocity (read in
    # the root frame it misses the step at first order in dt): bridge.gravity stayed −9.81 for good, and with it
    # the bridge's own h. The base COM's world velocity is now checked where PyBullet's step is exact (to 1e-11 of
    # dt |a|): the next apply() follows, silently (nothing broken). Checked against the client's gravity and the
    # closed form of h at rest: its base force rows are −m Rᵀ g (m the total mass PyBullet stores)
    model = biobullet.load_model(bundled_model(name), floating_base=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # (no CouplingWarning: no row was off)
        with Bridge(model, client, dt=1e-3, initial={"base_z": 5.0}) as bridge:
            for _ in range(5):
                bridge.step()
            pybullet.setGravity(0.0, 0.0, -3.0, physicsClientId=client)
            bridge.step()
            bridge.step()
            assert bridge.gravity == (0.0, 0.0, -3.0)
            _, x, xd = bridge.state()
            _, bias = bridge.tree_mass_and_bias(x, np.zeros_like(xd), source="stored")
            mass = sum(pybullet.getDynamicsInfo(bridge.body, link, physicsClientId=client)[0]
                       for link in range(-1, pybullet.getNumJoints(bridge.body, physicsClientId=client)))
            rotation = np.array(pybullet.getMatrixFromQuaternion(x[3:7])).reshape(3, 3)
    assert bias[:3] == pytest.approx(-mass * rotation.T @ np.array([0.0, 0.0, -3.0]), abs=1e-12 * mass * 3.0)


def test_a_ball_at_rest_follows_set_gravity(client, tmp_path):
    # a ball resting on its Kelvin–Voigt contact (the plan without rows): at rest the watch reads the client's time
    # step (a blind step), and now its gravity too — before, bridge.gravity kept −9.81 m/s² after setGravity(−3)
    from biobullet.loader import load_text
    law = {"normal_law": "kelvin_voigt", "stiffness": "1e5", "damping": repr(2.0 * math.sqrt(1e5 * 2.0))}
    model = load_text(ball_urdf(law), tmp_path)
    with Bridge(model, client, dt=1e-3, initial={"base_z": 0.1}) as bridge:
        for _ in range(500):
            bridge.step()
        pybullet.setGravity(0.0, 0.0, -3.0, physicsClientId=client)
        for _ in range(1000):
            bridge.step()
        assert bridge.gravity == (0.0, 0.0, -3.0)
        height = pybullet.getBasePositionAndOrientation(bridge.body, physicsClientId=client)[0][2]
    assert height == pytest.approx(0.1 - 2.0 * 3.0 / 1e5, abs=1e-12)   # Hooke: the new weight's deflection


# ------------------------------------------------------------------ a body the user loaded at a pose of their own
def _load_at(client, model, position, orientation) -> int:
    return pybullet.loadURDF(str(model.file), basePosition=position, baseOrientation=orientation,
                             useFixedBase=False, flags=pybullet.URDF_USE_INERTIA_FROM_FILE, physicsClientId=client)


@pytest.mark.parametrize("name", ["pitching_arm.urdf", "coupled_chain.urdf"])   # joints; a joint function
def test_a_loaded_body_keeps_its_base_pose(client, name):
    # loadURDF(basePosition=(1, 2, 3), baseOrientation=Euler(0.1, 0.2, 0.3)), then Bridge(body_id=): before, the
    # body was put at the origin (the file's default pose) without a word; now PyBullet's base pose is kept (the
    # COM pose it reports back to round-off: the bridge writes the link frame, 3e-17 measured), and the run goes on
    # from it: at rest in a uniform field no joint moves and the base COM falls as semi-implicit Euler's free fall,
    # z_n = z_0 − g dt² n (n + 1)/2, to round-off
    model = biobullet.load_model(bundled_model(name), floating_base=True)
    orientation = pybullet.getQuaternionFromEuler([0.1, 0.2, 0.3])
    body = _load_at(client, model, [1.0, 2.0, 3.0], orientation)
    before = pybullet.getBasePositionAndOrientation(body, physicsClientId=client)
    dt, steps = 1e-3, 100
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # (nothing to announce)
        with Bridge(model, client, body_id=body, dt=dt) as bridge:
            position, turned = pybullet.getBasePositionAndOrientation(body, physicsClientId=client)
            assert position == pytest.approx(before[0], abs=1e-14)
            assert abs(abs(float(np.dot(turned, before[1]))) - 1.0) <= 1e-14
            for _ in range(steps):
                bridge.step()
            centre = pybullet.getBasePositionAndOrientation(body, physicsClientId=client)[0]
    fall = 9.81 * dt * dt * steps * (steps + 1) / 2.0
    assert centre == pytest.approx([before[0][0], before[0][1], before[0][2] - fall], abs=1e-12)


def test_a_base_pose_given_in_initial_is_taken(client):
    # the counterpart: initial= naming a base coordinate chooses the pose (the others the model's default)
    model = biobullet.load_model(bundled_model("pitching_arm.urdf"))
    body = _load_at(client, model, [1.0, 2.0, 3.0], [0.0, 0.0, 0.0, 1.0])
    with Bridge(model, client, body_id=body, initial={"base_z": 0.5}) as bridge:
        assert bridge.generalized_state()[1][:7] == pytest.approx([0.0, 0.0, 0.5, 0.0, 0.0, 0.0, 1.0], abs=1e-15)


# ------------------------------------------------------------------ a repeated apply() at an exact rest
def _hold(bridge) -> None:
    """The bridge's own motors hold every coordinate where it is (rows of its constrained solve)."""
    q = bridge.generalized_state()[1]
    for k, name in enumerate(bridge.model.coordinate_names):
        bridge.set_motor(name, position=float(q[k]), max_force=1e4)


def _rest_runs(client, model, initial, steps: int = 2000, hold: bool = False,
               **options) -> list[tuple[float, tuple, tuple]]:
    """(bridge.time, PyBullet's base or joint positions, rates) after `steps` steps at rest, one apply() per step and
    two (the second replaces the first) from step 200 on; hold: the bridge's motors hold the coordinates."""
    runs = []
    for twice in (False, True):
        with Bridge(model, client, dt=1e-3, initial=initial, **options) as bridge:
            if hold:
                _hold(bridge)
            for k in range(steps):
                bridge.apply()
                if twice and k >= 200:
                    bridge.apply()
                pybullet.stepSimulation(physicsClientId=client)
            _, x, xd = bridge.state()
            runs.append((bridge.time, tuple(x), tuple(xd)))
    return runs


PENDULUM = ('<robot name="pendulum"><link name="world"/><link name="bob"><inertial><origin xyz="0 0 -0.5"/>'
            '<mass value="1"/><inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link>'
            '<joint name="hinge" type="continuous"><parent link="world"/><child link="bob"/><axis xyz="0 1 0"/>'
            '</joint><biobullet version="1"><gravity xyz="0 0 -9.81"/></biobullet></robot>')


@pytest.mark.parametrize("kind", ["ball", "drop", "pendulum"])
def test_a_repeated_apply_at_an_exact_rest_is_a_repeat(client, tmp_path, kind):
    # (a floating ball without joints; a ball on a prismatic joint; a pendulum hanging straight down, its gravity
    # torque exactly zero, nothing sent: every repeat was a step there, the clock 1.8 s ahead)
    # a ball resting on its critically damped Kelvin–Voigt contact, the contact force its weight to the last bit:
    # a step there can leave the state equal bit for bit, and the watch took a repeated apply() for a step where
    # nothing showed the difference (14 and 18 of 1800 repeats: the clock 14 / 18 ms ahead of PyBullet's, and the
    # contact force sent twice into the next step, 1e-8 m/s off). Now the step at rest is marked — the joint's
    # force-torque reading zeroed (a step writes its load), or for a body without joints a nudge of 1e-12 of the
    # force: twice per step equals once per step bit for bit, and the clock is PyBullet's elapsed time (the
    # pendulum, nothing acting, was not marked — nothing was sent to carry the nudge — until every path nudged a step
    # at an exact rest, nothing sent or not)
    from biobullet.contact.testbed import drop_urdf
    from biobullet.loader import load_text
    mass = 2.0 if kind == "ball" else 1.0
    law = {"normal_law": "kelvin_voigt", "stiffness": "1e5", "damping": repr(2.0 * math.sqrt(1e5 * mass))}
    if kind == "ball":
        model, initial = load_text(ball_urdf(law, mass=mass), tmp_path), {"base_z": 0.1 - mass * 9.81 / 1e5}
    elif kind == "pendulum":
        model, initial = load_text(PENDULUM, tmp_path), {}
    else:
        model, initial = load_text(drop_urdf(law, radius=0.05), tmp_path), {"drop": 0.05 - 9.81 / 1e5}
    (t1, x1, v1), (t2, x2, v2) = _rest_runs(client, model, initial)
    assert t1 == pytest.approx(2.0, abs=1e-12) and t2 == pytest.approx(t1, abs=1e-12)
    assert x2 == x1 and v2 == v1


def test_a_rest_with_nothing_acting_is_marked_after_the_first_step(client):
    # arm7 at rest without gravity, nothing acting: nothing was sent and its first joint carries nothing, so no mark
    # told a step from a repeated apply(): counted as a step (the clock 0.2 s ahead of PyBullet's over 200 repeats).
    # Now every step after the first carries the nudge alone (`OutsideWatch.nudge`): the clock is PyBullet's (400
    # steps of 1 ms) with one apply() per step and with two. The first step after the bridge's start is not nudged
    # (bit for bit the step PyBullet takes with the torques asked for): it is the one still named, once per bridge
    from biobullet.bridge.lifecycle import BridgeWarning
    pybullet.setGravity(0.0, 0.0, 0.0, physicsClientId=client)
    model = biobullet.load_model(bundled_model("arm7.urdf"))
    with pytest.warns(BridgeWarning, match="is at an exact rest with nothing acting at t = 0.001 s") as caught:
        runs = _rest_runs(client, model, {}, steps=400, gravity="client")
    assert len([w for w in caught if issubclass(w.category, BridgeWarning)]) == 2   # one per bridge
    assert runs[0][0] == pytest.approx(0.4, abs=1e-12) and runs[1][0] == pytest.approx(0.4, abs=1e-12)
    assert runs[1][1] == runs[0][1] and runs[1][2] == runs[0][2]


def test_a_repeated_apply_held_at_rest_by_the_bridges_motors_is_a_repeat(client):
    # the coupled chain (a joint function) held where it starts by bridge.set_motor on every coordinate: at rest
    # the step's motor and constraint torques balance gravity to the last bit, and 5 of 1800 repeats were taken for
    # steps (the clock 5 ms ahead, the torques sent twice: the elbow's function 3.6e-6 rad off, named as "a force
    # outside"). Now twice per step equals once per step bit for bit
    model = biobullet.load_model(bundled_model("coupled_chain.urdf"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # (nothing left the rows)
        (t1, x1, v1), (t2, x2, v2) = _rest_runs(client, model, None, hold=True)
    assert t1 == pytest.approx(2.0, abs=1e-12) and t2 == pytest.approx(t1, abs=1e-12)
    assert x2 == x1 and v2 == v1


@pytest.mark.parametrize("floating", [True, False])
def test_an_action_repeat_is_no_jump_for_the_contacts(client, tmp_path, floating):
    # three stepSimulation() per apply() move the state as three steps (the last two free: PyBullet clears the
    # bridge's forces after the first) — no reset happened, so no contact episode may start again (a jump's
    # `initial` interval): the watch tells k free steps from a reset (`OutsideWatch._reset`); before that check, this
    # loop opened 127 intervals on the ball
    from biobullet.contact.testbed import drop_urdf
    from biobullet.loader import load_text
    model = load_text(ball_urdf(HU_GUO) if floating else drop_urdf(HU_GUO, radius=0.05), tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # (the action repeat's own warning, where it is named)
        with Bridge(model, client, dt=1e-4, initial={"base_z": 0.3} if floating else {"drop": 0.3}) as bridge:
            for _ in range(1500):
                bridge.apply()
                for _ in range(3):
                    pybullet.stepSimulation(physicsClientId=client)
            episodes = bridge.contacts.intervals()
    assert episodes and not any(episode["initial"] for episode in episodes)
