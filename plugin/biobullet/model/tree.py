"""Compilation of a described URDF tree into bodies for the spatial recursions.

A *body* is a rigid group of links joined by fixed joints, moved by one joint (revolute, prismatic, or the free
joint of a floating base). Bodies are stored parent-before-child. A *frame* locates every URDF link in its body.
Configuration vector x = [base position (3), base quaternion x y z w (4)]? + joint angles θ (URDF joint order);
velocity vector ẋ = [base linear, angular velocity in the base frame (6)]? + θ̇ — Pinocchio's conventions.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from biobullet.model.description import ModelDescription
from biobullet.spatial.rotations import rpy_to_matrix, skew


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
    joint_type: str     # "revolute" | "prismatic" | "free"
    parent: int         # -1: world
    rotation: np.ndarray     # 3×3
    translation: np.ndarray  # 3
    axis: np.ndarray         # unit axis in the body frame (unused for "free")
    q_index: int        # first index in x
    v_index: int        # first index in ẋ
    nv: int
    mass: float
    com: np.ndarray            # m, body frame
    inertia_com: np.ndarray    # kg·m² about the COM, body frame
    spatial_inertia: np.ndarray  # 6×6 about the body origin, [linear; angular] ordering
    motion_subspace: np.ndarray  # 6×nv


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
    inertia[3:, 3:] = inertia_com - mass * (c @ c)
    return inertia


def compile_tree(description: ModelDescription) -> tuple[tuple[Body, ...], dict[str, Frame], tuple[str, ...]]:
    """Bodies (parent first), frames by link name, and the movable joint names in URDF order."""
    joint_names = tuple(j.name for j in description.joints if j.movable)
    joint_slot = {name: k for k, name in enumerate(joint_names)}
    floating = description.base_type == "floating"
    offset_q, offset_v = (7, 6) if floating else (0, 0)
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
                           q_index=0, v_index=0, nv=6, parts=[]))
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
            if joint.movable:
                slot = joint_slot[joint.name]
                bodies.append(dict(link=joint.child, joint=joint.name,
                                   joint_type="prismatic" if joint.type == "prismatic" else "revolute",
                                   parent=body, rotation=origin_r, translation=origin_p, axis=np.array(joint.axis),
                                   q_index=offset_q + slot, v_index=offset_v + slot, nv=1, parts=[]))
                pending.append((joint.child, len(bodies) - 1, np.eye(3), np.zeros(3)))
            else:
                pending.append((joint.child, body, origin_r, origin_p))
        stack.extend(reversed(pending))  # depth-first, children in file order
    compiled = []
    for index, b in enumerate(bodies):
        mass, com, inertia_com = _lump(b["parts"])
        if b["joint_type"] == "free":
            subspace = np.eye(6)
        elif b["joint_type"] == "revolute":
            subspace = np.concatenate([np.zeros(3), b["axis"]])[:, None]
        else:
            subspace = np.concatenate([b["axis"], np.zeros(3)])[:, None]
        compiled.append(Body(index=index, link=b["link"], joint=b["joint"], joint_type=b["joint_type"],
                             parent=b["parent"], rotation=_frozen(b["rotation"]),
                             translation=_frozen(b["translation"]), axis=_frozen(b["axis"]),
                             q_index=b["q_index"], v_index=b["v_index"], nv=b["nv"], mass=mass,
                             com=_frozen(com), inertia_com=_frozen(inertia_com),
                             spatial_inertia=_frozen(spatial_inertia(mass, com, inertia_com)),
                             motion_subspace=_frozen(subspace)))
    return tuple(compiled), frames, joint_names


def _lump(parts) -> tuple[float, np.ndarray, np.ndarray]:
    """Mass, COM and COM inertia of links welded into one body (parallel-axis theorem)."""
    masses, coms, inertias = [], [], []
    for link, rotation, translation in parts:
        if link.inertial is None or link.inertial.mass == 0.0:
            continue
        masses.append(link.inertial.mass)
        coms.append(rotation @ np.array(link.inertial.com) + translation)
        inertias.append(rotation @ np.array(link.inertial.inertia) @ rotation.T)
    if not masses:
        return 0.0, np.zeros(3), np.zeros((3, 3))
    total = float(sum(masses))
    com = sum(m * c for m, c in zip(masses, coms)) / total
    inertia = np.zeros((3, 3))
    for m, c, i in zip(masses, coms, inertias):
        d = c - com
        inertia += i + m * (d @ d * np.eye(3) - np.outer(d, d))
    return total, com, inertia
