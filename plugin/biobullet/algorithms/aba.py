"""Articulated-body algorithm: forward dynamics ẍ = FD(x, ẋ, τ) of the tree in O(n) (Featherstone)."""
from __future__ import annotations

import numpy as np

from biobullet.spatial.algebra import force_cross, gravity_acceleration, inverse_motion_transform, joint_placement, motion_cross


def aba(model, x: np.ndarray, xd: np.ndarray, tau: np.ndarray, *, gravity: bool = True) -> np.ndarray:
    bodies = model.bodies
    n = len(bodies)
    transforms, velocities, bias_acc = [None] * n, [None] * n, [None] * n
    art_inertia, art_bias = [None] * n, [None] * n
    for i, body in enumerate(bodies):
        xf = inverse_motion_transform(*joint_placement(body, x))
        transforms[i] = xf
        v_joint = body.motion_subspace @ xd[body.v_index:body.v_index + body.nv]
        v = v_joint if body.parent < 0 else xf @ velocities[body.parent] + v_joint
        velocities[i] = v
        bias_acc[i] = motion_cross(v, v_joint) if body.parent >= 0 else np.zeros(6)
        art_inertia[i] = body.spatial_inertia.copy()
        art_bias[i] = force_cross(v, body.spatial_inertia @ v)
    u_cols, d_inv, u_vec = [None] * n, [None] * n, [None] * n
    for i in range(n - 1, -1, -1):
        body = bodies[i]
        s = body.motion_subspace
        u = art_inertia[i] @ s
        d_inv[i] = np.linalg.inv(s.T @ u)
        u_vec[i] = tau[body.v_index:body.v_index + body.nv] - s.T @ art_bias[i]
        u_cols[i] = u
        if body.parent >= 0:
            ia = art_inertia[i] - u @ d_inv[i] @ u.T
            pa = art_bias[i] + ia @ bias_acc[i] + u @ (d_inv[i] @ u_vec[i])
            xf = transforms[i]
            art_inertia[body.parent] = art_inertia[body.parent] + xf.T @ ia @ xf
            art_bias[body.parent] = art_bias[body.parent] + xf.T @ pa
    xdd = np.zeros(model.n_tangent)
    accelerations = [None] * n
    a0 = gravity_acceleration(model.gravity) if gravity else np.zeros(6)
    for i, body in enumerate(bodies):
        parent_acc = a0 if body.parent < 0 else accelerations[body.parent]
        a = transforms[i] @ parent_acc + bias_acc[i]
        qdd = d_inv[i] @ (u_vec[i] - u_cols[i].T @ a)
        xdd[body.v_index:body.v_index + body.nv] = qdd
        accelerations[i] = a + body.motion_subspace @ qdd
    return xdd
