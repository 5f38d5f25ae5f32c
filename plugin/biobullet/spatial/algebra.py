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


def motion_cross(v: np.ndarray, m: np.ndarray) -> np.ndarray:
    """v × m for motion vectors: [ω × m_lin + v_lin × m_ang; ω × m_ang], written out on floats (three np.cross
    calls cost ≈ 20 µs, most of the Python RNEA's time)."""
    lx, ly, lz, wx, wy, wz = v.tolist()
    ax, ay, az, bx, by, bz = m.tolist()
    return np.array([(wy * az - wz * ay) + (ly * bz - lz * by), (wz * ax - wx * az) + (lz * bx - lx * bz),
                     (wx * ay - wy * ax) + (lx * by - ly * bx), wy * bz - wz * by, wz * bx - wx * bz,
                     wx * by - wy * bx])


def force_cross(v: np.ndarray, f: np.ndarray) -> np.ndarray:
    """v ×* f for a motion vector v and a force vector f: [ω × f; ω × n + v_lin × f] (as `motion_cross`)."""
    lx, ly, lz, wx, wy, wz = v.tolist()
    fx, fy, fz, nx, ny, nz = f.tolist()
    return np.array([wy * fz - wz * fy, wz * fx - wx * fz, wx * fy - wy * fx,
                     (wy * nz - wz * ny) + (ly * fz - lz * fy), (wz * nx - wx * nz) + (lz * fx - lx * fz),
                     (wx * ny - wy * nx) + (lx * fy - ly * fx)])


def gravity_acceleration(gravity: np.ndarray) -> np.ndarray:
    """The fictitious base acceleration −g that puts gravity into the recursions."""
    return np.concatenate([-np.asarray(gravity, dtype=float), np.zeros(3)])
