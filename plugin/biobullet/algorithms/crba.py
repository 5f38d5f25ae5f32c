"""Composite-rigid-body algorithm: the joint-space mass matrix M(x) of the tree (Featherstone)."""
from __future__ import annotations

import numpy as np

from biobullet.spatial.algebra import inverse_motion_transform, joint_placement


def crba(model, x: np.ndarray) -> np.ndarray:
    bodies = model.bodies
    transforms = [inverse_motion_transform(*joint_placement(body, x)) for body in bodies]
    composite = [body.spatial_inertia.copy() for body in bodies]
    for i in range(len(bodies) - 1, -1, -1):
        parent = bodies[i].parent
        if parent >= 0:
            composite[parent] += transforms[i].T @ composite[i] @ transforms[i]
    mass = np.zeros((model.n_tangent, model.n_tangent))
    for i, body in enumerate(bodies):
        ki, ni = body.v_index, body.nv
        force = composite[i] @ body.motion_subspace
        mass[ki:ki + ni, ki:ki + ni] = body.motion_subspace.T @ force
        j = i
        while bodies[j].parent >= 0:
            force = transforms[j].T @ force
            j = bodies[j].parent
            kj, nj = bodies[j].v_index, bodies[j].nv
            block = bodies[j].motion_subspace.T @ force
            mass[kj:kj + nj, ki:ki + ni] = block
            mass[ki:ki + ni, kj:kj + nj] = block.T
    return mass
