"""Compilation of a described URDF tree into bodies for the spatial recursions.

A *body* is a rigid group of links joined by fixed joints, moved by one joint. Bodies are stored parent-before-child.
A *frame* locates every URDF link in its body. Joint kinds (Body.joint_type), their coordinates and velocities:

    kind        URDF type             nq  configuration                    nv  velocity (child/body frame)
    revolute    revolute, continuous   1  angle θ (rad)                     1  θ̇
    prismatic   prismatic              1  displacement (m)                  1  ḋ
    free        floating (or the base) 7  position (3), quaternion x y z w  6  [linear; angular] in the child frame
    spherical   spherical (PyBullet)   4  quaternion x y z w                3  angular velocity in the child frame
    planar      planar                 4  x, y (m), cos φ, sin φ            3  [vx, vy] in the child frame, φ̇

These are Pinocchio's conventions (JointModelFreeFlyer, JointModelSpherical, JointModelPlanar). A planar joint moves
in the plane through the joint origin normal to its `<axis>` (the URDF meaning of the axis): x, y are along
e₁ = A eₓ, e₂ = A e_y and φ turns about the normal n = A e_z, with A the smallest rotation taking e_z to n
(A = 1 for the usual axis "0 0 1"). Every joint's motion subspace is constant in the child frame.

Configuration vector x = [base pose (7)]? + [coordinates of every multi-DOF joint (free, spherical, planar), URDF
order] + [θ of every 1-DOF joint, URDF order]; velocity ẋ likewise (6, nv each, 1 each). The leading block
(`base_nq`, `base_nv` of `compile_tree`) passes by the coordinate map θ = f(q, t) unchanged, as a floating base does.

Inertia (as Pinocchio and PyBullet): a link's `<inertial>` enters its body even when its mass is zero (a massless
link keeps its rotational inertia); a link without `<inertial>` has zero mass and inertia (URDF specification).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from biobullet.model.description import ModelDescription
from biobullet.spatial.rotations import rpy_to_matrix, skew

# nq, nv of each joint kind
JOINT_SIZES = {"revolute": (1, 1), "prismatic": (1, 1), "free": (7, 6), "spherical": (4, 3), "planar": (4, 3)}
_KIND_OF_URDF_TYPE = {"revolute": "revolute", "continuous": "revolute", "prismatic": "prismatic",
                      "floating": "free", "spherical": "spherical", "planar": "planar"}


def _frozen(array: np.ndarray) -> np.ndarray:
    array = np.array(array, dtype=float)
    array.setflags(write=False)
    return array


@dataclass(frozen=True, eq=False)
class Body:
    """One moving rigid body. Placement = joint frame in the parent body's frame at zero joint motion."""

    index: int
    link: str           # the URDF link the joint moves (the body's frame is this link's frame)
    joint: str          # URDF joint name, "" for the floating base's free joint
    joint_type: str     # "revolute" | "prismatic" | "free" | "spherical" | "planar"
    parent: int         # -1: world
    rotation: np.ndarray     # 3×3
    translation: np.ndarray  # 3
    axis: np.ndarray         # unit axis in the body frame (planar: the plane's normal; unused for free, spherical)
    q_index: int        # first index in x
    v_index: int        # first index in ẋ
    nv: int
    mass: float
    com: np.ndarray            # m, body frame
    inertia_com: np.ndarray    # kg·m² about the COM, body frame
    spatial_inertia: np.ndarray  # 6×6 about the body origin, [linear; angular] ordering
    motion_subspace: np.ndarray  # 6×nv, body frame, constant
    nq: int = 1

    @property
    def multi_dof(self) -> bool:
        return self.joint_type in ("free", "spherical", "planar")


@dataclass(frozen=True, eq=False)
class Frame:
    """A URDF link located in a body: point_in_body = rotation @ point_in_link + translation. body −1 = world."""

    name: str
    body: int
    rotation: np.ndarray
    translation: np.ndarray


