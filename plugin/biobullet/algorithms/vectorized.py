"""Batched world-frame tree arrays and kinematics: `mass_matrix_and_bias` (the same M(x) and RNEA(x, ẋ, ẍ) as
crba.py / rnea.py, by the compiled tree kernel of `compiled_kernels`), placements and motion subspaces in numpy
(the loop rows of `constraints.loops`).

Everything is expressed in the world frame at the world origin ([linear; angular] spatial vectors):
motion subspaces S_k (revolute [p×a; a], prismatic [a; 0], multi-DOF joints Ad(body placement) S_body), body Jacobians
J_i = S ∘ ancestry_i, M = Σ J_iᵀ I_i J_i, and for RNEA the fixed-frame recursion a_i = Σ_{k ≤ i} (S_k θ̈_k +
v_k × S_k θ̇_k) (Featherstone, RBDA §3.4: in a fixed frame Ṡ_k = v_k × S_k).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from biobullet.spatial.algebra import joint_placement
from biobullet.spatial.rotations import skew
from biobullet.algorithms import compiled_kernels as kernels

_TREE_ARRAYS = "vectorized.tree_arrays"   # key of the model's TreeArrays in `Model.derived`


@dataclass(frozen=True)
class TreeArrays:
    """Per-model constant arrays (built once per Model)."""

    n_bodies: int
    parents: tuple[int, ...]
    revolute: np.ndarray        # bool (n_b,)
    prismatic: np.ndarray       # bool (n_b,)
    multi: tuple[int, ...]      # multi-DOF bodies (free, spherical, planar)
    q_index: np.ndarray         # (n_b,) configuration index of 1-DOF joints (0 for free)
    v_index: np.ndarray         # (n_b,)
    one_dof: np.ndarray         # indices of 1-DOF bodies
    axis: np.ndarray            # (n_b, 3)
    axis_skew: np.ndarray       # (n_b, 3, 3)
    axis_skew2: np.ndarray      # (n_b, 3, 3)
    origin_rotation: np.ndarray  # (n_b, 3, 3)
    origin_translation: np.ndarray  # (n_b, 3)
    mass: np.ndarray            # (n_b,)
    com: np.ndarray             # (n_b, 3)
    inertia_com: np.ndarray     # (n_b, 3, 3)
    ancestry: np.ndarray        # (n_b, n_tangent) float mask: tangent k moves body i
    body_ancestry: np.ndarray   # (n_b, n_b) float mask: body k is body i or an ancestor
    own_tangent: np.ndarray     # (n_b,) first tangent index of each body's joint
    one_dof_mask: np.ndarray    # (n_b, 1) 1.0 for 1-DOF bodies, 0.0 for the free base (its v × v is zero)


def tree_arrays(model) -> TreeArrays:
    return model.derive(_TREE_ARRAYS, lambda: _build(model))


def _build(model) -> TreeArrays:
    bodies = model.bodies
    n = len(bodies)
    ancestry = np.zeros((n, model.n_tangent))
    body_ancestry = np.zeros((n, n))
    for i, body in enumerate(bodies):
        j = i
        while j >= 0:
            b = bodies[j]
            ancestry[i, b.v_index:b.v_index + b.nv] = 1.0
            body_ancestry[i, j] = 1.0
            j = b.parent
    axis = np.array([b.axis for b in bodies]).reshape(n, 3)
    skews = np.array([skew(a) for a in axis]).reshape(n, 3, 3)
    return TreeArrays(
        n_bodies=n, parents=tuple(b.parent for b in bodies),
        revolute=np.array([b.joint_type == "revolute" for b in bodies], dtype=bool),
        prismatic=np.array([b.joint_type == "prismatic" for b in bodies], dtype=bool),
        multi=tuple(i for i, b in enumerate(bodies) if b.multi_dof),
        q_index=np.array([b.q_index if b.nv == 1 else 0 for b in bodies], dtype=int),
        v_index=np.array([b.v_index for b in bodies], dtype=int),
        one_dof=np.array([i for i, b in enumerate(bodies) if b.nv == 1], dtype=int),
        axis=axis, axis_skew=skews, axis_skew2=skews @ skews,
        origin_rotation=np.array([b.rotation for b in bodies]).reshape(n, 3, 3),
        origin_translation=np.array([b.translation for b in bodies]).reshape(n, 3),
        mass=np.array([b.mass for b in bodies]), com=np.array([b.com for b in bodies]).reshape(n, 3),
        inertia_com=np.array([b.inertia_com for b in bodies]).reshape(n, 3, 3),
        ancestry=ancestry, body_ancestry=body_ancestry,
        own_tangent=np.array([b.v_index for b in bodies], dtype=int),
        one_dof_mask=np.array([[1.0 if b.nv == 1 else 0.0] for b in bodies]).reshape(n, 1))


def world_placements(model, x: np.ndarray, arrays: TreeArrays | None = None) -> tuple[np.ndarray, np.ndarray]:
    """World rotations (n_b, 3, 3) and positions (n_b, 3) of all body frames."""
    t = arrays or tree_arrays(model)
    angle = np.where(t.revolute, x[t.q_index], 0.0)
    joint_rotation = (np.eye(3) + np.sin(angle)[:, None, None] * t.axis_skew
                      + (1.0 - np.cos(angle))[:, None, None] * t.axis_skew2)
    local_r = t.origin_rotation @ joint_rotation
    slide = np.where(t.prismatic, x[t.q_index], 0.0)
    local_p = t.origin_translation + np.einsum("bij,bj->bi", t.origin_rotation, t.axis * slide[:, None])
    for i in t.multi:
        local_r[i], local_p[i] = joint_placement(model.bodies[i], x)
    # homogeneous 4×4 products along the tree: one small matmul per body
    local = np.zeros((t.n_bodies, 4, 4))
    local[:, :3, :3] = local_r
    local[:, :3, 3] = local_p
    local[:, 3, 3] = 1.0
    world = local.copy()
    matmul = np.matmul
    for i, parent in enumerate(t.parents):
        if parent >= 0:
            matmul(world[parent], local[i], out=world[i])
    return world[:, :3, :3], world[:, :3, 3]


_ROLL1 = np.array([1, 2, 0])
_ROLL2 = np.array([2, 0, 1])


def cross_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise 3-vector cross products of (n, 3) arrays (np.cross is slow for small arrays)."""
    return a.take(_ROLL1, 1) * b.take(_ROLL2, 1) - a.take(_ROLL2, 1) * b.take(_ROLL1, 1)


