"""Composite-rigid-body algorithm: the joint-space mass matrix M(x) of the tree (Featherstone, body frames).

`crba` runs the numba kernel `_crba_py` on the model's `body_frame.BodyFrameTree` (the "reduced_recursive"
check's recursions, independent of the pipeline's world-frame kernel): Iᶜ_i = I_i + Σ_children X_cᵀ Iᶜ_c X_c,
M[i, i] = S_iᵀ Iᶜ_i S_i, then F = Iᶜ_i S_i carried up the ancestry (F ← X_jᵀ F) for the off-diagonal blocks.
"""
from __future__ import annotations

import numpy as np

from biobullet.algorithms.body_frame import body_frame, checked_vector, motion_transforms_py
from biobullet.core import jit
from biobullet.spatial.algebra import inverse_motion_transform, joint_placement


def _composite_inertias(bodies, x: np.ndarray) -> list[np.ndarray]:
    """The composite spatial inertia of every subtree in its root's frame."""
    transforms = [inverse_motion_transform(*joint_placement(body, x)) for body in bodies]
    composite = [body.spatial_inertia.copy() for body in bodies]
    for i in range(len(bodies) - 1, -1, -1):
        parent = bodies[i].parent
        if parent >= 0:
            composite[parent] += transforms[i].T @ composite[i] @ transforms[i]
    return composite


def mass_matrix_diagonal(model, x: np.ndarray) -> np.ndarray:
    """The diagonal of the tree mass matrix M(x) (kg m² or kg per coordinate): Sᵢᵀ Iᶜᵢ Sᵢ from the composite
    inertias alone, linear in the number of bodies (the full matrix walks every body's ancestry: quadratic on a
    long chain); once per model (the URDF limit stops' inertia), so in Python."""
    bodies = model.bodies
    composite = _composite_inertias(bodies, x)
    diagonal = np.zeros(model.n_tangent)
    for body, inertia in zip(bodies, composite):
        subspace = body.motion_subspace
        diagonal[body.v_index:body.v_index + body.nv] = np.einsum("ij,ik,kj->j", subspace, inertia, subspace)
    return diagonal


def _crba_py(tree, x):
    """M(x) (n_tangent × n_tangent) of the BodyFrameTree `tree` at the C-contiguous configuration x."""
    n = tree.parent.shape[0]
    transforms = np.empty((n, 6, 6))
    _motion_transforms(tree, x, transforms)
    composite = tree.inertia.copy()
    work = np.empty((6, 6))
    for i in range(n - 1, -1, -1):
        parent = tree.parent[i]
        if parent < 0:
            continue
        xf, ci, cp = transforms[i], composite[i], composite[parent]
        for a in range(6):   # work = Iᶜ_i X_i
            for b in range(6):
                total = 0.0
                for m in range(6):
                    total += ci[a, m] * xf[m, b]
                work[a, b] = total
        for a in range(6):   # Iᶜ_parent += X_iᵀ work
            for b in range(6):
                total = 0.0
                for m in range(6):
                    total += xf[m, a] * work[m, b]
                cp[a, b] += total
    mass = np.zeros((tree.n_tangent, tree.n_tangent))
    force = np.empty((6, 6))
    carried = np.empty((6, 6))
    for i in range(n):
        ki, ni = tree.v_index[i], tree.nv[i]
        ci, si = composite[i], tree.subspace[i]
        for a in range(6):   # F = Iᶜ_i S_i
            for c in range(ni):
                total = 0.0
                for m in range(6):
                    total += ci[a, m] * si[m, c]
                force[a, c] = total
        j = i
        while True:
            kj, nj, sj = tree.v_index[j], tree.nv[j], tree.subspace[j]
            for r in range(nj):   # block = S_jᵀ F
                for c in range(ni):
                    total = 0.0
                    for m in range(6):
                        total += sj[m, r] * force[m, c]
                    mass[kj + r, ki + c] = total
                    mass[ki + c, kj + r] = total
            if tree.parent[j] < 0:
                break
            xf = transforms[j]
            for a in range(6):   # F ← X_jᵀ F, into the parent's frame
                for c in range(ni):
                    total = 0.0
                    for m in range(6):
                        total += xf[m, a] * force[m, c]
                    carried[a, c] = total
            for a in range(6):
                for c in range(ni):
                    force[a, c] = carried[a, c]
            j = tree.parent[j]
    return mass


def _bindings() -> dict:
    return {"_motion_transforms": jit.compiled(motion_transforms_py)}


_crba = jit.lazy(_crba_py, bind=_bindings)


def crba(model, x: np.ndarray) -> np.ndarray:
    """The tree mass matrix M(x) (n_tangent × n_tangent; kg, kg m, kg m²)."""
    return body_frame(model).call(_crba, checked_vector(model, "x", x, model.n_config))
