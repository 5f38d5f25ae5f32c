"""Small rotation helpers (URDF rpy = fixed-axis roll-pitch-yaw: R = Rz(y) Ry(p) Rx(r); quaternions x, y, z, w)."""
from __future__ import annotations

import numpy as np


def rpy_to_matrix(rpy) -> np.ndarray:
    r, p, y = rpy
    cr, sr, cp, sp, cy, sy = np.cos(r), np.sin(r), np.cos(p), np.sin(p), np.cos(y), np.sin(y)
    return np.array([[cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
                     [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
                     [-sp, cp * sr, cp * cr]])


def skew(v) -> np.ndarray:
    return np.array([[0.0, -v[2], v[1]], [v[2], 0.0, -v[0]], [-v[1], v[0], 0.0]])


def axis_angle_matrix(axis: np.ndarray, angle: float) -> np.ndarray:
    """Rodrigues: rotation by `angle` (rad) about unit `axis`."""
    k = skew(axis)
    return np.eye(3) + np.sin(angle) * k + (1.0 - np.cos(angle)) * (k @ k)


def quaternion_to_matrix(quaternion) -> np.ndarray:
    """Unit quaternion (x, y, z, w) → rotation matrix. The quaternion is normalised first. Compiles with numba
    (a float64 array; `conventions.state_from_pybullet_py` calls it per step)."""
    q = np.asarray(quaternion)
    x, y, z, w = q / np.sqrt(np.sum(q * q))
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def quaternion_multiply(a, b) -> np.ndarray:
    """Hamilton product a ⊗ b of (x, y, z, w) quaternions."""
    ax, ay, az, aw = a
    bx, by, bz, bw = b
    return np.array([aw * bx + ax * bw + ay * bz - az * by,
                     aw * by - ax * bz + ay * bw + az * bx,
                     aw * bz + ax * by - ay * bx + az * bw,
                     aw * bw - ax * bx - ay * by - az * bz])


def exp_quaternion(omega: np.ndarray) -> np.ndarray:
    """Quaternion (x, y, z, w) of the rotation vector `omega` (rad)."""
    angle = float(np.linalg.norm(omega))
    if angle < 1e-12:
        return np.array([0.5 * omega[0], 0.5 * omega[1], 0.5 * omega[2], 1.0]) / np.sqrt(1 + 0.25 * angle ** 2)
    s = np.sin(0.5 * angle) / angle
    return np.array([s * omega[0], s * omega[1], s * omega[2], np.cos(0.5 * angle)])


def matrix_to_rpy(rotation) -> np.ndarray:
    """URDF rpy (r, p, y) with rpy_to_matrix(rpy) = rotation (pitch in [−π/2, π/2]; at pitch ±π/2 yaw = 0)."""
    m = np.asarray(rotation, dtype=float)
    cos_pitch = float(np.hypot(m[0, 0], m[1, 0]))
    pitch = float(np.arctan2(-m[2, 0], cos_pitch))
    if cos_pitch > 1e-12:
        return np.array([np.arctan2(m[2, 1], m[2, 2]), pitch, np.arctan2(m[1, 0], m[0, 0])])
    # gimbal lock: only r − y (pitch +π/2) or r + y (pitch −π/2) is defined
    if m[2, 0] < 0.0:
        return np.array([np.arctan2(m[0, 1], m[1, 1]), pitch, 0.0])
    return np.array([np.arctan2(-m[0, 1], m[1, 1]), pitch, 0.0])
