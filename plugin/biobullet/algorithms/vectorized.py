"""Batched world-frame tree dynamics: the same M(x) and RNEA(x, ẋ, ẍ) as crba.py / rnea.py, computed with a
fixed number of numpy calls instead of per-body Python work (the hot path of simulations).

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
from biobullet.core import jit

_TREE_ARRAYS = "vectorized.tree_arrays"   # key of the model's TreeArrays in `Model.derived`


@dataclass(frozen=True)
class TreeArrays:
    """Per-model constant arrays (built once per Model)."""

    n_bodies: int
    parents: tuple[int, ...]
    revolute: np.ndarray        # bool (n_b,)
    prismatic: np.ndarray       # bool (n_b,)
    free: int                   # index of the free body or −1
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
    body_of_tangent: np.ndarray  # (n_t,) body moved by each tangent direction's own joint
    tangent_ancestry: np.ndarray  # (n_t, n_t) mask [l, j]: direction l moves the body of direction j
    own_tangent: np.ndarray     # (n_b,) first tangent index of each body's joint
    one_dof_mask: np.ndarray    # (n_b, 1) 1.0 for 1-DOF bodies, 0.0 for the free base (its v × v is zero)
    own_mask: np.ndarray        # (n_b, n_tangent) 1.0 where direction k is body i's own joint, 0 for a root body
    n_tangent_plus_one: int     # stride of a flattened (n_t, n_t) matrix's diagonal


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
    body_of_tangent = np.zeros(model.n_tangent, dtype=int)
    for i, body in enumerate(bodies):
        body_of_tangent[body.v_index:body.v_index + body.nv] = i
    skews = np.array([skew(a) for a in axis]).reshape(n, 3, 3)
    free = [i for i, b in enumerate(bodies) if b.joint_type == "free"]
    own_mask = np.zeros((n, model.n_tangent))
    for i, body in enumerate(bodies):
        if body.parent >= 0:   # a root body's velocity is its joint's: v × v_J = 0
            own_mask[i, body.v_index:body.v_index + body.nv] = 1.0
    return TreeArrays(
        n_bodies=n, parents=tuple(b.parent for b in bodies),
        revolute=np.array([b.joint_type == "revolute" for b in bodies], dtype=bool),
        prismatic=np.array([b.joint_type == "prismatic" for b in bodies], dtype=bool),
        free=free[0] if free else -1, multi=tuple(i for i, b in enumerate(bodies) if b.multi_dof),
        q_index=np.array([b.q_index if b.nv == 1 else 0 for b in bodies], dtype=int),
        v_index=np.array([b.v_index for b in bodies], dtype=int),
        one_dof=np.array([i for i, b in enumerate(bodies) if b.nv == 1], dtype=int),
        axis=axis, axis_skew=skews, axis_skew2=skews @ skews,
        origin_rotation=np.array([b.rotation for b in bodies]).reshape(n, 3, 3),
        origin_translation=np.array([b.translation for b in bodies]).reshape(n, 3),
        mass=np.array([b.mass for b in bodies]), com=np.array([b.com for b in bodies]).reshape(n, 3),
        inertia_com=np.array([b.inertia_com for b in bodies]).reshape(n, 3, 3),
        ancestry=ancestry, body_ancestry=body_ancestry, body_of_tangent=body_of_tangent,
        tangent_ancestry=_tangent_mask(ancestry, body_of_tangent),
        own_tangent=np.array([b.v_index for b in bodies], dtype=int),
        one_dof_mask=np.array([[1.0 if b.nv == 1 else 0.0] for b in bodies]).reshape(n, 1), own_mask=own_mask,
        n_tangent_plus_one=model.n_tangent + 1)


def _tangent_mask(ancestry: np.ndarray, body_of_tangent: np.ndarray) -> np.ndarray:
    """[l, j] = 1 if direction l moves the body of direction j; within one multi-DOF body only l ≥ j, so that
    M = L + Lᵀ − diag(L) counts each entry once."""
    mask = ancestry[body_of_tangent].T.copy()
    same = body_of_tangent[:, None] == body_of_tangent[None, :]
    mask[same & (np.arange(len(body_of_tangent))[:, None] < np.arange(len(body_of_tangent))[None, :])] = 0.0
    return mask


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


def _world_inertias(t: TreeArrays, rotations, positions) -> np.ndarray:
    """Spatial inertias (n_b, 6, 6) about the world origin, world axes."""
    c = (rotations @ t.com[:, :, None])[:, :, 0] + positions
    ic = rotations @ t.inertia_com @ rotations.transpose(0, 2, 1)
    m = t.mass[:, None, None]
    cx = np.zeros((t.n_bodies, 3, 3))
    cx[:, 0, 1], cx[:, 0, 2], cx[:, 1, 2] = -c[:, 2], c[:, 1], -c[:, 0]
    cx[:, 1, 0], cx[:, 2, 0], cx[:, 2, 1] = c[:, 2], -c[:, 1], c[:, 0]
    mcx = m * cx
    inertia = np.empty((t.n_bodies, 6, 6))
    inertia[:, :3, :3] = m * _EYE3
    inertia[:, :3, 3:] = -mcx
    inertia[:, 3:, :3] = mcx
    inertia[:, 3:, 3:] = ic - mcx @ cx
    return inertia


_EYE3 = np.eye(3)


_NO_GRAVITY = np.zeros(3)
_EMPTY = np.zeros(0)


def mass_matrix_and_bias(model, x: np.ndarray, xd: np.ndarray | None = None, xdd: np.ndarray | None = None,
                         *, need_mass: bool = True, gravity: bool = True) -> tuple[np.ndarray | None, np.ndarray | None]:
    """(M(x), RNEA(x, ẋ, ẍ)) — either may be skipped (need_mass=False, or xd None).

    With numba installed (and not disabled, see compiled_kernels) the compiled kernel of the same algorithm runs;
    otherwise `mass_matrix_and_bias_numpy`.
    """
    if jit.ENABLED:
        meta, body = model.tree_pack
        need_bias = xd is not None
        mass, tau = kernels.tree_dynamics(meta, body, _float_vector(x),
                                          _float_vector(xd) if need_bias else _EMPTY,
                                          _float_vector(xdd) if xdd is not None else _EMPTY,
                                          np.array(model.gravity) if gravity else _NO_GRAVITY, model.n_tangent,
                                          need_mass, need_bias, xdd is not None)
        return (mass if need_mass else None), (tau if need_bias else None)
    return mass_matrix_and_bias_numpy(model, x, xd, xdd, need_mass=need_mass, gravity=gravity)


def _float_vector(a) -> np.ndarray:
    """A C-contiguous, writable float64 vector (one compiled specialization of the kernel serves every call)."""
    if type(a) is np.ndarray and a.dtype == np.float64 and a.ndim == 1:
        flags = a.flags
        if flags.c_contiguous and flags.writeable:
            return a
    return np.array(a, dtype=float).reshape(-1)


def mass_matrix_and_bias_numpy(model, x: np.ndarray, xd: np.ndarray | None = None, xdd: np.ndarray | None = None,
                               *, need_mass: bool = True, gravity: bool = True
                               ) -> tuple[np.ndarray | None, np.ndarray | None]:
    """Pure-numpy path of `mass_matrix_and_bias` (a fixed number of batched numpy calls)."""
    t = tree_arrays(model)
    rotations, positions = world_placements(model, x, t)
    subspace = motion_subspaces(model, t, rotations, positions)          # (6, n_t)
    inertia = _world_inertias(t, rotations, positions)                     # (n_b, 6, 6)
    mass = None
    if need_mass:
        # composite inertia of the subtree each tangent direction moves: IC_b = Σ_{i in subtree(b)} I_i
        composite = (t.body_ancestry.T @ inertia.reshape(t.n_bodies, 36)).reshape(t.n_bodies, 6, 6)
        force = (composite[t.body_of_tangent] @ subspace.T[:, :, None])[:, :, 0]   # (n_t, 6) = IC S_j
        pairs = subspace.T @ force.T                                       # [l, j] = S_lᵀ IC_{b(j)} S_j
        lower = pairs * t.tangent_ancestry                                 # l moves body b(j)
        mass = lower + lower.T
        mass.flat[::t.n_tangent_plus_one] -= lower.flat[::t.n_tangent_plus_one]
    tau = None
    if xd is not None:
        v = (t.ancestry * xd) @ subspace.T                                 # (n_b, 6) body velocities
        joint_v = (t.own_mask * xd) @ subspace.T                          # own joint velocity (0 at roots)
        c = np.concatenate([cross_rows(v[:, 3:], joint_v[:, :3]) + cross_rows(v[:, :3], joint_v[:, 3:]),
                            cross_rows(v[:, 3:], joint_v[:, 3:])], axis=1)
        acc = t.body_ancestry @ c
        if xdd is not None:
            acc = acc + (t.ancestry * xdd) @ subspace.T
        if gravity:
            acc[:, :3] -= model.gravity
        iv = (inertia @ v[:, :, None])[:, :, 0]
        f = (inertia @ acc[:, :, None])[:, :, 0]
        f[:, :3] += cross_rows(v[:, 3:], iv[:, :3])
        f[:, 3:] += cross_rows(v[:, 3:], iv[:, 3:]) + cross_rows(v[:, :3], iv[:, :3])
        subtree_force = t.ancestry.T @ f                                   # (n_t, 6)
        tau = np.einsum("kn,nk->n", subspace, subtree_force)
    return mass, tau


# ------------------------------------------------------------------------------ batched over samples (post-processing)
BATCH_JOINT_TYPES = ("revolute", "prismatic", "free")


def _quaternion_matrices(z: np.ndarray) -> np.ndarray:
    """Rotation matrices (n, 3, 3) of unit quaternions z (n, 4) = (x, y, z, w), scalar last."""
    qx, qy, qz, qw = z[:, 0], z[:, 1], z[:, 2], z[:, 3]
    r = np.empty((len(z), 3, 3))
    r[:, 0, 0], r[:, 0, 1], r[:, 0, 2] = 1 - 2 * (qy * qy + qz * qz), 2 * (qx * qy - qz * qw), 2 * (qx * qz + qy * qw)
    r[:, 1, 0], r[:, 1, 1], r[:, 1, 2] = 2 * (qx * qy + qz * qw), 1 - 2 * (qx * qx + qz * qz), 2 * (qy * qz - qx * qw)
    r[:, 2, 0], r[:, 2, 1], r[:, 2, 2] = 2 * (qx * qz - qy * qw), 2 * (qy * qz + qx * qw), 1 - 2 * (qx * qx + qy * qy)
    return r


def world_placements_batch(model, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """World rotations (n, n_b, 3, 3) and positions (n, n_b, 3) of every body frame at n tree configurations
    `positions` (n, n_config): `world_placements` for a whole trajectory, one numpy pass per body."""
    t = tree_arrays(model)
    x = np.asarray(positions, dtype=float).reshape(-1, model.n_config)
    n = len(x)
    rotations = np.empty((n, t.n_bodies, 3, 3))
    origins = np.empty((n, t.n_bodies, 3))
    for i, body in enumerate(model.bodies):
        if body.joint_type == "free":
            local_r = _quaternion_matrices(x[:, body.q_index + 3:body.q_index + 7])
            local_p = x[:, body.q_index:body.q_index + 3]
        elif body.joint_type == "revolute":
            angle = x[:, body.q_index]
            joint_r = (np.eye(3) + np.sin(angle)[:, None, None] * t.axis_skew[i]
                       + (1.0 - np.cos(angle))[:, None, None] * t.axis_skew2[i])
            local_r = t.origin_rotation[i] @ joint_r
            local_p = np.broadcast_to(t.origin_translation[i], (n, 3))
        else:   # prismatic
            local_r = np.broadcast_to(t.origin_rotation[i], (n, 3, 3))
            local_p = t.origin_translation[i] + np.outer(x[:, body.q_index], t.origin_rotation[i] @ t.axis[i])
        parent = body.parent
        if parent >= 0:
            rotations[:, i] = rotations[:, parent] @ local_r
            origins[:, i] = np.einsum("nij,nj->ni", rotations[:, parent], local_p) + origins[:, parent]
        else:
            rotations[:, i] = local_r
            origins[:, i] = local_p
    return rotations, origins


def gravity_potential_batch(model, positions: np.ndarray, placements=None) -> np.ndarray:
    """−Σ m g·c (J) at n tree configurations (n,): c the world centre of mass of each body."""
    gravity = np.asarray(model.gravity, dtype=float)
    x = np.asarray(positions, dtype=float).reshape(-1, model.n_config)
    if not gravity.any():
        return np.zeros(len(x))
    t = tree_arrays(model)
    rotations, origins = placements if placements is not None else world_placements_batch(model, x)
    centres = np.einsum("nbij,bj->nbi", rotations, t.com) + origins      # (n, n_b, 3)
    return -(centres @ gravity) @ t.mass


def kinetic_energy_batch(model, positions: np.ndarray, velocities: np.ndarray, placements=None) -> np.ndarray:
    """½ ẋᵀ M(x) ẋ (J) at n samples (n,), as Σ_i ½ m_i |v_ci|² + ½ ω_iᵀ I_ci ω_i with the body velocities
    propagated along the tree (ω_i = ω_p + a_i θ̇_i, origin velocity v_i = v_p + ω_p × (p_i − p_p) + prismatic
    a_i θ̇_i, a_i the world joint axis; free base: (R v_lin, R ω) from its base-frame twist)."""
    t = tree_arrays(model)
    x = np.asarray(positions, dtype=float).reshape(-1, model.n_config)
    xd = np.asarray(velocities, dtype=float).reshape(-1, model.n_tangent)
    n = len(x)
    rotations, origins = placements if placements is not None else world_placements_batch(model, x)
    omega = np.zeros((n, t.n_bodies, 3))
    linear = np.zeros((n, t.n_bodies, 3))
    energy = np.zeros(n)
    for i, body in enumerate(model.bodies):
        r = rotations[:, i]
        parent = body.parent
        if body.joint_type == "free":
            k = body.v_index
            linear[:, i] = np.einsum("nij,nj->ni", r, xd[:, k:k + 3])
            omega[:, i] = np.einsum("nij,nj->ni", r, xd[:, k + 3:k + 6])
        else:
            world_axis = r @ t.axis[i]                                       # (n, 3)
            rate = xd[:, body.v_index][:, None]
            if parent >= 0:
                omega[:, i] = omega[:, parent]
                linear[:, i] = linear[:, parent] + np.cross(omega[:, parent], origins[:, i] - origins[:, parent])
            if body.joint_type == "revolute":
                omega[:, i] += world_axis * rate
            else:
                linear[:, i] += world_axis * rate
        if body.mass == 0.0 and not t.inertia_com[i].any():
            continue
        lever = r @ t.com[i]
        v_com = linear[:, i] + np.cross(omega[:, i], lever)
        w_local = np.einsum("nji,nj->ni", r, omega[:, i])                   # Rᵀ ω
        energy += 0.5 * body.mass * np.einsum("ni,ni->n", v_com, v_com)
        energy += 0.5 * np.einsum("ni,ij,nj->n", w_local, t.inertia_com[i], w_local)
    return energy
