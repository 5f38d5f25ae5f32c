"""Forward kinematics and frame Jacobians on the compiled tree (configuration x, velocity ẋ: see model.tree)."""
from __future__ import annotations


import numpy as np

from biobullet.spatial.rotations import skew
from biobullet.algorithms.compiled_kernels import placements


def body_placements(model, x: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """World placement (R, p) of every body frame: one call of the placements kernel
    (`compiled_kernels.placements`, compiled or its Python form; the placement algebra of the tree kernels)."""
    nb = len(model.bodies)
    rot, pos = np.empty((nb, 3, 3)), np.empty((nb, 3))
    if nb:
        meta, body = model.tree_pack
        placements(meta, body, np.ascontiguousarray(x, dtype=float), rot, pos, np.zeros((6, model.n_tangent)))
    return list(zip(rot, pos))


def frame_placement(model, x: np.ndarray, frame: str, placements=None) -> tuple[np.ndarray, np.ndarray]:
    """World placement (R, p) of a URDF link frame."""
    f = model.frame(frame)
    if f.body < 0:
        return f.rotation.copy(), f.translation.copy()
    placements = placements if placements is not None else body_placements(model, x)
    r, p = placements[f.body]
    return r @ f.rotation, r @ f.translation + p


def frame_jacobian(model, x: np.ndarray, frame: str, point: np.ndarray | None = None,
                   placements=None) -> np.ndarray:
    """6×n_tangent Jacobian of [linear velocity of the point; angular velocity], world-aligned axes.

    `point` is in the link frame (default its origin). Equals Pinocchio's LOCAL_WORLD_ALIGNED frame Jacobian.
    """
    placements = placements if placements is not None else body_placements(model, x)
    f = model.frame(frame)
    jac = np.zeros((6, model.n_tangent))
    if f.body < 0:
        return jac
    r_link, p_link = frame_placement(model, x, frame, placements)
    target = p_link if point is None else r_link @ np.asarray(point, dtype=float) + p_link
    index = f.body
    while index >= 0:
        body = model.bodies[index]
        r, p = placements[index]
        k = body.v_index
        if body.joint_type == "revolute":
            axis = r @ body.axis
            jac[:3, k] = np.cross(axis, target - p)
            jac[3:, k] = axis
        elif body.joint_type == "prismatic":
            jac[:3, k] = r @ body.axis
        else:  # multi-DOF: motion subspace S = [l; a] in the body frame → [R l + R a × (target − p); R a]
            subspace = body.motion_subspace
            angular = r @ subspace[3:]
            jac[:3, k:k + body.nv] = r @ subspace[:3] - skew(target - p) @ angular
            jac[3:, k:k + body.nv] = angular
        index = body.parent
    return jac