def spatial_inertia(mass: float, com: np.ndarray, inertia_com: np.ndarray) -> np.ndarray:
    c = skew(com)
    inertia = np.zeros((6, 6))
    inertia[:3, :3] = mass * np.eye(3)
    inertia[:3, 3:] = -mass * c
    inertia[3:, :3] = mass * c
    with np.errstate(over="ignore", invalid="ignore"):   # absurd magnitudes (a COM at 1e200 m): the calls that
        inertia[3:, 3:] = inertia_com - mass * (c @ c)   # use M name the overflow (SolverError), not NumPy
    return inertia


def compile_tree(description: ModelDescription) -> tuple[tuple[Body, ...], dict[str, Frame], tuple[str, ...]]:
    """Bodies (parent first), frames by link name, and the 1-DOF joint names (θ) in URDF order."""
    joint_names = tuple(j.name for j in description.joints if j.movable)
    joint_slot = {name: k for k, name in enumerate(joint_names)}
    floating = description.base_type == "floating"
    # leading block: the floating base, then every multi-DOF joint in file order
    block_q, block_v = (7, 6) if floating else (0, 0)
    multi_slot: dict[str, tuple[int, int]] = {}
    for joint in description.joints:
        if joint.multi_dof:
            nq, nv = JOINT_SIZES[_KIND_OF_URDF_TYPE[joint.type]]
            multi_slot[joint.name] = (block_q, block_v)
            block_q, block_v = block_q + nq, block_v + nv
    offset_q, offset_v = block_q, block_v
    children: dict[str, list] = {}
    for joint in description.joints:
        children.setdefault(joint.parent, []).append(joint)
    links = {link.name: link for link in description.links}
    bodies: list[dict] = []
    frames: dict[str, Frame] = {}
    root_body = -1
    if floating:
        bodies.append(dict(link=description.root_link, joint="", joint_type="free", parent=-1,
                           rotation=np.eye(3), translation=np.zeros(3), axis=np.zeros(3),
                           q_index=0, v_index=0, parts=[]))
        root_body = 0
    stack = [(description.root_link, root_body, np.eye(3), np.zeros(3))]
    while stack:
        link_name, body, rotation, translation = stack.pop()
        frames[link_name] = Frame(link_name, body, _frozen(rotation), _frozen(translation))
        if body >= 0:
            bodies[body]["parts"].append((links[link_name], rotation, translation))
        pending = []
        for joint in children.get(link_name, []):
            origin_r = rotation @ rpy_to_matrix(joint.origin_rpy)
            origin_p = rotation @ np.array(joint.origin_xyz) + translation
            if joint.movable or joint.multi_dof:
                if joint.movable:
                    q_index, v_index = offset_q + joint_slot[joint.name], offset_v + joint_slot[joint.name]
                else:
                    q_index, v_index = multi_slot[joint.name]
                bodies.append(dict(link=joint.child, joint=joint.name, joint_type=_KIND_OF_URDF_TYPE[joint.type],
                                   parent=body, rotation=origin_r, translation=origin_p, axis=np.array(joint.axis),
                                   q_index=q_index, v_index=v_index, parts=[]))
                pending.append((joint.child, len(bodies) - 1, np.eye(3), np.zeros(3)))
            else:
                pending.append((joint.child, body, origin_r, origin_p))
        stack.extend(reversed(pending))  # depth-first, children in file order
    compiled = []
    for index, b in enumerate(bodies):
        mass, com, inertia_com = _lump(b["parts"])
        kind = b["joint_type"]
        nq, nv = JOINT_SIZES[kind]
        compiled.append(Body(index=index, link=b["link"], joint=b["joint"], joint_type=kind,
                             parent=b["parent"], rotation=_frozen(b["rotation"]),
                             translation=_frozen(b["translation"]), axis=_frozen(b["axis"]),
                             q_index=b["q_index"], v_index=b["v_index"], nv=nv, mass=mass,
                             com=_frozen(com), inertia_com=_frozen(inertia_com),
                             spatial_inertia=_frozen(spatial_inertia(mass, com, inertia_com)),
                             motion_subspace=_frozen(motion_subspace(kind, b["axis"])), nq=nq))
    return tuple(compiled), frames, joint_names


def block_sizes(bodies: tuple[Body, ...]) -> tuple[int, int]:
    """(nq, nv) of the leading block of x and ẋ: floating base and multi-DOF joints."""
    multi = [b for b in bodies if b.multi_dof]
    return sum(b.nq for b in multi), sum(b.nv for b in multi)


