"""Leftovers of the last stop (leftapi round): API arguments, file ranges, the bridge's contact bookkeeping.

- the bridge's by-name values (`apply(tau={...})`, `apply(generalized={...})`, `step`, `reset(NAME=...)`,
  `set_motor`'s targets and gains) and its torque vectors refuse text, flags and None with one ModelError naming
  the argument and the joint (before: "0.3" was read as 0.3 N·m, a list of bools as 1 N·m); a refused call
  leaves the run as if it had not been made (checked against the same run without it, bit for bit);
- `<joint_stop exponent=>` in [1, 3] ((1, 3] smooth) and a restitution law's `restitution` in [0.01, 1], checked
  when the file is read, naming the file, the element and the attribute, with the range;
- a resetJointState / resetBasePositionAndOrientation / restoreState before the bridge's first apply() starts the
  contact episodes from that state, as the reference engine started there does;
- the README's claim that a spherical joint inside a loop is refused at load, naming the loop and the joint.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

pybullet = pytest.importorskip("pybullet")

import biobullet  # noqa: E402
from biobullet.bridge import Bridge  # noqa: E402
from biobullet.contact.testbed import ball_urdf, drop_urdf  # noqa: E402
from biobullet.core.errors import ModelError  # noqa: E402
from biobullet.forces import force_elements  # noqa: E402
from biobullet.loader import load_text  # noqa: E402
from biobullet.model.bundled import bundled_model  # noqa: E402
from test_unseen33_bridge_clock import client  # noqa: E402,F401  (a DIRECT client at the models' gravity)

HU_GUO = {"normal_law": "hu_guo", "stiffness": "1e5", "restitution": "0.8"}


# ------------------------------------------------------------------ 1. the bridge's number arguments
def _calls(joint: str, n: int) -> dict:
    """Bridge calls with one non-number among their values, by the argument they must name."""
    flags = [0.0] * n
    flags[0] = True
    return {
        "tau text": ("tau", lambda b: b.apply(tau={joint: "0.3"})),
        "tau None": ("tau", lambda b: b.apply(tau={joint: None})),
        "tau numpy flag": ("tau", lambda b: b.apply(tau={joint: np.True_})),
        "tau list of flags": ("tau", lambda b: b.apply(tau=flags)),
        "generalized text": ("generalized", lambda b: b.apply(generalized={joint: "0.3"})),
        "step tau text": ("tau", lambda b: b.step(tau={joint: "0.3"})),
        "reset text": (joint, lambda b: b.reset(**{joint: "0.3"})),
        "motor position text": ("position", lambda b: b.set_motor(joint, "0.3")),
        "motor velocity text": ("velocity", lambda b: b.set_motor(joint, 0.3, "0.1")),
        "motor gain text": ("position_gain", lambda b: b.set_motor(joint, 0.3, position_gain="0.1")),
    }


@pytest.mark.parametrize("case", list(_calls("j", 1)))
def test_bridge_number_arguments_refuse_non_numbers_naming_argument_and_joint(client, case):
    # before: "0.3" was sent as 0.3 N·m (tau, generalized, step), set as a pose (reset) or a motor target, and a
    # list of bools as 1 N·m: every case but None ran
    model = biobullet.load_model(bundled_model("arm7.urdf"))
    joint = model.joint_names[0]
    argument, call = _calls(joint, model.n_tangent)[case]
    with Bridge(model, client, dt=1e-3) as bridge:
        with pytest.raises(ModelError) as info:
            call(bridge)
        assert not bridge.motors
    assert info.value.argument == argument
    assert f"argument '{argument}'" in str(info.value) and repr(joint) in str(info.value)


def test_by_name_numbers_are_the_vectors_entries(client):
    # the numbers still taken: {joint: 0.25} (a NumPy float too) + generalized {coordinate: 0.5} send 0.75 N·m at
    # that joint: the step equals PyBullet's own step with that torque set by hand (from the same saved state)
    model = biobullet.load_model(bundled_model("arm7.urdf"))
    joint = model.joint_names[2]
    with Bridge(model, client, dt=1e-3) as bridge:
        joints = [int(k) for k in bridge.map.joint_indices]
        saved = pybullet.saveState(physicsClientId=client)
        sent = bridge.apply(tau={joint: np.float32(0.25)}, generalized={model.velocity_names[2]: 0.5})
        pybullet.stepSimulation(physicsClientId=client)
        ours = pybullet.getJointStates(bridge.body, joints, physicsClientId=client)
        pybullet.restoreState(saved, physicsClientId=client)
        torque = [0.0] * len(joints)
        torque[2] = 0.75
        pybullet.setJointMotorControlArray(bridge.body, joints, pybullet.TORQUE_CONTROL, forces=torque,
                                           physicsClientId=client)
        pybullet.stepSimulation(physicsClientId=client)
        theirs = pybullet.getJointStates(bridge.body, joints, physicsClientId=client)
    assert sent[2] == 0.75 and not np.delete(sent, 2).any()
    assert [s[:2] for s in ours] == [s[:2] for s in theirs]
    assert abs(theirs[2][1]) > 1e-4   # (the torque moved the joint)


def test_a_refused_apply_leaves_the_run_as_without_it(client, tmp_path):
    # a Hu–Guo ball on a prismatic joint inside its impact: apply(tau={"drop": "1"}) refused between two steps; the
    # contacts' and the watch's bookkeeping saw nothing: the run equals the run without that call bit for bit
    model = load_text(drop_urdf(HU_GUO, radius=0.05), tmp_path)

    def run(refuse: bool) -> tuple[np.ndarray, list]:
        with Bridge(model, client, dt=1e-4, initial={"drop": 0.049, "drop_dot": -1.0}) as bridge:
            for k in range(200):
                if refuse and k == 40:
                    with pytest.raises(ModelError):
                        bridge.apply(tau={"drop": "1"})
                bridge.step(tau={"drop": 0.5})
            return bridge.state()[1], bridge.contacts.intervals()
    (x, episodes), (x_refused, episodes_refused) = run(False), run(True)
    assert np.array_equal(x, x_refused) and episodes == episodes_refused


# ------------------------------------------------------------------ 2. ranges of the files' laws
def _stop_file(tmp_path: Path, attributes: str) -> Path:
    text = drop_urdf({"normal_law": "hertz", "stiffness": "1e5"}).replace(
        "</biobullet>", f'<joint_stop name="S" joint="drop" lower="-0.1" stiffness="1e4" {attributes}/></biobullet>')
    path = tmp_path / "stop.urdf"
    path.write_text(text)
    return path


@pytest.mark.parametrize("attributes, expected", [
    ('exponent="100"', "(1, 3]"),                       # before: loaded; k p^100 = 1e-196 N at p = 0.01 m
    ('exponent="1e6"', "(1, 3]"),                       # before: loaded; overflow beyond p = 1
    ('exponent="3.5" type="switched"', "[1, 3]"),
])
def test_joint_stop_exponent_outside_its_law_is_refused_at_load(tmp_path, attributes, expected):
    path = _stop_file(tmp_path, attributes)
    with pytest.raises(ModelError) as info:
        biobullet.load_model(path)
    error = info.value
    assert error.file == str(path) and "joint_stop" in (error.element or "") and error.attribute == "exponent"
    assert expected in str(error)


def test_joint_stop_exponents_at_the_ends_of_the_range_load(tmp_path):
    # the largest exponent accepted: the stop's force at p = 0.02 m is the law's closed form k p³
    model = biobullet.load_model(_stop_file(tmp_path, 'exponent="3"'))
    stop = next(e for e in force_elements(model) if e.name == "S")
    force = stop.generalized_force(model, np.array([-0.12]), np.zeros(1), 0.0)
    assert float(force[0]) == pytest.approx(1e4 * 0.02 ** 3, rel=1e-12)
    switched = biobullet.load_model(_stop_file(tmp_path, 'exponent="1" type="switched"'))
    assert next(e for e in force_elements(switched) if e.name == "S").exponent == 1.0


@pytest.mark.parametrize("law", ["hu_guo", "flores", "hunt_crossley"])
@pytest.mark.parametrize("restitution", ["1e-300", "1e-6", "0.009", "1.01"])
def test_restitution_outside_its_range_is_refused_at_load(tmp_path, law, restitution):
    # before: 1e-300 loaded, and the run stopped at the first impact blaming the prismatic joint's stop for the
    # overflow of c(cr) K (hu_guo, flores); 1e-6 ran 20× the right-hand sides of cr = 0.01 for the same outcome
    path = tmp_path / "drop.urdf"
    path.write_text(drop_urdf({"normal_law": law, "stiffness": "1e5", "restitution": restitution}))
    with pytest.raises(ModelError) as info:
        biobullet.load_model(path)
    error = info.value
    assert error.file == str(path) and "contact" in (error.element or "") and error.attribute == "restitution"
    assert "[0.01, 1]" in str(error)


def test_the_smallest_restitution_accepted_runs_to_the_plastic_limit(tmp_path):
    # cr = 0.01 (the range's end) loads and runs; Hu–Guo's ball dropped at 3.1 m/s does not separate (its
    # effective restitution is 0 there, as at any cr below ≈ 0.1): it ends at rest on its contact, at the static
    # depth of the Hertz law, (m g / K)^(2/3) (closed form)
    model = load_text(drop_urdf({**HU_GUO, "restitution": "0.01"}), tmp_path)
    run = biobullet.simulate(model, 1.5, initial={"drop": 0.5}, progress=False, rtol=1e-9, atol=1e-12)
    episodes = run.meta["discrete"]["C"]["intervals"]
    assert len(episodes) == 1 and episodes[0]["end"] is None
    depth = (1.0 * 9.81 / 1e5) ** (2.0 / 3.0)
    assert float(run.column("drop")[-1]) == pytest.approx(0.05 - depth, abs=1e-7)


# ------------------------------------------------------------------ 3. a jump before the bridge's first apply()
def _engine_apex(model, q: float, v: float, t_end: float = 0.4) -> float:
    """The highest drop coordinate of the reference engine's run from (q, v) after its first separation (m)."""
    run = biobullet.simulate(model, t_end, initial=(np.array([q]), np.array([v])), progress=False, rtol=1e-10,
                             atol=1e-12, t_eval=np.linspace(0.0, t_end, 20001))
    end = run.meta["discrete"]["C"]["intervals"][0]["end"]
    return float(np.max(run.column("drop")[run.t >= end]))


