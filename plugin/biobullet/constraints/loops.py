"""Loop-closure constraints `<loop>`: parsing, residual Φ(x), Jacobian Φ_x and the velocity product Φ̇_x ẋ.

Conventions (x, ẋ: see model.tree). Every loop relates a point A on `link_a` (`xyz_a`, link frame) to a point
B on `link_b` (`xyz_b`); all rows are lengths (m) or direction cosines (1):
  point     Φ = p_A − p_B (world axes), 3 rows;
  planar    Φ = Eᵀ (p_A − p_B), 2 rows, E = a fixed orthonormal basis (3×2) of the plane ⟂ `normal`;
            `normal` (and E) are attached to link_a's frame, so the equations stay valid on a floating base;
  revolute  the point rows plus u_k·a = 0 (k = 1, 2): the axis a (`axis_a`, default `axis`, in link_a) must
            stay orthogonal to two unit vectors u_k spanning the plane ⟂ `axis_b` (default `axis`) in link_b.
Second derivative: Φ̈ = Φ_x ẍ + b(x, ẋ), with b = Φ̇_x ẋ the "velocity product" computed exactly from the
classical accelerations of the bodies with ẍ = 0 (one forward pass).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..dynamics.vectorized import _cross_rows, _motion_subspaces, tree_arrays, world_placements
from ..errors import SourceRef
from ..model.attributes import parse_floats

LOOP_TYPES = {"point": 3, "planar": 2, "revolute": 5}


def plane_basis(normal: np.ndarray) -> np.ndarray:
    """Deterministic orthonormal 3×2 basis [e1 e2] of the plane ⟂ unit `normal` (e1 × e2 = normal).

    e1 is the coordinate axis least aligned with the normal, made orthogonal to it (normal z → e1 = x, e2 = y).
    """
    helper = np.zeros(3)
    helper[int(np.argmin(np.abs(normal)))] = 1.0
    e1 = helper - (helper @ normal) * normal
    e1 /= np.linalg.norm(e1)
    return np.column_stack([e1, np.cross(normal, e1)])


@dataclass(frozen=True, eq=False)
class Loop:
    """One parsed `<loop>`; vectors in the frame of the link they belong to."""

    name: str
    type: str
    link_a: str
    xyz_a: np.ndarray
    link_b: str
    xyz_b: np.ndarray
    basis: np.ndarray       # planar: 3×2 plane basis in link_a; revolute: 3×2 u_1, u_2 in link_b
    axis_a: np.ndarray      # revolute: unit axis in link_a
    source: SourceRef

    @property
    def n_equations(self) -> int:
        return LOOP_TYPES[self.type]

    @property
    def row_names(self) -> tuple[str, ...]:
        suffix = {"point": ("x", "y", "z"), "planar": ("e1", "e2"),
                  "revolute": ("x", "y", "z", "axis1", "axis2")}[self.type]
        return tuple(f"{self.name}.{s}" for s in suffix)


def _vec3(source: SourceRef, attrs, key: str, default: str | None = None, *, unit: bool = False) -> np.ndarray:
    text = attrs.get(key, default)
    if text is None:
        raise source.error(key, "missing required attribute", "3 space-separated numbers")
    vec = np.array(parse_floats(source, key, text, 3))
    if unit:
        norm = np.linalg.norm(vec)
        if norm < 1e-12:
            raise source.error(key, f"zero vector {text!r}", "a non-zero direction")
        vec = vec / norm
    return vec


def parse_loop(element, link_names) -> Loop:
    """Validate one loop ElementDescription (raw attributes) into a Loop; ModelError names the attribute."""
    source, attrs = element.source, element.attributes
    name = attrs.get("name")
    if not name or not name.strip():
        raise source.error("name", "missing required attribute", "a loop name")
    kind = attrs.get("type")
    if kind not in LOOP_TYPES:
        raise source.error("type", f"unknown loop type {kind!r}", "point, planar or revolute")
    links = []
    for key in ("link_a", "link_b"):
        link = attrs.get(key)
        if link is None:
            raise source.error(key, "missing required attribute", "a link name")
        if link not in link_names:
            raise source.error(key, f"unknown link {link!r}", "one of " + ", ".join(sorted(link_names)))
        links.append(link)
    if links[0] == links[1]:
        raise source.error("link_b", f"the loop closes link {links[0]!r} on itself", "two different links")
    xyz_a, xyz_b = _vec3(source, attrs, "xyz_a", "0 0 0"), _vec3(source, attrs, "xyz_b", "0 0 0")
    basis, axis_a = np.zeros((3, 2)), np.zeros(3)
    if kind == "planar":
        basis = plane_basis(_vec3(source, attrs, "normal", unit=True))
    elif kind == "revolute":
        axis = attrs.get("axis")
        if axis is None and ("axis_a" not in attrs or "axis_b" not in attrs):
            raise source.error("axis", "missing required attribute", "the hinge axis (or axis_a and axis_b)")
        axis_a = _vec3(source, attrs, "axis_a", axis, unit=True) if "axis_a" in attrs else _vec3(
            source, attrs, "axis", unit=True)
        axis_b = _vec3(source, attrs, "axis_b", axis, unit=True) if "axis_b" in attrs else _vec3(
            source, attrs, "axis", unit=True)
        basis = plane_basis(axis_b)
    for array in (xyz_a, xyz_b, basis, axis_a):
        array.setflags(write=False)
    return Loop(name.strip(), kind, links[0], xyz_a, links[1], xyz_b, basis, axis_a, source)


def parse_loops(description, link_names) -> tuple[Loop, ...]:
    loops = tuple(parse_loop(e, set(link_names)) for e in description.elements_of("loop"))
    seen: set[str] = set()
    for loop in loops:
        if loop.name in seen:
            raise loop.source.error("name", f"duplicate loop name {loop.name!r}", "distinct loop names")
        seen.add(loop.name)
    return loops


# ---------------------------------------------------------------------------------------------- kinematics
def _cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """3-vector cross product (np.cross is ~10× slower on single vectors)."""
    return np.array([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]])


@dataclass
class TreeKinematics:
    """World placements, motion subspaces (world frame at the world origin, [linear; angular]) and, with ẋ,
    body spatial velocities V and the spatial accelerations A₀ that ẋ alone produces (ẍ = 0).

    Fixed-frame recursion (Featherstone RBDA §3.4): V_i = Σ_{k moves i} S_k ẋ_k, A₀_i = Σ_{k ≤ i} V_k × S_k ẋ_k;
    the same algebra as dynamics.vectorized, whose RNEA is checked against Pinocchio.
    """

    arrays: object
    rotations: np.ndarray      # (n_b, 3, 3)
    positions: np.ndarray      # (n_b, 3)
    subspace: np.ndarray       # (6, n_tangent)
    velocity: np.ndarray | None = None   # (n_b, 6)
    accel: np.ndarray | None = None      # (n_b, 6)


def tree_kinematics(model, x: np.ndarray, xd: np.ndarray | None = None) -> TreeKinematics:
    t = tree_arrays(model)
    rotations, positions = world_placements(model, x, t)
    subspace = _motion_subspaces(model, t, rotations, positions)
    kin = TreeKinematics(t, rotations, positions, subspace)
    if xd is not None:
        v = (t.ancestry * xd) @ subspace.T
        joint_v = (subspace[:, t.own_tangent] * xd[t.own_tangent]).T * t.one_dof_mask
        c = np.concatenate([_cross_rows(v[:, 3:], joint_v[:, :3]) + _cross_rows(v[:, :3], joint_v[:, 3:]),
                            _cross_rows(v[:, 3:], joint_v[:, 3:])], axis=1)
        kin.velocity, kin.accel = v, t.body_ancestry @ c
    return kin


@dataclass
class PointState:
    """A link point in world axes: position, link rotation, 6×n Jacobian [linear; angular] and (with ẋ) its
    velocity, the link's angular velocity, and the classical accelerations with ẍ = 0."""

    position: np.ndarray
    rotation: np.ndarray
    jacobian: np.ndarray | None
    velocity: np.ndarray | None = None
    omega: np.ndarray | None = None
    accel: np.ndarray | None = None
    alpha: np.ndarray | None = None


