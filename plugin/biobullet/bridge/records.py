"""Recorded bridge samples → the reference engine's `Trajectory` (or a same-shaped fallback until it exists)."""
from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np

from biobullet.core.atomic import atomic_write


@dataclass
class BridgeTrajectory:
    """Fallback with the reference engine's Trajectory fields (used only if `integrate.Trajectory` is missing).

    t (s, shape (N,)); `positions`/`velocities`: every joint coordinate θ / θ̇ by URDF joint name (N × n_joints);
    q, v: generalized coordinates (N × nq, N × nv) in `coordinate_names` / `velocity_names` order.
    """

    t: np.ndarray
    joint_names: tuple[str, ...]
    positions: np.ndarray
    velocities: np.ndarray
    q: np.ndarray
    v: np.ndarray
    coordinate_names: tuple[str, ...] = ()
    velocity_names: tuple[str, ...] = ()
    metadata: dict = field(default_factory=dict)

    def to_csv(self, path: str | os.PathLike[str]) -> None:
        """CSV: `t`, every joint coordinate by URDF joint name, then `<name>_dot`; written atomically."""
        header = ["t", *self.joint_names, *(f"{n}_dot" for n in self.joint_names)]
        data = np.column_stack([self.t, self.positions, self.velocities])
        write_csv_atomically(path, header, data)


def write_csv_atomically(path, header: list[str], data: np.ndarray) -> None:
    atomic_write(path, lambda tmp: np.savetxt(tmp, data, delimiter=",", header=",".join(header), comments="",
                                              fmt="%.17g"))


def make_trajectory(model, t, positions, velocities, q, v, metadata: dict | None = None):
    """Build `integrate.Trajectory` if the reference engine provides it, else `BridgeTrajectory`.

    HOOK: the reference engine's constructor is tried with the documented fields by keyword; anything it does not
    accept falls back to `BridgeTrajectory` so the bridge keeps working while `integrate/` is being written.
    """
    fields = dict(t=np.asarray(t, float), joint_names=tuple(model.joint_names),
                  positions=np.asarray(positions, float), velocities=np.asarray(velocities, float),
                  q=np.asarray(q, float), v=np.asarray(v, float))
    try:
        from biobullet.integrate import Trajectory  # type: ignore[attr-defined]
    except ImportError:
        Trajectory = None
    if Trajectory is not None:
        for extra in (dict(coordinate_names=tuple(model.coordinate_names),
                           velocity_names=tuple(model.velocity_names)), {}):
            try:
                return Trajectory(**fields, **extra)
            except TypeError:
                continue
    return BridgeTrajectory(**fields, coordinate_names=tuple(model.coordinate_names),
                            velocity_names=tuple(model.velocity_names), metadata=dict(metadata or {}))