def _bridge_apex(bridge, steps: int = 4000) -> float:
    top = -math.inf
    for _ in range(steps):
        bridge.step()
        top = max(top, float(bridge.state()[1][0]))
    return top


def test_a_joint_reset_before_the_first_apply_starts_the_episode_there(client, tmp_path):
    # the bridge built with its ball 5 mm into the ground approaching at 2 m/s (an episode with δ̇⁻ = 2 m/s), then
    # resetJointState to 0.5 m/s before any apply(). Before, the episode kept δ̇⁻ = 2 (4× less hysteresis damping):
    # rebound apex 0.0624 m where the engine started from the reset state reaches 0.0573 m; now 3.7e-5 m from it
    # (the O(dt) step error of an impact, ≈ g dt per impact: 1e-3 m as tests/integration/test_unseen34)
    model = load_text(drop_urdf(HU_GUO, radius=0.05), tmp_path)
    with Bridge(model, client, dt=1e-4, initial={"drop": 0.045, "drop_dot": -2.0}) as bridge:
        pybullet.resetJointState(bridge.body, int(bridge.map.joint_indices[0]), 0.045, targetVelocity=-0.5,
                                 physicsClientId=client)
        apex = _bridge_apex(bridge)
        episode = bridge.contacts.intervals()[0]
    assert abs(apex - _engine_apex(model, 0.045, -0.5)) <= 1e-3
    assert episode["initial"] and episode["impact_velocity"] == pytest.approx(0.5, rel=1e-12)


