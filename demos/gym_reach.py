"""A Gymnasium environment on the PyBullet bridge: a KUKA iiwa whose joint 3 is a nonlinear function of joints 2
and 4 (q3 = 0.5 sin q2 + 0.2 q4², written into a copy of pybullet_data's URDF) reaches for a random target.

One PyBullet client and one Bridge for every episode (`reset()` puts the robot back by name, the dependent joint
follows); actions are generalized torques on the independent coordinates (`bridge.apply(generalized=...)`), the
observation is (q, v, target). The environment passes Gymnasium's own `check_env`; a proportional policy runs a
few episodes and the coupling's residual, read from PyBullet's joint states, is printed.

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


def coupled_kuka(folder: Path) -> Path:
    """pybullet_data's KUKA iiwa with absolute mesh paths and the `<biobullet>` coupling block, written to folder."""
    import pybullet_data
    source = Path(pybullet_data.getDataPath()) / "kuka_iiwa" / "model.urdf"
    block = """<biobullet version="1"><gravity xyz="0 0 -9.81"/><base type="fixed"/>
  <joint_function joint="lbr_iiwa_joint_3" type="expression" inputs="lbr_iiwa_joint_2 lbr_iiwa_joint_4"
                  expression="0.5*sin(lbr_iiwa_joint_2) + 0.2*lbr_iiwa_joint_4**2"/>
</biobullet>"""
    text = source.read_text().replace('filename="meshes/', f'filename="{source.parent}/meshes/')
    path = folder / "kuka_coupled.urdf"
    path.write_text(text.replace("</robot>", block + "\n</robot>"))
    return path


def make_env_class():
    import gymnasium as gym
    import pybullet as p

    import biobullet

    class CoupledReach(gym.Env):
        """Reach a target with the end effector; joint 3 is coupled to joints 2 and 4 by the model file."""

        metadata = {"render_modes": []}

        def __init__(self, urdf: str, steps: int = 200, dt: float = 1 / 240):
            self.client = p.connect(p.DIRECT)
            p.setGravity(0, 0, -9.81, physicsClientId=self.client)
            p.setTimeStep(dt, physicsClientId=self.client)
            self.bridge = biobullet.Bridge(urdf, client=self.client)
            self.names = list(self.bridge.model.coordinate_names)
            n = len(self.names)
            self.action_space = gym.spaces.Box(-30.0, 30.0, shape=(n,), dtype=np.float64)
            self.observation_space = gym.spaces.Box(-np.inf, np.inf, shape=(2 * n + 3,), dtype=np.float64)
            self.steps, self.count, self.target = steps, 0, np.zeros(3)

        def _observation(self) -> np.ndarray:
            _, q, v = self.bridge.generalized_state()
            return np.concatenate([q, v, self.target])

        def tip(self) -> np.ndarray:
            return np.array(p.getLinkState(self.bridge.body, 6, physicsClientId=self.client)[0])

        def reset(self, *, seed=None, options=None):
            super().reset(seed=seed)
            start = {name: float(self.np_random.uniform(-0.3, 0.3)) for name in self.names}
            self.bridge.reset(**start)   # by name; the dependent joint 3 follows
            self.target = np.array([0.5, 0.0, 0.6]) + self.np_random.uniform(-0.15, 0.15, 3)
            self.count = 0
            return self._observation(), {}

        def step(self, action):
            self.bridge.apply(generalized=np.clip(action, -30.0, 30.0))
            p.stepSimulation(physicsClientId=self.client)
            self.count += 1
            distance = float(np.linalg.norm(self.tip() - self.target))
            return self._observation(), -distance, False, self.count >= self.steps, {"distance": distance}

        def close(self):
            self.bridge.close()
            p.disconnect(self.client)

    return CoupledReach


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
            action = -20.0 * q - 3.0 * v + rng.normal(0.0, 2.0, n)   # hold near zero, with exploration noise
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