def motion_subspaces(model, t: TreeArrays, rotations, positions) -> np.ndarray:
    """World-frame motion subspace S (6, n_tangent)."""
    subspace = np.zeros((6, model.n_tangent))
    idx = t.one_dof
    if len(idx):
        world_axis = (rotations[idx] @ t.axis[idx, :, None])[:, :, 0]
        revolute = t.revolute[idx, None]
        cols = t.v_index[idx]
        subspace[:3, cols] = np.where(revolute, cross_rows(positions[idx], world_axis), world_axis).T
        subspace[3:, cols] = (world_axis * revolute).T
    for i in t.multi:  # body-frame S = [l; a] → world [R l + p × R a; R a]
        body = model.bodies[i]
        r, p = rotations[i], positions[i]
        k = body.v_index
        angular = r @ body.motion_subspace[3:]
        subspace[:3, k:k + body.nv] = r @ body.motion_subspace[:3] + skew(p) @ angular
        subspace[3:, k:k + body.nv] = angular
    return subspace


_NO_GRAVITY = np.zeros(3)
_EMPTY = np.zeros(0)


def mass_matrix_and_bias(model, x: np.ndarray, xd: np.ndarray | None = None, xdd: np.ndarray | None = None,
                         *, need_mass: bool = True, gravity: bool = True) -> tuple[np.ndarray | None, np.ndarray | None]:
    """(M(x), RNEA(x, ẋ, ẍ)) — either may be skipped (need_mass=False, or xd None): the compiled tree kernel
    (`compiled_kernels.tree_dynamics`; run by Python with numba disabled)."""
    meta, body = model.tree_pack
    need_bias = xd is not None
    mass, tau = kernels.tree_dynamics(meta, body, _float_vector(x),
                                      _float_vector(xd) if need_bias else _EMPTY,
                                      _float_vector(xdd) if xdd is not None else _EMPTY,
                                      np.array(model.gravity) if gravity else _NO_GRAVITY, model.n_tangent,
                                      need_mass, need_bias, xdd is not None)
    return (mass if need_mass else None), (tau if need_bias else None)


def _float_vector(a) -> np.ndarray:
    """A C-contiguous, writable float64 vector (one compiled specialization of the kernel serves every call)."""
    if type(a) is np.ndarray and a.dtype == np.float64 and a.ndim == 1:
        flags = a.flags
        if flags.c_contiguous and flags.writeable:
            return a
    return np.array(a, dtype=float).reshape(-1)
