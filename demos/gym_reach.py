"""A Gymnasium environment on the PyBullet bridge: a KUKA iiwa whose joint 3 is a nonlinear function of joints 2
and 4 (q3 = 0.5 sin q2 + 0.2 q4², written into a copy of pybullet_data's URDF) reaches for a random target.

One PyBullet client and one Bridge for every episode (`reset()` puts the robot back by name, inside the joints'
URDF limits; the dependent joint follows); actions are normalized generalized torques on the independent
coordinates (a = ±1 gives `max_acceleration` at the initial pose; outside the box clipped, a wrong length or NaN
refused), the observation is (q, v, target). The environment passes Gymnasium's own `check_env`; a proportional
policy runs a few episodes and the coupling's residual, read from PyBullet's joint states, is printed.
The environment is the library's own (`biobullet.envs`): `biobullet.envs.register_env()` registers it with
Gymnasium as `biobullet/CoupledReach-v0`, so that `gymnasium.make("biobullet/CoupledReach-v0", steps=200)` (and
vector environments) make it without this demo; without `urdf=` the coupled KUKA is written to a new temporary
folder.

    python demos/gym_reach.py --out OUT [--episodes 6 --steps 120]

Needs the `gym` extra (gymnasium).
"""
from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import numpy as np

from biobullet.core.arguments import positive_int
# the environment is the library's (`biobullet.envs`); these names stay importable from the demo
from biobullet.envs import ENV_ID, coupled_kuka, make_env, make_env_class, register_env  # noqa: F401


def coupling_residual(env) -> float:
    import pybullet as p
    q2, q3, q4 = (s[0] for s in p.getJointStates(env.bridge.body, [1, 2, 3], physicsClientId=env.client))
    return abs(q3 - (0.5 * math.sin(q2) + 0.2 * q4 * q4))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("gym_reach_out"),
                        help="output folder (default gym_reach_out)")
    parser.add_argument("--episodes", type=positive_int, default=6, help="episodes (default 6)")
    parser.add_argument("--steps", type=positive_int, default=120,
                        help="control steps per episode, 1/240 s each (default 120)")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    from gymnasium.utils.env_checker import check_env

    CoupledReach = make_env_class()
    urdf = str(coupled_kuka(args.out))
    checked = CoupledReach(urdf, steps=args.steps)
    check_env(checked, skip_render_check=True)
    checked.close()
    print("gymnasium check_env: OK")

    env = CoupledReach(urdf, steps=args.steps)
    worst, distances, seconds = 0.0, [], []
    rng = np.random.default_rng(0)
    for episode in range(args.episodes):
        observation, _ = env.reset(seed=episode)
        start = time.perf_counter()
        done, n = False, len(env.names)
        while not done:
            q, v = observation[:n], observation[n:2 * n]
            torque = -20.0 * q - 3.0 * v + rng.normal(0.0, 2.0, n)   # hold near zero, with exploration noise
            action = torque / env.torque_scale   # the action is normalized (clipped to ±1 by step())
            observation, reward, terminated, truncated, info = env.step(action)
            worst = max(worst, coupling_residual(env))
            done = terminated or truncated
        seconds.append(time.perf_counter() - start)
        distances.append(info["distance"])
    env.close()
    print(f"max coupling residual over {args.episodes} episodes: {worst:.3g} rad")
    print("final distance per episode (m): " + " ".join(f"{d:.3f}" for d in distances))

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from biobullet.core.atomic import save_figure
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    axes[0].bar(range(args.episodes), distances)
    axes[0].set(xlabel="episode", ylabel="final distance (m)", title="reach (noisy P policy)")
    axes[1].plot(range(args.episodes), np.array(seconds) * 1e3, "o-")
    axes[1].set(xlabel="episode", ylabel="wall time (ms)", title="one client, one bridge", ylim=(0, None))
    save_figure(fig, args.out / "gym_reach.png", dpi=110)   # laid out by rendering; 1100 px wide


if __name__ == "__main__":
    main()
