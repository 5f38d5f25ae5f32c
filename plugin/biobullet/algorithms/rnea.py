"""Recursive Newton–Euler inverse dynamics on the tree (Featherstone, body-frame spatial vectors).

rnea(x, ẋ, ẍ) = M(x) ẍ + h(x, ẋ), with h the Coriolis, centrifugal and gravity terms.
"""
from __future__ import annotations

import numpy as np

from biobullet.spatial.algebra import force_cross, gravity_acceleration, inverse_motion_transform, joint_placement, motion_cross


def rnea(model, x: np.ndarray, xd: np.ndarray, xdd: np.ndarray) -> np.ndarray:
    """Generalized forces (n_tangent)."""
    bodies = model.bodies
    n = len(bodies)
    a0 = gravity_acceleration(model.gravity)
    transforms, velocities, forces = [None] * n, [None] * n, [None] * n
    # forward pass: velocities, accelerations, body forces
    for i, body in enumerate(bodies):
        xf = inverse_motion_transform(*joint_placement(body, x))
        transforms[i] = xf
        s = body.motion_subspace
        k, nv = body.v_index, body.nv
        v_joint = s @ xd[k:k + nv]
        if body.parent < 0:
            v = v_joint
            a = xf @ a0 + s @ xdd[k:k + nv]
        else:
            v = xf @ velocities[body.parent] + v_joint
            a = xf @ forces[body.parent][1] + s @ xdd[k:k + nv] + motion_cross(v, v_joint)
        velocities[i] = v
        inertia = body.spatial_inertia
        forces[i] = (inertia @ a + force_cross(v, inertia @ v), a)
    # backward pass: project onto joints and accumulate into parents
    tau = np.zeros(model.n_tangent)
    totals = [f for f, _ in forces]
    for i in range(n - 1, -1, -1):
        body = bodies[i]
        tau[body.v_index:body.v_index + body.nv] = body.motion_subspace.T @ totals[i]
        if body.parent >= 0:
            totals[body.parent] = totals[body.parent] + transforms[i].T @ totals[i]
    return tau
