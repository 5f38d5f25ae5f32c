"""Forward kinematics and frame Jacobians on the compiled tree (configuration x, velocity ẋ: see model.tree)."""
from __future__ import annotations


import numpy as np

from biobullet.spatial.rotations import skew
from biobullet.algorithms.compiled_kernels import placements
from biobullet.algorithms.vectorized import tree_arrays


def world_tree(model, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(R (n_b, 3, 3), p (n_b, 3), S (6, n_tangent)): world placements of the body frames and the world motion
    subspaces ([linear at the world origin; angular]), one call of the placements kernel
    (`compiled_kernels.placements`, compiled or its Python form; the placement algebra of the tree kernels)."""
    nb = len(model.bodies)
    rot, pos, sub = np.empty((nb, 3, 3)), np.empty((nb, 3)), np.zeros((6, model.n_tangent))
    if nb:
        meta, body = model.tree_pack
        placements(meta, body, np.ascontiguousarray(x, dtype=float), rot, pos, sub)
    return rot, pos, sub


def body_placements(model, x: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """World placement (R, p) of every body frame (`world_tree`)."""
    rot, pos, _ = world_tree(model, x)
    return list(zip(rot, pos))


def frame_placement(model, x: np.ndarray, frame: str, placements=None) -> tuple[np.ndarray, np.ndarray]:
    """World placement (R, p) of a URDF link frame."""
    f = model.frame(frame)
    if f.body < 0:
        return f.rotation.copy(), f.translation.copy()
    placements = placements if placements is not None else body_placements(model, x)
    r, p = placements[f.body]
    return r @ f.rotation, r @ f.translation + p


def frame_jacobian(model, x: np.ndarray, frame: str, point: np.ndarray | None = None) -> np.ndarray:
    """6×n_tangent Jacobian of [linear velocity of the point; angular velocity], world-aligned axes.

    `point` is in the link frame (default its origin). Equals Pinocchio's LOCAL_WORLD_ALIGNED frame Jacobian:
    the world motion subspaces of the directions that move the link's body, the linear rows moved from the world
    origin to the point (v = S_lin + S_ang × p)."""
    f = model.frame(frame)
    jac = np.zeros((6, model.n_tangent))
    if f.body < 0:
        return jac
    rot, pos, sub = world_tree(model, x)
    local = f.translation if point is None else f.rotation @ np.asarray(point, dtype=float) + f.translation
    target = rot[f.body] @ local + pos[f.body]
    moves = tree_arrays(model).ancestry[f.body]
    jac[3:] = sub[3:] * moves
    jac[:3] = sub[:3] * moves - skew(target) @ jac[3:]
    return jac
