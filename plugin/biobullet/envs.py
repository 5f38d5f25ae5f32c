"""Gymnasium environments on the PyBullet bridge (the `gym` extra: gymnasium, imported only when an environment is
made or registered; importing this module registers nothing).

`CoupledReach` (`make_env_class()`): a KUKA iiwa whose joint 3 is a nonlinear function of joints 2 and 4
(q3 = 0.5 sin q2 + 0.2 q4², written into a copy of pybullet_data's URDF, `coupled_kuka`) reaches for a random target.
One PyBullet client and one Bridge for every episode (`reset()` puts the robot back by name, inside the joints' URDF
limits; the dependent joint follows); actions are normalized generalized torques on the independent coordinates
(a = ±1 gives `max_acceleration` at the initial pose; outside the box clipped, a wrong length or NaN refused), the
observation is (q, v, target). `register_env()` registers it with Gymnasium as `biobullet/CoupledReach-v0` by the
entry point "biobullet.envs:make_env", so that `gymnasium.make("biobullet/CoupledReach-v0", steps=200)` and vector
environments (whose worker processes import it by that name) make it; without `urdf=` the coupled KUKA is written to
a new temporary folder. `demos/gym_reach.py` runs it.
"""
from __future__ import annotations

import shutil
import tempfile
import weakref
from pathlib import Path

import numpy as np


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

    from biobullet.bridge import Bridge
    from biobullet.loader import load_model

    class CoupledReach(gym.Env):
        """Reach a target with the end effector; joint 3 is coupled to joints 2 and 4 by the model file."""

        metadata = {"render_modes": ["rgb_array"], "render_fps": 30}

        def __init__(self, urdf: str, steps: int = 200, dt: float = 1 / 240, max_acceleration: float = 20.0,
                     render_mode: str | None = None):
            if render_mode not in (None, *self.metadata["render_modes"]):
                raise ValueError(f"render_mode={render_mode!r}: expected None or one of {self.metadata['render_modes']}")
            self.render_mode = render_mode
            self.client = p.connect(p.DIRECT)
            p.setTimeStep(dt, physicsClientId=self.client)
            model = load_model(urdf)
            # the client falls with the file's <gravity> before the bridge comes (it would set it, with a warning)
            p.setGravity(*model.gravity, physicsClientId=self.client)
            self.bridge = Bridge(model, client=self.client)
            self.names = list(self.bridge.model.coordinate_names)
            n = len(self.names)
            # the action is normalized: a = ±1 is the torque that gives each coordinate `max_acceleration` (rad/s²)
            # at the initial pose (the tree's mass-matrix diagonal). One ±30 N·m box for every joint spun the
            # 1 kg·cm² wrist at 3e5 rad/s within 35 random-action steps (a DivergenceError out of step()).
            self.bridge.reset()
            _, x, _ = self.bridge.state()
            inertia = np.diag(p.calculateMassMatrix(self.bridge.body, [float(value) for value in x],
                                                    physicsClientId=self.client))
            self.torque_scale = max_acceleration * inertia[self.bridge.independent_v]
            self.action_space = gym.spaces.Box(-1.0, 1.0, shape=(n,), dtype=np.float64)
            self.observation_space = gym.spaces.Box(-np.inf, np.inf, shape=(2 * n + 3,), dtype=np.float64)
            self.steps, self.count, self.target = steps, 0, np.zeros(3)
            joints = [p.getJointInfo(self.bridge.body, j, physicsClientId=self.client)
                      for j in range(p.getNumJoints(self.bridge.body, physicsClientId=self.client))]
            self.tip_link = len(joints) - 1
            # the random start stays inside each joint's URDF <limit> (PyBullet's convention: lower > upper = none):
            # 0.29 rad beyond the shoulder's elbow stop, the bridge's stop law ran away in 12 steps at 240 Hz
            limits = {info[1].decode(): (info[8], info[9]) for info in joints if info[8] <= info[9]}
            self.start_low = np.array([max(-0.3, limits.get(name, (-0.3, 0.3))[0]) for name in self.names])
            self.start_high = np.array([min(0.3, limits.get(name, (-0.3, 0.3))[1]) for name in self.names])
            self.closed = False

        def _observation(self) -> np.ndarray:
            _, q, v = self.bridge.generalized_state()
            return np.concatenate([q, v, self.target])

        def tip(self) -> np.ndarray:
            return np.array(p.getLinkState(self.bridge.body, self.tip_link, physicsClientId=self.client)[0])

        def reset(self, *, seed=None, options=None):
            super().reset(seed=seed)
            start = dict(zip(self.names, self.np_random.uniform(self.start_low, self.start_high).tolist()))
            self.bridge.reset(**start)   # by name; the dependent joint 3 follows
            self.target = np.array([0.5, 0.0, 0.6]) + self.np_random.uniform(-0.15, 0.15, 3)
            self.count = 0
            return self._observation(), {}

        def step(self, action):
            # outside the box is clipped to it; a wrong length or a NaN is refused (ValueError naming the action)
            action = np.asarray(action, dtype=np.float64)
            if action.shape != self.action_space.shape or not np.isfinite(action).all():
                raise ValueError(f"action: expected {self.action_space.shape[0]} finite values (normalized torques "
                                 f"on {', '.join(self.names)}), got shape {action.shape}: {action}")
            action = np.clip(action, -1.0, 1.0)
            self.bridge.apply(generalized=self.torque_scale * action)
            p.stepSimulation(physicsClientId=self.client)
            self.count += 1
            distance = float(np.linalg.norm(self.tip() - self.target))
            return self._observation(), -distance, False, self.count >= self.steps, {"distance": distance}

        def render(self):
            """rgb_array: a 320×240 RGB frame of PyBullet's CPU renderer (works in DIRECT mode)."""
            if self.render_mode != "rgb_array":
                return None
            view = p.computeViewMatrix([1.6, -1.2, 1.2], [0.2, 0.0, 0.5], [0, 0, 1], physicsClientId=self.client)
            projection = p.computeProjectionMatrixFOV(60, 320 / 240, 0.05, 10, physicsClientId=self.client)
            _, _, rgba, _, _ = p.getCameraImage(320, 240, view, projection, renderer=p.ER_TINY_RENDERER,
                                                physicsClientId=self.client)
            return np.asarray(rgba, dtype=np.uint8).reshape(240, 320, 4)[:, :, :3].copy()

        def close(self):
            """Remove the robot and disconnect the client; a second close() does nothing (Gymnasium's rule)."""
            if self.closed:
                return
            self.closed = True
            self.bridge.close()
            p.disconnect(self.client)

    return CoupledReach