def test_a_restore_state_before_the_first_apply_starts_the_episode_there(client, tmp_path):
    # saveState of the bridge's start (in contact at 0.5 m/s), bridge.reset to the same depth at 2 m/s, then
    # restoreState before any apply(): the run is the engine's from the saved state, not from the reset's
    model = load_text(drop_urdf(HU_GUO, radius=0.05), tmp_path)
    with Bridge(model, client, dt=1e-4, initial={"drop": 0.045, "drop_dot": -0.5}) as bridge:
        saved = pybullet.saveState(physicsClientId=client)
        bridge.reset(np.array([0.045]), np.array([-2.0]))
        pybullet.restoreState(saved, physicsClientId=client)
        apex = _bridge_apex(bridge)
        episode = bridge.contacts.intervals()[0]
    assert abs(apex - _engine_apex(model, 0.045, -0.5)) <= 1e-3
    assert episode["impact_velocity"] == pytest.approx(0.5, rel=1e-12)


@pytest.mark.parametrize("tau", [None, "zeros"])   # the plain plan and the general path
def test_a_base_reset_before_the_first_apply_starts_the_episode_there(client, tmp_path, tau):
    # built 4 mm into the ground approaching at 1 m/s, then resetBasePositionAndOrientation to the same depth, which
    # PyBullet does at rest: the episode starts there, δ̇⁻ = 0 floored at min_impact_velocity, as the engine's run
    # from that state (before: δ̇⁻ = 1 m/s, a 1000× lighter damping; the heights after 0.1 s 1.9e-5 m apart)
    model = load_text(ball_urdf(HU_GUO), tmp_path)
    torque = None if tau is None else np.zeros(model.n_tangent)
    with Bridge(model, client, dt=1e-4, initial={"base_z": 0.096, "base_vz_dot": -1.0}) as bridge:
        pybullet.resetBasePositionAndOrientation(bridge.body, [0.0, 0.0, 0.096], [0.0, 0.0, 0.0, 1.0],
                                                 physicsClientId=client)
        _, q, v = bridge.generalized_state()
        assert not v.any()
        for _ in range(1000):
            bridge.step(tau=torque)
        height = float(bridge.state()[1][2])
        episode = bridge.contacts.intervals()[-1]
    run = biobullet.simulate(model, 0.1, initial=(q, v), progress=False, rtol=1e-10, atol=1e-12)
    assert abs(height - float(run.column("base_z")[-1])) <= 1e-6, (height, float(run.column("base_z")[-1]))
    assert episode["initial"] and episode["impact_velocity"] == 0.0