def point_state(model, kin: TreeKinematics, link: str, xyz: np.ndarray, *, jacobian: bool = True) -> PointState:
    frame = model.frame(link)
    if frame.body < 0:
        zero = np.zeros(3)
        return PointState(frame.rotation @ xyz + frame.translation, frame.rotation,
                          np.zeros((6, model.n_tangent)) if jacobian else None, zero, zero, zero, zero)
    r_body, o_body = kin.rotations[frame.body], kin.positions[frame.body]
    position = r_body @ (frame.rotation @ xyz + frame.translation) + o_body
    state = PointState(position, r_body @ frame.rotation, None)
    if jacobian:  # point velocity = S_lin + S_ang × p on the directions that move the body
        s, mask = kin.subspace, kin.arrays.ancestry[frame.body]
        jac = np.empty((6, model.n_tangent))
        jac[0] = s[0] + s[4] * position[2] - s[5] * position[1]
        jac[1] = s[1] + s[5] * position[0] - s[3] * position[2]
        jac[2] = s[2] + s[3] * position[1] - s[4] * position[0]
        jac[3:] = s[3:]
        state.jacobian = jac * mask
    if kin.velocity is not None:
        v, a = kin.velocity[frame.body], kin.accel[frame.body]
        omega, alpha = v[3:], a[3:]
        state.omega, state.alpha = omega, alpha
        state.velocity = v[:3] + _cross(omega, position)
        # classical acceleration of a body point from the spatial one: a_p = A_lin + α × p + ω × ṗ
        state.accel = a[:3] + _cross(alpha, position) + _cross(omega, state.velocity)
    return state


