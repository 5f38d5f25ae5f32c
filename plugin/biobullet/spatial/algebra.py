"""Spatial-vector helpers. Motion vectors are [linear; angular], force vectors [force; moment] (Pinocchio's order).

A placement (R, p) maps child coordinates to parent ones: x_parent = R x_child + p.
"""
from __future__ import annotations

import numpy as np

from biobullet.spatial.rotations import axis_angle_matrix, quaternion_to_matrix, skew


def joint_placement(body, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Placement of the body frame in its parent body's frame at configuration x."""
    if body.joint_type == "revolute":
        return body.rotation @ axis_angle_matrix(body.axis, x[body.q_index]), body.translation
    if body.joint_type == "prismatic":
        return body.rotation, body.translation + body.rotation @ (body.axis * x[body.q_index])
    k = body.q_index
    if body.joint_type == "spherical":
        return body.rotation @ quaternion_to_matrix(x[k:k + 4]), body.translation
    if body.joint_type == "planar":
        # rotation by φ about the normal (columns 0, 1 of the motion subspace span the plane)
        c, s = x[k + 2], x[k + 3]
        norm = np.hypot(c, s)
        plane = body.motion_subspace[:3, :2]
        turn = _rodrigues(body.axis, s / norm, c / norm)
        return body.rotation @ turn, body.translation + body.rotation @ (plane @ x[k:k + 2])
    # free: the root's origin is the identity (floating base), a URDF floating joint's its <origin>
    return body.rotation @ quaternion_to_matrix(x[k + 3:k + 7]), body.translation + body.rotation @ x[k:k + 3]


def _rodrigues(axis: np.ndarray, sin: float, cos: float) -> np.ndarray:
    k = skew(axis)
    return np.eye(3) + sin * k + (1.0 - cos) * (k @ k)


def inverse_motion_transform(rotation: np.ndarray, translation: np.ndarray) -> np.ndarray:
    """6×6 X mapping parent-frame motion vectors to the child frame (inverse of the placement's action)."""
    rt = rotation.T
    x = np.zeros((6, 6))
    x[:3, :3] = rt
    x[:3, 3:] = -rt @ skew(translation)
    x[3:, 3:] = rt
    return x
