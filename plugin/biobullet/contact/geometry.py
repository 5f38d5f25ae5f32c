"""Contact geometry: a point or sphere on a link against a ground plane.

Ground plane: the points p with n·p = h (n unit normal pointing out of the ground, default +z; h =
``ground_height`` [m], the plane's offset along n). Sphere: centre c = link placement · xyz, radius r ≥ 0
(r = 0: a point). Then

    penetration       δ  = h + r − n·c            [m]   (> 0 in contact)
    penetration rate  δ̇  = −n·v_p                  [m/s] (> 0 approaching)
    slip velocity     v_t = v_p − (n·v_p) n        [m/s] (tangential velocity of the sphere's material point)

with p = c − r n the sphere point deepest in the ground and v_p its velocity — or, for a normal law that names
a point depth s < 1 (`NormalLaw.point_depth`; Simbody's HuntCrossleyForce: s = k'_sphere/(k'_sphere + k'_plane)),
p = c − r n + (1 − s) δ n, the point s δ below the plane, while δ > 0. A force F (world, N) at p acts on
the tree as τ = J_p,linᵀ F, J_p the world-aligned point Jacobian. All of it is one kernel,
`contact.kernels._contact_kinematics_py` (shared with the compiled right-hand side and the bridge's ground call),
compiled on first use or run by Python without numba.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from biobullet.contact.kernels import ancestry, contact_kinematics


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
                      ground: GroundPlane, *, need_jacobian: bool = True, point_depth: float = 1.0
                      ) -> ContactKinematics:
    """Contact kinematics of a sphere (centre `xyz` [m] in `link`'s frame, `radius` [m]) on `ground` at the tree
    state (x, ẋ) (`contact.kernels._contact_kinematics_py`), its point `point_depth` δ below the plane (1: the
    deepest point). With xd None the rates and slip are zero; the Jacobian (3 × n_tangent) is computed when
    need_jacobian (else zeros)."""
    frame = model.frame(link)
    geometry = np.empty(9)
    geometry[:3] = frame.rotation @ np.asarray(xyz, dtype=float) + frame.translation   # centre in the body frame
    geometry[3] = radius
    geometry[4:7] = ground.n
    geometry[7] = ground.height
    geometry[8] = point_depth
    meta, body = model.tree_pack
    n = model.n_tangent
    jacobian = np.zeros((3, n if need_jacobian else 0))
    out = np.empty(11)
    rates = np.zeros(n) if xd is None else np.ascontiguousarray(xd, dtype=float)
    contact_kinematics(meta, body, ancestry(model), frame.body, geometry, np.ascontiguousarray(x, dtype=float),
                       rates, out, jacobian)
    return ContactKinematics(float(out[0]), float(out[1]), out[5:8].copy(), out[2:5].copy(), out[8:11].copy(),
                             jacobian if need_jacobian else np.zeros((3, n)))