def loop_terms(model, loops, x: np.ndarray, xd: np.ndarray | None = None, *,
               jacobian: bool = True) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    """(Φ, Φ_x, b) of all `loops` stacked; Φ_x is n_rows × n_tangent (None if not asked), b = Φ̇_x ẋ (None
    without ẋ)."""
    kin = tree_kinematics(model, np.asarray(x, dtype=float), None if xd is None else np.asarray(xd, dtype=float))
    motion = kin.velocity
    n_rows = sum(loop.n_equations for loop in loops)
    phi = np.zeros(n_rows)
    jac = np.zeros((n_rows, model.n_tangent)) if jacobian else None
    bias = np.zeros(n_rows) if xd is not None else None
    row = 0
    for loop in loops:
        a = point_state(model, kin, loop.link_a, loop.xyz_a, jacobian=jacobian)
        b = point_state(model, kin, loop.link_b, loop.xyz_b, jacobian=jacobian)
        d = a.position - b.position
        if loop.type in ("point", "revolute"):
            phi[row:row + 3] = d
            if jacobian:
                jac[row:row + 3] = a.jacobian[:3] - b.jacobian[:3]
            if motion is not None:
                bias[row:row + 3] = a.accel - b.accel
            if loop.type == "revolute":
                axis = a.rotation @ loop.axis_a
                for k in range(2):
                    u = b.rotation @ loop.basis[:, k]
                    phi[row + 3 + k] = u @ axis
                    if jacobian:  # d(u·a)/dt = (u × a)·(ω_b − ω_a)
                        jac[row + 3 + k] = _cross(u, axis) @ (b.jacobian[3:] - a.jacobian[3:])
                    if motion is not None:
                        wu, wa = _cross(b.omega, u), _cross(a.omega, axis)
                        bias[row + 3 + k] = ((_cross(b.alpha, u) + _cross(b.omega, wu)) @ axis + 2.0 * wu @ wa
                                             + u @ (_cross(a.alpha, axis) + _cross(a.omega, wa)))
        else:  # planar, basis attached to link_a
            for k in range(2):
                e = a.rotation @ loop.basis[:, k]
                phi[row + k] = e @ d
                if jacobian:  # d(e·d)/dt = e·ḋ + ω_a·(e × d)
                    jac[row + k] = e @ (a.jacobian[:3] - b.jacobian[:3]) + _cross(e, d) @ a.jacobian[3:]
                if motion is not None:
                    we = _cross(a.omega, e)
                    bias[row + k] = (e @ (a.accel - b.accel) + 2.0 * we @ (a.velocity - b.velocity)
                                     + (_cross(a.alpha, e) + _cross(a.omega, we)) @ d)
        row += loop.n_equations
    return phi, jac, bias


def loop_supports(model, loop: Loop) -> set[int]:
    """Indices (tree order) of the movable joints whose motion can change the loop's equations (paths to root)."""
    joints: set[int] = set()
    for link in (loop.link_a, loop.link_b):
        index = model.frame(link).body
        while index >= 0:
            body = model.bodies[index]
            if body.joint_type != "free":
                joints.add(model.joint_names.index(body.joint))
            index = body.parent
    return joints

