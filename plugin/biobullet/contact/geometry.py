"""Contact geometry: a point or sphere on a link against a ground plane.

Ground plane: the points p with n·p = h (n unit normal pointing out of the ground, default +z; h =
``ground_height`` [m], the plane's offset along n). Sphere: centre c = link placement · xyz, radius r ≥ 0
(r = 0: a point). Then

    penetration       δ  = h + r − n·c            [m]   (> 0 in contact)
    penetration rate  δ̇  = −n·v_p                  [m/s] (> 0 approaching)
    slip velocity     v_t = v_p − (n·v_p) n        [m/s] (tangential velocity of the sphere's material point)

with p = c − r n the sphere point deepest in the ground and v_p its velocity. A force F (world, N) at p acts on
the tree as τ = J_p,linᵀ F, J_p the world-aligned point Jacobian (`algorithms.kinematics.frame_jacobian`).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from biobullet.algorithms.kinematics import body_placements, frame_jacobian, frame_placement


@dataclass(frozen=True)
class GroundPlane:
    """The plane n·p = height (n unit, out of the ground)."""

    height: float = 0.0
    normal: tuple[float, float, float] = (0.0, 0.0, 1.0)

    @property
    def n(self) -> np.ndarray:
        return np.asarray(self.normal, dtype=float)


@dataclass(frozen=True)
class ContactKinematics:
    """δ [m], δ̇ [m/s], contact point p (world, m), slip v_t (world, m/s), normal n, point Jacobian (3 × n)."""

    delta: float
    delta_dot: float
    point: np.ndarray
    slip: np.ndarray
    normal: np.ndarray
    jacobian: np.ndarray

    def generalized(self, force: np.ndarray) -> np.ndarray:
        """τ = Jᵀ F for a world force F [N] at the contact point."""
        return self.jacobian.T @ force


def sphere_kinematics(model, x: np.ndarray, xd: np.ndarray | None, link: str, xyz: np.ndarray, radius: float,
                      ground: GroundPlane, placements=None, *, need_jacobian: bool = True) -> ContactKinematics:
    """Contact kinematics of a sphere (centre `xyz` in `link`'s frame, `radius` m) on `ground`.

    With xd None (or need_jacobian False and xd None) the rates are zero; the Jacobian is computed when needed.
    """
    placements = placements if placements is not None else body_placements(model, x)
    n = ground.n
    rotation, origin = frame_placement(model, x, link, placements)
    centre = rotation @ xyz + origin
    point = centre - radius * n
    delta = ground.height + radius - float(n @ centre)
    if not need_jacobian and xd is None:
        return ContactKinematics(delta, 0.0, point, np.zeros(3), n, np.zeros((3, model.n_tangent)))
    local = xyz - radius * (rotation.T @ n)
    jac = frame_jacobian(model, x, link, local, placements)[:3]
    if xd is None:
        return ContactKinematics(delta, 0.0, point, np.zeros(3), n, jac)
    velocity = jac @ xd
    normal_speed = float(n @ velocity)
    return ContactKinematics(delta, -normal_speed, point, velocity - normal_speed * n, n, jac)
