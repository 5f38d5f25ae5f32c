"""Composite-rigid-body algorithm: the joint-space mass matrix M(x) of the tree (Featherstone)."""
from __future__ import annotations

import numpy as np

from biobullet.spatial.algebra import inverse_motion_transform, joint_placement


def _composite_inertias(bodies, x: np.ndarray) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """(child-to-parent motion transforms, composite spatial inertias of every subtree in its root's frame)."""
    transforms = [inverse_motion_transform(*joint_placement(body, x)) for body in bodies]
    composite = [body.spatial_inertia.copy() for body in bodies]
    for i in range(len(bodies) - 1, -1, -1):
        parent = bodies[i].parent
        if parent >= 0:
            composite[parent] += transforms[i].T @ composite[i] @ transforms[i]
    return transforms, composite


def mass_matrix_diagonal(model, x: np.ndarray) -> np.ndarray:
    """The diagonal of the tree mass matrix M(x) (kg m² or kg per coordinate): Sᵢᵀ Iᶜᵢ Sᵢ from the composite
    inertias alone, linear in the number of bodies (the full matrix walks every body's ancestry: quadratic on a
    long chain)."""
    bodies = model.bodies
    _, composite = _composite_inertias(bodies, x)
    diagonal = np.zeros(model.n_tangent)
    for body, inertia in zip(bodies, composite):
        subspace = body.motion_subspace
        diagonal[body.v_index:body.v_index + body.nv] = np.einsum("ij,ik,kj->j", subspace, inertia, subspace)
    return diagonal


def crba(model, x: np.ndarray) -> np.ndarray:
    bodies = model.bodies
    transforms, composite = _composite_inertias(bodies, x)
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