def plane_basis(normal) -> np.ndarray:
    """A: the smallest rotation taking e_z onto the unit `normal` (columns e₁, e₂, n of a planar joint)."""
    n = np.asarray(normal, dtype=float)
    n = n / np.linalg.norm(n)
    c = float(n[2])
    if c < -1.0 + 1e-12:  # antiparallel: half turn about x
        return np.diag([1.0, -1.0, -1.0])
    k = np.array([-n[1], n[0], 0.0])   # e_z × n
    kx = skew(k)
    return np.eye(3) + kx + kx @ kx / (1.0 + c)


def motion_subspace(kind: str, axis) -> np.ndarray:
    """6 × nv motion subspace of a joint kind in the child frame ([linear; angular] rows)."""
    axis = np.asarray(axis, dtype=float)
    if kind == "revolute":
        return np.concatenate([np.zeros(3), axis])[:, None]
    if kind == "prismatic":
        return np.concatenate([axis, np.zeros(3)])[:, None]
    if kind == "free":
        return np.eye(6)
    subspace = np.zeros((6, 3))
    if kind == "spherical":
        subspace[3:, :] = np.eye(3)
        return subspace
    basis = plane_basis(axis)  # planar
    subspace[:3, 0], subspace[:3, 1], subspace[3:, 2] = basis[:, 0], basis[:, 1], basis[:, 2]
    return subspace


def _lump(parts) -> tuple[float, np.ndarray, np.ndarray]:
    """Mass, COM and COM inertia of links welded into one body (parallel-axis theorem).

    A massless link with a non-zero tensor keeps its rotational inertia (its spatial inertia [[0, 0], [0, I]] is
    the same about every point), as in Pinocchio and PyBullet; a link without `<inertial>` adds nothing.
    """
    masses, coms, inertias = [], [], []
    for link, rotation, translation in parts:
        if link.inertial is None:
            continue
        masses.append(link.inertial.mass)
        coms.append(rotation @ np.array(link.inertial.com) + translation)
        inertias.append(rotation @ np.array(link.inertial.inertia) @ rotation.T)
    total = float(sum(masses))
    if total == 0.0:
        return 0.0, np.zeros(3), sum(inertias, np.zeros((3, 3)))
    com = sum(m * c for m, c in zip(masses, coms)) / total
    inertia = np.zeros((3, 3))
    for m, c, i in zip(masses, coms, inertias):
        d = c - com
        inertia += i + m * (d @ d * np.eye(3) - np.outer(d, d))
    return total, com, inertia


REVOLUTE, PRISMATIC, FREE, SPHERICAL, PLANAR = 0, 1, 2, 3, 4
# per-body float record: axis 3, origin rotation 9, origin translation 3, mass 1, com 3, inertia about com 9,
# body-frame motion subspace 6×6 (row-major, first nv columns used; multi-DOF joints read it)
AXIS, ROT, TRANS, MASS, COM, INERTIA, SUBSPACE, WIDTH = 0, 3, 12, 15, 16, 19, 28, 64


def pack_tree(bodies) -> tuple[np.ndarray, np.ndarray]:
    """(meta int64 (n_b, 5): parent, kind, q_index, v_index, nv;  body float64 (n_b, 64): the per-body record
    above) of the compiled tree kernels (`algorithms.compiled_kernels`)."""
    kinds = {"revolute": REVOLUTE, "prismatic": PRISMATIC, "free": FREE, "spherical": SPHERICAL, "planar": PLANAR}
    meta = np.array([[b.parent, kinds[b.joint_type], b.q_index, b.v_index, b.nv] for b in bodies],
                    dtype=np.int64).reshape(len(bodies), 5)
    body = np.zeros((len(bodies), WIDTH))
    for i, b in enumerate(bodies):
        if b.parent >= i:
            raise ValueError("bodies must be in topological order (parents first)")
        body[i, AXIS:AXIS + 3] = np.asarray(b.axis, dtype=float).reshape(3)
        body[i, ROT:ROT + 9] = np.asarray(b.rotation, dtype=float).reshape(9)
        body[i, TRANS:TRANS + 3] = np.asarray(b.translation, dtype=float).reshape(3)
        body[i, MASS] = b.mass
        body[i, COM:COM + 3] = np.asarray(b.com, dtype=float).reshape(3)
        body[i, INERTIA:INERTIA + 9] = np.asarray(b.inertia_com, dtype=float).reshape(9)
        subspace = np.zeros((6, 6))
        subspace[:, :b.nv] = b.motion_subspace
        body[i, SUBSPACE:SUBSPACE + 36] = subspace.reshape(36)
    return meta, body


