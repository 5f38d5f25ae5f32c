"""The Gymnasium environment of `demos/gym_reach.py` used as a learning environment (gymenv): Gymnasium's own
checker, seeded determinism, the action box, time limits, close(), many environments in one process, rgb_array
frames in DIRECT mode, a SyncVectorEnv of four, and the coupling under random (training-like) actions.

The coupling is measured from PyBullet's joint states against the file's function evaluated here in numpy
(q3 = 0.5 sin q2 + 0.2 q4², the bridge's promise 1e-6 rad), never through the bridge's own rows. Before these
fixes: random actions from the action space (±30 N·m on every joint) spun the 1 kg·cm² wrist to 3e5 rad/s and raised
DivergenceError at step 35; the shoulder env's random start put the elbow 0.29 rad beyond its URDF stop and diverged
at step 3; a second close() raised pybullet.error; a wrong-length action was a numpy broadcast traceback."""
from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest

pybullet = pytest.importorskip("pybullet")
gymnasium = pytest.importorskip("gymnasium", reason="gymnasium is in the gym/test extras: pip install 'biobullet[gym]'")

ROOT = Path(__file__).resolve().parents[2]
PROMISE = 1e-6   # rad: the bridge's coupling promise (docs/bridge.md)


def _load_demo():
    spec = importlib.util.spec_from_file_location("gym_reach_demo", ROOT / "demos" / "gym_reach.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


DEMO = _load_demo()
ENV = DEMO.make_env_class()


@pytest.fixture(scope="module")
def kuka(tmp_path_factory) -> str:
    return str(DEMO.coupled_kuka(tmp_path_factory.mktemp("gym")))


def _coupling_residual(env) -> float:
    """|q3 − (0.5 sin q2 + 0.2 q4²)| from PyBullet's joint states, the joints found by name."""
    ids = {pybullet.getJointInfo(env.bridge.body, j, physicsClientId=env.client)[1].decode(): j
           for j in range(pybullet.getNumJoints(env.bridge.body, physicsClientId=env.client))}
    q2, q3, q4 = (pybullet.getJointState(env.bridge.body, ids[f"lbr_iiwa_joint_{k}"],
                                         physicsClientId=env.client)[0] for k in (2, 3, 4))
    return abs(q3 - (0.5 * math.sin(q2) + 0.2 * q4 * q4))


def _rollout(env, seed: int, actions) -> tuple[np.ndarray, np.ndarray, float]:
    observation, _ = env.reset(seed=seed)
    observations, rewards, worst = [observation], [], 0.0
    for action in actions:
        observation, reward, terminated, truncated, _ = env.step(action)
        assert not terminated
        observations.append(observation)
        rewards.append(reward)
        worst = max(worst, _coupling_residual(env))
    return np.array(observations), np.array(rewards), worst


def test_check_env_and_passive_checker(kuka):
    from gymnasium.utils.env_checker import check_env
    from gymnasium.wrappers.common import PassiveEnvChecker
    env = ENV(kuka, steps=50, render_mode="rgb_array")
    check_env(env)
    env.close()
    wrapped = PassiveEnvChecker(ENV(kuka, steps=50))
    wrapped.reset(seed=0)
    for _ in range(5):
        wrapped.step(wrapped.action_space.sample())
    wrapped.close()


def test_same_seed_gives_bitwise_equal_runs_and_random_actions_keep_the_coupling(kuka):
    first, second = ENV(kuka, steps=200), ENV(kuka, steps=200)
    first.action_space.seed(3)
    actions = [first.action_space.sample() for _ in range(200)]   # the full box: a = ±1 on every coordinate
    run_a, run_b = _rollout(first, 3, actions), _rollout(second, 3, actions)
    assert np.array_equal(run_a[0], run_b[0]) and np.array_equal(run_a[1], run_b[1])
    assert all(first.observation_space.contains(o) for o in run_a[0])
    assert run_a[2] <= PROMISE, run_a[2]
    # the same env reset with the same seed repeats itself too
    again = _rollout(first, 3, actions)
    assert np.array_equal(again[0], run_a[0]) and np.array_equal(again[1], run_a[1])
    first.close()
    second.close()


def test_actions_outside_the_box_are_clipped_and_bad_actions_refused(kuka):
    a, b = ENV(kuka, steps=20), ENV(kuka, steps=20)
    rng = np.random.default_rng(1)
    actions = [rng.uniform(-5.0, 5.0, a.action_space.shape) for _ in range(20)]
    run_outside = _rollout(a, 4, actions)
    run_clipped = _rollout(b, 4, [np.clip(x, -1.0, 1.0) for x in actions])
    assert np.array_equal(run_outside[0], run_clipped[0])
    for bad in (np.zeros(3), np.full(a.action_space.shape, np.nan)):
        with pytest.raises(ValueError, match="action"):
            a.step(bad)
    a.close()
    b.close()


def test_truncated_at_the_time_limit_never_terminated(kuka):
    env = ENV(kuka, steps=3)
    env.reset(seed=0)
    flags = [env.step(np.zeros(env.action_space.shape))[2:4] for _ in range(3)]
    assert flags == [(False, False), (False, False), (False, True)]
    env.close()


def test_close_twice_and_fifty_make_close_cycles_leave_no_client(kuka):
    clients = []
    for cycle in range(50):
        env = ENV(kuka, steps=5)
        env.reset(seed=cycle)
        env.step(env.action_space.sample())
        clients.append(env.client)
        env.close()
        env.close()   # Gymnasium: close() may be called more than once
    assert not any(pybullet.getConnectionInfo(c)["isConnected"] for c in set(clients))


def test_rgb_array_frame_in_direct_mode(kuka):
    env = ENV(kuka, steps=5, render_mode="rgb_array")
    env.reset(seed=0)
    frame = env.render()
    assert frame.shape == (240, 320, 3) and frame.dtype == np.uint8
    assert (frame != frame[0, 0]).any(axis=-1).sum() > 500   # the robot is in view
    env.close()
    with pytest.raises(ValueError, match="render_mode"):
        ENV(kuka, render_mode="human")


def test_sync_vector_env_members_do_not_interfere(kuka):
    from gymnasium.vector import SyncVectorEnv
    vector = SyncVectorEnv([lambda: ENV(kuka, steps=50)] * 4)
    rng = np.random.default_rng(2)
    actions = [rng.uniform(-1.0, 1.0, vector.single_action_space.shape) for _ in range(40)]
    observations, _ = vector.reset(seed=[7, 7, 8, 9])
    for action in actions:
        observations, *_ = vector.step(np.tile(action, (4, 1)))
    assert np.array_equal(observations[0], observations[1])
    assert not np.array_equal(observations[0], observations[2])
    assert max(_coupling_residual(env) for env in vector.envs) <= PROMISE
    alone = ENV(kuka, steps=50)
    assert np.array_equal(_rollout(alone, 7, actions)[0][-1], observations[0])
    alone.close()
    vector.close()


def test_random_start_inside_the_joint_limits_on_the_shoulder():
    env = ENV(str(ROOT / "urdf" / "shoulder_rhythm.urdf"), steps=100)
    elbow = next(j for j in range(pybullet.getNumJoints(env.bridge.body, physicsClientId=env.client))
                 if pybullet.getJointInfo(env.bridge.body, j, physicsClientId=env.client)[1] == b"elbow_flexion")
    env.action_space.seed(0)
    for seed in range(3):
        env.reset(seed=seed)
        assert pybullet.getJointState(env.bridge.body, elbow, physicsClientId=env.client)[0] >= 0.0   # <limit lower="0">
        for _ in range(60):
            env.step(env.action_space.sample())
    env.close()