#: the environment's Gymnasium id (`register_env`)
ENV_ID = "biobullet/CoupledReach-v0"


def make_env(urdf: str | None = None, **options):
    """A CoupledReach environment (`make_env_class`; options: steps, dt, max_acceleration, render_mode); without
    `urdf`, on the coupled KUKA written to a new temporary folder. Gymnasium's entry point of ENV_ID."""
    if urdf is None:
        folder = Path(tempfile.mkdtemp(prefix="biobullet_gym_"))
        env = make_env_class()(str(coupled_kuka(folder)), **options)
        weakref.finalize(env, shutil.rmtree, folder, True)   # (PyBullet read the file when the env was made)
        return env
    return make_env_class()(urdf, **options)


def register_env(env_id: str = ENV_ID) -> str:
    """Register the environment with Gymnasium under `env_id` (once per process; again is a no-op) and return the
    id: `gymnasium.make(env_id, urdf=None, steps=200, ...)`. Episodes end by truncation after `steps` steps (the
    environment's own limit), so no TimeLimit is added. The entry point is this module's `make_env` by name: no demo
    needs to be imported, here or in a vector environment's worker process."""
    import gymnasium as gym
    if env_id not in gym.registry:
        gym.register(id=env_id, entry_point=f"{__name__}:make_env")
    return env_id


__all__ = ["ENV_ID", "coupled_kuka", "make_env", "make_env_class", "register_env"]