def multi_dof_blocks(bodies) -> np.ndarray:
    """(m, 3) int64 of the bodies' multi-DOF blocks that lead q and v — the floating base and every free (URDF
    floating), spherical and planar joint, in q order: (FREE, SPHERICAL or PLANAR, index in q, index in v). Each
    block has one more coordinate than velocities (a unit quaternion, or a planar joint's (cos φ, sin φ) pair), so
    base_nq = base_nv + m."""
    kinds = {"free": FREE, "spherical": SPHERICAL, "planar": PLANAR}
    rows = [(kinds[b.joint_type], b.q_index, b.v_index)
            for b in sorted((b for b in bodies if b.multi_dof), key=lambda b: b.q_index)]
    return np.array(rows, dtype=np.int64).reshape(len(rows), 3)


def position_rate_py(y, nq, base_q, base_v, blocks, x, xd, out):
    """q̇ into out[:nq] from a reduced state y = (q, v, …): per multi-DOF block (`multi_dof_blocks`) with the
    coordinates x and the velocities ẋ — free joint (and floating base)
    (R(z) v_lin, ½ z ⊗ (ω, 0)), spherical ½ z ⊗ (ω, 0) — z the unit quaternion (x, y, z, w), scalar last,
    (v_lin, ω) in the child (body) frame —, planar (c vx − s vy, s vx + c vy, −s φ̇, c φ̇) for its
    (x, y, cos φ, sin φ); then the 1-DOF coordinates' v."""
    for b in range(blocks.shape[0]):
        kind, k, j = blocks[b, 0], blocks[b, 1], blocks[b, 2]
        if kind == PLANAR:
            c, s, v0, v1 = x[k + 2], x[k + 3], xd[j], xd[j + 1]
            out[k] = c * v0 - s * v1
            out[k + 1] = s * v0 + c * v1
            out[k + 2] = -s * xd[j + 2]
            out[k + 3] = c * xd[j + 2]
            continue
        if kind == FREE:
            qx, qy, qz, qw = x[k + 3], x[k + 4], x[k + 5], x[k + 6]
            r00, r01, r02 = 1 - 2 * (qy * qy + qz * qz), 2 * (qx * qy - qz * qw), 2 * (qx * qz + qy * qw)
            r10, r11, r12 = 2 * (qx * qy + qz * qw), 1 - 2 * (qx * qx + qz * qz), 2 * (qy * qz - qx * qw)
            r20, r21, r22 = 2 * (qx * qz - qy * qw), 2 * (qy * qz + qx * qw), 1 - 2 * (qx * qx + qy * qy)
            v0, v1, v2 = xd[j], xd[j + 1], xd[j + 2]
            out[k] = r00 * v0 + r01 * v1 + r02 * v2
            out[k + 1] = r10 * v0 + r11 * v1 + r12 * v2
            out[k + 2] = r20 * v0 + r21 * v1 + r22 * v2
            k += 3
            j += 3
        qx, qy, qz, qw = x[k], x[k + 1], x[k + 2], x[k + 3]
        w0, w1, w2 = xd[j], xd[j + 1], xd[j + 2]
        out[k] = 0.5 * (qw * w0 + qy * w2 - qz * w1)
        out[k + 1] = 0.5 * (qw * w1 + qz * w0 - qx * w2)
        out[k + 2] = 0.5 * (qw * w2 + qx * w1 - qy * w0)
        out[k + 3] = -0.5 * (qx * w0 + qy * w1 + qz * w2)
    for k in range(base_q, nq):
        out[k] = y[nq + base_v + k - base_q]