# ------------------------------------------------------------------ 5. the README's loop rule
def test_a_spherical_joint_inside_a_loop_is_refused_at_load_as_the_readme_says(tmp_path):
    inertial = ('<inertial><origin xyz="0 0 0"/><mass value="1"/><inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" '
                'ixz="0" iyz="0"/></inertial>')
    text = (f'<robot name="ball_loop"><link name="base"/><link name="a">{inertial}</link><link name="b">{inertial}'
            '</link><joint name="ball" type="spherical"><parent link="base"/><child link="a"/><origin xyz="0 0 0"/>'
            '</joint><joint name="hinge" type="revolute"><parent link="base"/><child link="b"/>'
            '<origin xyz="1 0 0"/><axis xyz="0 0 1"/><limit lower="-3" upper="3" effort="1" velocity="1"/></joint>'
            '<biobullet version="1"><loop name="L" type="point" link_a="a" xyz_a="0.5 0 0" link_b="b" '
            'xyz_b="-0.5 0 0"/></biobullet></robot>')
    path = tmp_path / "ball_loop.urdf"
    path.write_text(text)
    with pytest.raises(ModelError) as info:
        biobullet.load_model(path)
    message = str(info.value)
    assert info.value.file == str(path) and "loop" in (info.value.element or "")
    assert "'ball'" in message and "spherical" in message and "three revolute joints" in message


# ------------------------------------------------------------------ 4. a sweep's workers at the cluster's close
class _Worker:
    """What distributed's own `Worker.heartbeat` reads of a worker, with a scheduler whose connection is closed."""
    contact_address = address = "tcp://127.0.0.1:1"
    active_keys: tuple = ()
    extensions: dict = {}

    def __init__(self, status) -> None:
        import types

        async def closed(**kwargs):
            raise OSError("in <TCP (closed) ConnectionPool.heartbeat_worker>: Stream is closed")
        self.status = status
        self.state = types.SimpleNamespace(tasks={})
        self.scheduler = types.SimpleNamespace(heartbeat_worker=closed)

    async def get_metrics(self) -> dict:
        return {}


@pytest.mark.parametrize("status, reported", [("closing", False), ("closed", False), ("running", True)])
def test_a_closing_sweep_worker_prints_no_heartbeat_traceback(status, reported):
    # distributed's Worker.heartbeat run on a worker whose connection to the scheduler closed: while the worker
    # closes (the driver closing the cluster at a sweep's end, on Ctrl-C or SIGTERM) its error and traceback no
    # longer reach stderr — before, seen as "Traceback ... CommClosedError ... heartbeat_worker" after a sweep on a
    # loaded machine, where the resume test asserts none; a running worker's failed heartbeat is still reported
    import asyncio
    import logging
    import signal

    from distributed import Worker
    from distributed.core import Status

    from biobullet.sweep.worker import dask_setup

    seen: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = seen.append
    logger = logging.getLogger("distributed.worker")
    filters, sigint = list(logger.filters), signal.getsignal(signal.SIGINT)
    logger.addHandler(handler)
    try:
        worker = _Worker(getattr(Status, status))
        dask_setup(worker)   # the sweep's worker preload
        asyncio.run(Worker.heartbeat(worker))
    finally:
        logger.removeHandler(handler)
        logger.filters[:] = filters
        signal.signal(signal.SIGINT, sigint)   # (dask_setup makes its process ignore Ctrl-C)
    heartbeat = [r for r in seen if r.getMessage() == "Failed to communicate with scheduler during heartbeat."]
    assert len(heartbeat) == reported and all(r.exc_info for r in heartbeat)
