"""Paper 001's link-segment formulation: per-segment Newton–Euler, connecting equations and constraint-axis rows.

Fujii, Ae & Miyashita write, for every rigid segment i (world axes, about the segment's centre of mass),

    Newton (1)   m_i a_i = F_{i-1,i} − F_{i,i+1} + m_i g (+ external forces)
    Euler  (2)   I_i ω̇_i + ω_i × I_i ω_i = T_{i-1,i} − T_{i,i+1} + r_{i,prox} × F_{i-1,i} − r_{i,dist} × F_{i,i+1}

(the printed paper omits the gyroscopic term ω × Iω: `gyroscopic=False` reproduces that form), for every joint the
connecting equation (3) — the joint point has the same acceleration seen from both segments —

    a_c + ω̇_c × r_c + ω_c × (ω_c × r_c) = a_p + ω̇_p × r_p + ω_p × (ω_p × r_p),

and for every forbidden rotation axis one scalar row (4): the second derivative of U_a · U_b = 0, U_a fixed in
the parent segment and U_b fixed in the child, whose unknown is a constraint torque λ along n = U_a × U_b:

    n · (ω̇_c − ω̇_p) = (ω_p × (ω_p × U_a)) · U_b + U_a · (ω_c × (ω_c × U_b)) + 2 (ω_p × U_a) · (ω_c × U_b).

Every joint starts as a ball (0 rows); a hinge forbids the two axes perpendicular to its axis (2 rows: U_a = the
hinge axis fixed in the parent, U_b = two child-fixed unit vectors perpendicular to it — the choice that stays
regular at every angle); a two-axis joint (elbow flexion + forearm pronation) forbids one (U_a = first axis fixed
in the parent, U_b = second axis fixed in the child). Unknowns: every segment's COM acceleration a_i and angular
acceleration ω̇_i, every joint's force F_j (what the parent exerts on the child, world axes) and the constraint
torques λ — one square system of 6N + 3J + C equations (2D: 3N + 2J, no constraint rows).

Model files: a URDF revolute/continuous joint is a hinge; `<segment_joint name=".." joints="a b"/>` in the
`<biobullet>` block groups two revolute joints meeting at one point through a massless link into one two-axis
joint (first axis ⟂ second axis), three of them into a ball joint (docs/link_segment.md); PyBullet's `spherical`
joint is a ball joint too. A floating base or a URDF `floating` joint is a free segment (no joint); a fixed base
joins the root segment to the world. Prismatic and planar joints, joint functions and loops are not link-segment
joints: `ModelError`.

Units SI; joint generalized forces as the model's (N·m for hinges; the floating base's wrench in the base frame
at the base origin, Pinocchio's convention); accelerations returned as the model's v̇.

Computed by numba kernels (`_NAME_py`, compiled through `core.jit`) on `SegmentTables` packed once per model:
segment state → assembly (A, b, the input columns B, the readout v̇ = C z + d) → a Schur-complement solve of the
block structure A = [[D, G], [K, 0]]; M and h are derived from one factorisation (`mass_and_bias`).
docs/link_segment.md has the derivation, cost and accuracy.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar, NamedTuple, Sequence

import numpy as np

from biobullet.algorithms.compiled_kernels import pack
from biobullet.constraints.loop_kernels import tree_kinematics_kernel, tree_kinematics_run
from biobullet.constraints.loops import cross3, tree_kinematics
from biobullet.core import jit
from biobullet.core.errors import ModelError, SolverError, did_you_mean
from biobullet.dynamics.formulation import Formulation, register_formulation
from biobullet.spatial.dense import MASS_PIVOT_RATIO, coordinate_floor, massless_coordinate, massless_text

_MASSLESS = 1e-12  # kg: a body this light is an intermediate link of a grouped joint


@dataclass(frozen=True)
class SegmentJoint:
    """One link-segment joint: parent segment (−1 world) → child segment through 1 (hinge), 2 (two-axis) or
    3 (ball) revolute URDF joints whose intermediate bodies are massless and share the joint point."""

    name: str
    kind: str                    # "hinge" | "two_axis" | "ball"
    parent: int                  # segment index, −1 = world
    child: int                   # segment index
    bodies: tuple[int, ...]      # model body indices along the group (intermediate bodies, then the child's)
    urdf_joints: tuple[str, ...]
    n_constraints: int


@dataclass(frozen=True)
class Structure:
    """The link-segment description of a model: segments (massive bodies), joints, and the system's size."""

    model_file: str
    segments: tuple[int, ...]            # model body index of every segment
    segment_links: tuple[str, ...]       # URDF link name of every segment
    joints: tuple[SegmentJoint, ...]
    floating: bool
    n_constraints: int
    free_bodies: tuple[int, ...] = ()    # bodies moved by a free joint (floating base, URDF floating joints)
    tables: "SegmentTables | None" = None   # the kernels' packed arrays

    @property
    def n_segments(self) -> int:
        return len(self.segments)

    def size(self, planar: bool = False) -> int:
        """Rows (= unknowns): 6N + 3J + C in 3D, 3N + 2J in 2D."""
        n, j = self.n_segments, len(self.joints)
        return 3 * n + 2 * j if planar else 6 * n + 3 * j + self.n_constraints

    def joint(self, name: str) -> SegmentJoint:
        for joint in self.joints:
            if joint.name == name or name in joint.urdf_joints:
                return joint
        raise ModelError(f"no link-segment joint {name!r}", file=self.model_file, argument="joint",
                         expected="one of " + ", ".join(j.name for j in self.joints))

    def segment(self, link: str) -> int:
        if link in self.segment_links:
            return self.segment_links.index(link)
        raise ModelError(f"link {link!r} is not a segment", file=self.model_file, argument="link",
                         expected="one of " + ", ".join(self.segment_links))



_STRUCTURE = "link_segment.structure"   # key of `structure`'s result in `Model.derived`


def structure(model) -> Structure:
    """The link-segment structure of `model` with its packed kernel tables (built once, kept in the model's
    `derived`); ModelError for what the formulation does not support."""
    return model.derive(_STRUCTURE, lambda: _build_structure(model))


def _build_structure(model) -> Structure:
    file = model.file
    description = model.description
    if description.joint_functions:
        f = description.joint_functions[0]
        raise ModelError("the link-segment formulation has no joint functions (its unknowns are segment "
                         "accelerations; a joint function is a rheonomic coupling between joints)", file=file,
                         element=f.source.element, expected="a model without <joint_function>/<mimic>; use "
                         "formulation='reduced' (joint_reactions works for such models through the tree)")
    if description.elements_of("loop"):
        raise ModelError("the link-segment formulation has no closed loops", file=file,
                         element=description.elements_of("loop")[0].source.element,
                         expected="a tree; use formulation='reduced' or 'multipliers'")
    bodies = model.bodies
    for body in bodies:
        if body.joint_type in ("prismatic", "planar"):
            raise ModelError(f"joint {body.joint!r} is {body.joint_type}: the link-segment formulation has hinge, "
                             "two-axis and ball joints (and free segments) only", file=file,
                             element=f'<joint name="{body.joint}">', attribute="type",
                             expected="revolute, continuous, spherical or floating (or formulation='reduced')")
    groups: dict[str, tuple[str, tuple[str, ...]]] = {}
    for element in description.elements_of("segment_joint"):
        source = element.source
        name = element.get("name")
        names = tuple((element.get("joints") or "").split())
        if not name:
            raise source.error("name", "missing name", "a name for the grouped joint")
        if len(names) not in (2, 3):
            raise source.error("joints", f"{len(names)} joints listed", "2 (two-axis joint) or 3 (ball joint) "
                               "revolute joints in chain order")
        for joint_name in names:
            kinds = {b.joint: b.joint_type for b in bodies}
            if kinds.get(joint_name) != "revolute":
                raise source.error("joints", f"unknown joint {joint_name!r}{did_you_mean(joint_name, kinds)}"
                                   if joint_name not in kinds else
                                   f"joint {joint_name!r} is {kinds[joint_name]}", "revolute/continuous joints")
            if joint_name in groups:
                raise source.error("joints", f"joint {joint_name!r} is in two <segment_joint> elements",
                                   "each joint in at most one group")
            groups[joint_name] = (name, names)
    body_of_joint = {body.joint: body.index for body in bodies if body.joint}
    # segments: every body that is not the massless intermediate of a group
    intermediate: set[int] = set()
    grouped: list[tuple[str, tuple[str, ...]]] = []
    for name, names in {v for v in groups.values()}:
        grouped.append((name, names))
        chain = [body_of_joint[n] for n in names]
        source = next(e.source for e in description.elements_of("segment_joint") if e.get("name") == name)
        for k in range(1, len(chain)):
            inner = bodies[chain[k]]
            if inner.parent != chain[k - 1]:
                raise source.error("joints", f"joint {names[k]!r} is not the child joint of {names[k - 1]!r}",
                                   "joints listed in chain order, each the child of the previous one")
            if np.linalg.norm(inner.translation) > 1e-12:
                raise source.error("joints", f"joint {names[k]!r} has an origin offset "
                                   f"{np.round(inner.translation, 6).tolist()} from {names[k - 1]!r}",
                                   "grouped joints meeting at one point (origin xyz 0 0 0)")
        for k in chain[:-1]:
            if bodies[k].mass > _MASSLESS:
                raise source.error("joints", f"the link between grouped joints ({bodies[k].link!r}) has mass "
                                   f"{bodies[k].mass} kg", "massless intermediate links (no <inertial>)")
            intermediate.add(k)
        if len(chain) == 2:
            axis1 = bodies[chain[1]].rotation @ bodies[chain[1]].axis  # second axis in the first joint's frame
            if abs(float(axis1 @ bodies[chain[0]].axis)) > 1e-9:
                raise source.error("joints", "the two axes are not perpendicular", "a two-axis joint with "
                                   "perpendicular axes (U_a · U_b = 0 is its constraint row)")
        else:
            frame = np.column_stack(_group_axes_reference(bodies, chain))
            if abs(np.linalg.det(frame)) < 1e-6:
                raise source.error("joints", "the three axes are not independent", "three independent axes")
    segments = tuple(b.index for b in bodies if b.index not in intermediate)
    seg_of_body = {b: s for s, b in enumerate(segments)}
    for b in segments:
        if bodies[b].mass <= _MASSLESS:
            raise ModelError(f"link {bodies[b].link!r} moves no mass: a link-segment needs mass and inertia",
                             file=file, element=f'<link name="{bodies[b].link}">', attribute="inertial",
                             expected="a positive mass (or group it into a <segment_joint> as a massless link)")
    joints: list[SegmentJoint] = []
    for body in bodies:
        if body.joint_type == "free" or body.index in intermediate:
            continue   # a free segment (floating base or URDF floating joint): no link-segment joint
        if body.joint_type == "spherical":
            name, names, chain, kind, parent = body.joint, (body.joint,), (body.index,), "ball", body.parent
        elif body.joint in groups:
            name, names = groups[body.joint]
            chain = tuple(body_of_joint[n] for n in names)
            first = bodies[chain[0]]
            kind = "two_axis" if len(names) == 2 else "ball"
            parent = first.parent
        else:
            name, names, chain, kind, parent = body.joint, (body.joint,), (body.index,), "hinge", body.parent
        joints.append(SegmentJoint(name, kind, seg_of_body.get(parent, -1) if parent >= 0 else -1,
                                   seg_of_body[body.index], chain, names, {"hinge": 2, "two_axis": 1, "ball": 0}[kind]))
    free = tuple(b.index for b in bodies if b.joint_type == "free")
    for b in free:
        if bodies[b].parent in intermediate:
            raise ModelError(f"floating joint {bodies[b].joint!r} hangs from a massless grouped link", file=file,
                             element=f'<joint name="{bodies[b].joint}">', expected="a segment as its parent")
    return Structure(file, segments, tuple(bodies[b].link for b in segments), tuple(joints),
                     model.floating_base, sum(j.n_constraints for j in joints), free,
                     _pack_tables(model, segments, joints, free, seg_of_body))


def _group_axes_reference(bodies, chain) -> list[np.ndarray]:
    """Axes of a group at zero angles, in the first joint's frame."""
    rotation, axes = np.eye(3), []
    for k, b in enumerate(chain):
        if k:
            rotation = rotation @ bodies[b].rotation
        axes.append(rotation @ bodies[b].axis)
    return axes




class SegmentTables(NamedTuple):
    """The model-dependent arrays of the link-segment kernels, packed once per model (`Structure.tables`).

    meta, body: the tree as `compiled_kernels.pack` (placements, masses, COMs, inertias); segment_body (N,) the
    model body of each segment; joint_index (J, 7): parent segment (−1 world), child segment, parent segment's
    body (−1), child body, number of dof, first constraint row (offset in λ), number of constraint rows;
    joint_geometry (J, 4, 3): joint point in the parent body's frame, U_a in the parent body's frame, the U_b
    (up to two) in the child's; dof_index (J, 3, 2): (body, slot in ẋ) of each dof (−1 padded); dof_axis (J, 3, 3):
    each dof's rotation axis in its body's frame; free_index (F, 5): body, segment, parent body (−1), parent
    segment (−1), first slot in ẋ of every free joint; gravity (3,)."""

    meta: np.ndarray
    body: np.ndarray
    segment_body: np.ndarray
    joint_index: np.ndarray
    joint_geometry: np.ndarray
    dof_index: np.ndarray
    dof_axis: np.ndarray
    free_index: np.ndarray
    gravity: np.ndarray


def _pack_tables(model, segments, joints, free, seg_of_body) -> SegmentTables:
    bodies = model.bodies
    meta, body = pack(model)
    joint_index = np.zeros((len(joints), 7), dtype=np.int64)
    geometry = np.zeros((len(joints), 4, 3))
    dof_index = np.full((len(joints), 3, 2), -1, dtype=np.int64)
    dof_axis = np.zeros((len(joints), 3, 3))
    start = 0
    for j, joint in enumerate(joints):
        first, child = bodies[joint.bodies[0]], bodies[joint.bodies[-1]]
        dofs = [(k, bodies[k].v_index + c, bodies[k].motion_subspace[3:, c])
                for k in joint.bodies for c in range(bodies[k].nv)]
        joint_index[j] = (joint.parent, joint.child, segments[joint.parent] if joint.parent >= 0 else -1,
                          segments[joint.child], len(dofs), start, joint.n_constraints)
        start += joint.n_constraints
        geometry[j, 0] = first.translation
        geometry[j, 1] = first.rotation @ first.axis
        u_b = perpendicular_pair(child.axis) if joint.kind == "hinge" else (child.axis,)
        for e, vector in enumerate(u_b[:joint.n_constraints]):
            geometry[j, 2 + e] = vector
        for e, (k, slot, axis) in enumerate(dofs):
            dof_index[j, e] = (k, slot)
            dof_axis[j, e] = axis
    free_index = np.array([(b, seg_of_body[b], bodies[b].parent,
                            seg_of_body[bodies[b].parent] if bodies[b].parent >= 0 else -1, bodies[b].v_index)
                           for b in free], dtype=np.int64).reshape(len(free), 5)
    return SegmentTables(meta, body, np.array(segments, dtype=np.int64), joint_index, geometry, dof_index, dof_axis,
                         free_index, np.array(model.gravity, dtype=float))


# ---------------------------------------------------------------------------------------------- kinematics
class SegmentState(NamedTuple):
    """World kinematics of every model body and every segment (positions m, velocities m/s, rad/s)."""

    rotations: np.ndarray     # (n_bodies, 3, 3) body frame → world
    origins: np.ndarray       # (n_bodies, 3) body-frame origin (the joint point of the body's joint)
    omega: np.ndarray         # (n_bodies, 3) angular velocity, world axes
    origin_velocity: np.ndarray  # (n_bodies, 3)
    com: np.ndarray           # (N, 3) segment COM
    com_velocity: np.ndarray  # (N, 3)
    inertia: np.ndarray       # (N, 3, 3) COM inertia, world axes


def body_kinematics(model, x: np.ndarray, xd: np.ndarray) -> tuple[np.ndarray, ...]:
    """(R, p, ω, ṗ) of every body in world axes from the tree configuration x and velocity ẋ, any joint kind: the
    tree kinematics kernel (`constraints.loops.tree_kinematics`), its spatial velocities V = (v_O, ω) read at the
    body origins, ṗ = v_O + ω × p."""
    kin = tree_kinematics(model, x, xd)
    omega = kin.velocity[:, 3:].copy()
    return kin.rotations.copy(), kin.positions.copy(), omega, kin.velocity[:, :3] + cross3(omega, kin.positions)


def body_accelerations(model, x: np.ndarray, xd: np.ndarray, xdd: np.ndarray):
    """(ω̇, p̈) of every body origin, world axes, for the tree state (x, ẋ, ẍ) (any joint kind), from the tree
    kinematics kernel (`constraints.loops.tree_kinematics`): spatial accelerations A = A₀ + Σ_k S_k ẍ_k, then the
    classical ones ω̇ = A_ang, p̈ = A_lin + ω̇ × p + ω × ṗ."""
    kin = tree_kinematics(model, x, xd)
    spatial = kin.accel + (kin.arrays.ancestry * np.asarray(xdd, dtype=float)) @ kin.subspace.T
    alpha, pos, omega = spatial[:, 3:], kin.positions, kin.velocity[:, 3:]
    return alpha, spatial[:, :3] + cross3(alpha, pos) + cross3(omega, kin.velocity[:, :3] + cross3(omega, pos))


def _segment_state_py(tables, twist, state):
    """Fill `state` (a SegmentState whose rotations and origins are placed already) from the bodies' spatial
    velocities `twist` (n_b, 6; [v_O; ω] at the world origin, as the tree kinematics kernel gives them): each
    body's ω and origin velocity ṗ = v_O + ω × p, each segment's COM, its velocity and its world inertia R I Rᵀ."""
    body = tables.body
    rot, pos, omega, vel = state.rotations, state.origins, state.omega, state.origin_velocity
    for i in range(rot.shape[0]):
        w0, w1, w2 = twist[i, 3], twist[i, 4], twist[i, 5]
        omega[i, 0], omega[i, 1], omega[i, 2] = w0, w1, w2
        vel[i, 0] = twist[i, 0] + w1 * pos[i, 2] - w2 * pos[i, 1]
        vel[i, 1] = twist[i, 1] + w2 * pos[i, 0] - w0 * pos[i, 2]
        vel[i, 2] = twist[i, 2] + w0 * pos[i, 1] - w1 * pos[i, 0]
    for s in range(tables.segment_body.shape[0]):
        b = tables.segment_body[s]
        arm = np.empty(3)
        for a in range(3):
            arm[a] = rot[b, a, 0] * body[b, 16] + rot[b, a, 1] * body[b, 17] + rot[b, a, 2] * body[b, 18]
            state.com[s, a] = pos[b, a] + arm[a]
        state.com_velocity[s, 0] = vel[b, 0] + omega[b, 1] * arm[2] - omega[b, 2] * arm[1]
        state.com_velocity[s, 1] = vel[b, 1] + omega[b, 2] * arm[0] - omega[b, 0] * arm[2]
        state.com_velocity[s, 2] = vel[b, 2] + omega[b, 0] * arm[1] - omega[b, 1] * arm[0]
        for a in range(3):
            for c in range(3):
                total = 0.0
                for k in range(3):
                    for m in range(3):
                        total += rot[b, a, k] * body[b, 19 + 3 * k + m] * rot[b, c, m]
                state.inertia[s, a, c] = total


segment_state_kernel = jit.lazy(_segment_state_py)


def segment_state(model, x: np.ndarray, xd: np.ndarray) -> SegmentState:
    """World kinematics of the bodies and segments at the tree state (x, ẋ): the tree kinematics kernel
    (`constraints.loops.tree_kinematics`), then `_segment_state_py`."""
    kin = tree_kinematics(model, x, xd)
    state = _new_state_py(kin.rotations.copy(), kin.positions.copy(), structure(model).n_segments)
    segment_state_kernel(structure(model).tables, kin.velocity.copy(), state)   # writable: the signature its compiled
    # callers use (a read-only array would compile a second one)
    return state


# ---------------------------------------------------------------------------------------------- layout
@dataclass(frozen=True)
class Layout:
    """Column (unknown) and row offsets of the 3D system."""

    n: int
    j: int
    c: int

    @property
    def a(self) -> int: return 0                       # COM accelerations, 3 per segment
    @property
    def alpha(self) -> int: return 3 * self.n          # angular accelerations, 3 per segment
    @property
    def force(self) -> int: return 6 * self.n          # joint forces, 3 per joint
    @property
    def torque(self) -> int: return 6 * self.n + 3 * self.j   # constraint torques
    @property
    def size(self) -> int: return 6 * self.n + 3 * self.j + self.c


class SystemArrays(NamedTuple):
    """What `_assemble_py` fills (n = 6N + 3J + C unknowns, nv generalized forces):

    matrix (n, n) and rhs (n,) of A z = b at zero generalized forces; inputs (n, nv): b = rhs + inputs · Q;
    readout (nv, n), readout_offset (nv,): the model's v̇ = readout · z + readout_offset (exact: v̇ is affine in the
    segment accelerations at a consistent state); normals (C, 3) the constraint-torque directions n = U_a × U_b;
    joint_points (J, 3) each joint point (child side); moment_map (J, 3, 3): joint j's applied moment is
    Σ_d moment_map[j, :, d] Q[v_d] (its dof d's generalized force; columns past the joint's dof are zero)."""

    matrix: np.ndarray
    rhs: np.ndarray
    inputs: np.ndarray
    readout: np.ndarray
    readout_offset: np.ndarray
    normals: np.ndarray
    joint_points: np.ndarray
    moment_map: np.ndarray


def empty_system(model) -> SystemArrays:
    """A SystemArrays of the model's size to fill."""
    s = structure(model)
    return _new_system_py(s.size(), len(s.joints), s.n_constraints, model.n_tangent)


def _add_skew_py(matrix, row, col, r, sign):
    """matrix[row:row+3, col:col+3] += sign · [r]× (so that the block times y is sign · r × y)."""
    matrix[row, col + 1] -= sign * r[2]
    matrix[row, col + 2] += sign * r[1]
    matrix[row + 1, col] += sign * r[2]
    matrix[row + 1, col + 2] -= sign * r[0]
    matrix[row + 2, col] -= sign * r[1]
    matrix[row + 2, col + 1] += sign * r[0]


def _cross_py(a, b, out):
    out[0] = a[1] * b[2] - a[2] * b[1]
    out[1] = a[2] * b[0] - a[0] * b[2]
    out[2] = a[0] * b[1] - a[1] * b[0]


def _assemble_py(tables, state, xd, options, out):
    """Fill `out` (SystemArrays) with the link-segment system at a segment state (module docstring): rows Newton
    (3N), Euler (3N), connection (3J), constraint axes (C); unknowns a (3N), ω̇ (3N), F (3J), λ (C). `options`:
    (gyroscopic 0/1, Baumgarte 0/1, α, β). ẋ enters the readout offset only (the velocity terms of θ̈)."""
    meta, body, seg_body = tables.meta, tables.body, tables.segment_body
    rot, pos, omega = state.rotations, state.origins, state.omega
    com, com_vel, inertia = state.com, state.com_velocity, state.inertia
    A, b, B, C, d = out.matrix, out.rhs, out.inputs, out.readout, out.readout_offset
    A.fill(0.0)
    b.fill(0.0)
    B.fill(0.0)
    C.fill(0.0)
    d.fill(0.0)
    out.moment_map.fill(0.0)
    n, nj = seg_body.shape[0], tables.joint_index.shape[0]
    euler, conn, cons_row = 3 * n, 6 * n, 6 * n + 3 * nj
    gyroscopic, stabilise, alpha_gain, beta_gain = options[0] != 0.0, options[1] != 0.0, options[2], options[3]
    g = tables.gravity
    w, u, v, t1, t2 = np.empty(3), np.empty(3), np.empty(3), np.empty(3), np.empty(3)
    for i in range(n):   # Newton m a = m g + …, Euler I ω̇ = −ω × I ω + …
        bi = seg_body[i]
        m = body[bi, 15]
        for a in range(3):
            A[3 * i + a, 3 * i + a] = m
            b[3 * i + a] = m * g[a]
            w[a] = omega[bi, a]
            for c in range(3):
                A[euler + 3 * i + a, euler + 3 * i + c] = inertia[i, a, c]
        if gyroscopic:
            for a in range(3):
                u[a] = inertia[i, a, 0] * w[0] + inertia[i, a, 1] * w[1] + inertia[i, a, 2] * w[2]
            _CROSS(w, u, v)
            for a in range(3):
                b[euler + 3 * i + a] = -v[a]
    # free segments (floating base, URDF floating joints): their generalized wrench (child frame, at the child
    # origin) acts on the child and, reversed, on the parent segment
    for f in range(tables.free_index.shape[0]):
        fb, i, pb, j, k = (tables.free_index[f, 0], tables.free_index[f, 1], tables.free_index[f, 2],
                           tables.free_index[f, 3], tables.free_index[f, 4])
        for a in range(3):
            t1[a] = pos[fb, a] - com[i, a]
        for c in range(3):   # column k + c: unit force along R e_c; column k + 3 + c: unit moment along R e_c
            for a in range(3):
                u[a] = rot[fb, a, c]
            _CROSS(t1, u, v)
            for a in range(3):
                B[3 * i + a, k + c] += u[a]
                B[euler + 3 * i + a, k + c] += v[a]
                B[euler + 3 * i + a, k + 3 + c] += u[a]
            if j >= 0:
                for a in range(3):
                    t2[a] = pos[fb, a] - com[j, a]
                _CROSS(t2, u, v)
                for a in range(3):
                    B[3 * j + a, k + c] -= u[a]
                    B[euler + 3 * j + a, k + c] -= v[a]
                    B[euler + 3 * j + a, k + 3 + c] -= u[a]
        # readout: v̇ of the free joint (child frame) from the segment accelerations
        #   lin = Rᵀ (a_i + [arm]× ω̇_i − a_j + [d − arm_p]× ω̇_j − ω×(ω×arm) + ω_p×(ω_p×arm_p) − ω_p×(ω_p×d) − (ω_p + ω)×u)
        #   ang = Rᵀ (ω̇_i − ω̇_j − ω_p × (ω − ω_p))
        lin_off, ang_off = np.zeros(3), np.zeros(3)
        arm, gap, arm_p, wp = np.empty(3), np.empty(3), np.zeros(3), np.zeros(3)
        for a in range(3):
            arm[a] = com[i, a] - pos[fb, a]
            w[a] = omega[fb, a]
            u[a] = rot[fb, a, 0] * xd[k] + rot[fb, a, 1] * xd[k + 1] + rot[fb, a, 2] * xd[k + 2]
        if j >= 0:
            for a in range(3):
                wp[a] = omega[pb, a]
                arm_p[a] = com[j, a] - pos[pb, a]
                gap[a] = pos[fb, a] - pos[pb, a]
        _CROSS(w, arm, t1)
        _CROSS(w, t1, t2)
        for a in range(3):
            lin_off[a] -= t2[a]
        if j >= 0:
            _CROSS(wp, arm_p, t1)
            _CROSS(wp, t1, t2)
            for a in range(3):
                lin_off[a] += t2[a]
            _CROSS(wp, gap, t1)
            _CROSS(wp, t1, t2)
            for a in range(3):
                lin_off[a] -= t2[a]
        for a in range(3):
            t1[a] = wp[a] + w[a]
            v[a] = w[a] - wp[a]
        _CROSS(t1, u, t2)
        for a in range(3):
            lin_off[a] -= t2[a]
        _CROSS(wp, v, t2)
        for a in range(3):
            ang_off[a] -= t2[a]
            gap[a] -= arm_p[a]
        for r in range(3):   # row r of Rᵀ = column r of R
            for a in range(3):
                ra = rot[fb, a, r]
                C[k + r, 3 * i + a] += ra
                C[k + 3 + r, euler + 3 * i + a] += ra
                if j >= 0:
                    C[k + r, 3 * j + a] -= ra
                    C[k + 3 + r, euler + 3 * j + a] -= ra
                d[k + r] += ra * lin_off[a]
                d[k + 3 + r] += ra * ang_off[a]
            # Rᵀ [arm]× on ω̇_i and Rᵀ [d − arm_p]× on ω̇_j: row r of Rᵀ[x]× is (x × R e_r)ᵀ... = −(R e_r × x)ᵀ
            for a in range(3):
                u[a] = rot[fb, a, r]
            _CROSS(arm, u, t1)
            _CROSS(gap, u, t2)
            for a in range(3):
                C[k + r, euler + 3 * i + a] -= t1[a]
                if j >= 0:
                    C[k + r, euler + 3 * j + a] -= t2[a]
    axes, gram, inverse, proj = np.empty((3, 3)), np.empty((3, 3)), np.empty((3, 3)), np.empty((3, 3))
    rc, rp, point_p, u_a, u_b = np.empty(3), np.empty(3), np.empty(3), np.empty(3), np.empty(3)
    ua_dot, ub_dot = np.empty(3), np.empty(3)
    for jj in range(nj):
        p, c, pb, cb = (tables.joint_index[jj, 0], tables.joint_index[jj, 1], tables.joint_index[jj, 2],
                        tables.joint_index[jj, 3])
        n_dof, first_constraint, n_constraints = (tables.joint_index[jj, 4], tables.joint_index[jj, 5],
                                                  tables.joint_index[jj, 6])
        geometry = tables.joint_geometry[jj]
        for a in range(3):
            out.joint_points[jj, a] = pos[cb, a]
            if p >= 0:
                point_p[a] = (pos[pb, a] + rot[pb, a, 0] * geometry[0, 0] + rot[pb, a, 1] * geometry[0, 1]
                              + rot[pb, a, 2] * geometry[0, 2])
                rp[a] = point_p[a] - com[p, a]
            else:
                point_p[a] = geometry[0, a]
            rc[a] = pos[cb, a] - com[c, a]
        # joint force F (parent on child): + on the child, − on the parent; moments about each COM
        force = conn + 3 * jj
        for a in range(3):
            A[3 * c + a, force + a] -= 1.0
        _ADD_SKEW(A, euler + 3 * c, force, rc, -1.0)
        if p >= 0:
            for a in range(3):
                A[3 * p + a, force + a] += 1.0
            _ADD_SKEW(A, euler + 3 * p, force, rp, 1.0)
        # the joint's world axes E (rows), P = (E Eᵀ)⁻¹ E: applied moment Pᵀ Q (the virtual-power dual of
        # ω_rel = Eᵀ θ̇), and θ̈ = P (ω̇_c − ω̇_p − Σ ω_before × e ẋ)
        for e in range(n_dof):
            k = tables.dof_index[jj, e, 0]
            for a in range(3):
                axes[e, a] = (rot[k, a, 0] * tables.dof_axis[jj, e, 0] + rot[k, a, 1] * tables.dof_axis[jj, e, 1]
                              + rot[k, a, 2] * tables.dof_axis[jj, e, 2])
        for e in range(n_dof):
            for f in range(n_dof):
                gram[e, f] = axes[e, 0] * axes[f, 0] + axes[e, 1] * axes[f, 1] + axes[e, 2] * axes[f, 2]
                inverse[e, f] = 1.0 if e == f else 0.0
        for e in range(n_dof):   # Gauss–Jordan on the (≤ 3 × 3, positive definite) Gram matrix
            pivot = gram[e, e]
            if not pivot > MASS_PIVOT_RATIO:   # (unit axes: diagonal 1) gimbal lock, the axes dependent: NaN
                pivot = np.nan                 # readout and inputs, which the callers report (was 1/0: a bare
                #                                ZeroDivisionError out of the kernel)
            for f in range(n_dof):
                gram[e, f] /= pivot
                inverse[e, f] /= pivot
            for r in range(n_dof):
                if r != e:
                    factor = gram[r, e]
                    for f in range(n_dof):
                        gram[r, f] -= factor * gram[e, f]
                        inverse[r, f] -= factor * inverse[e, f]
        for e in range(n_dof):
            for a in range(3):
                total = 0.0
                for f in range(n_dof):
                    total += inverse[e, f] * axes[f, a]
                proj[e, a] = total
        for a in range(3):
            t1[a] = 0.0   # drift Σ ω_before × e ẋ
        for e in range(n_dof):
            k, slot = tables.dof_index[jj, e, 0], tables.dof_index[jj, e, 1]
            before = meta[k, 0]
            if before >= 0:
                for a in range(3):
                    w[a] = omega[before, a]
                    u[a] = axes[e, a]
                _CROSS(w, u, v)
                for a in range(3):
                    t1[a] += v[a] * xd[slot]
        for e in range(n_dof):
            slot = tables.dof_index[jj, e, 1]
            drift = 0.0
            for a in range(3):
                out.moment_map[jj, a, e] = proj[e, a]
                B[euler + 3 * c + a, slot] += proj[e, a]
                C[slot, euler + 3 * c + a] += proj[e, a]
                if p >= 0:
                    B[euler + 3 * p + a, slot] -= proj[e, a]
                    C[slot, euler + 3 * p + a] -= proj[e, a]
                drift += proj[e, a] * t1[a]
            d[slot] -= drift
        # connecting equation (3): a_c − r_c× ω̇_c − a_p + r_p× ω̇_p = ω_p×(ω_p×r_p) − ω_c×(ω_c×r_c)
        row = conn + 3 * jj
        for a in range(3):
            w[a] = omega[cb, a]
            A[row + a, 3 * c + a] = 1.0
        _ADD_SKEW(A, row, euler + 3 * c, rc, -1.0)
        _CROSS(w, rc, t1)
        _CROSS(w, t1, t2)
        for a in range(3):
            b[row + a] = -t2[a]
            u[a] = com_vel[c, a] + t1[a]    # joint-point velocity, child side (Baumgarte)
            v[a] = pos[cb, a] - point_p[a]  # joint-point gap
        if p >= 0:
            for a in range(3):
                w[a] = omega[pb, a]
                A[row + a, 3 * p + a] = -1.0
            _ADD_SKEW(A, row, euler + 3 * p, rp, 1.0)
            _CROSS(w, rp, t1)
            _CROSS(w, t1, t2)
            for a in range(3):
                b[row + a] += t2[a]
                u[a] -= com_vel[p, a] + t1[a]
        if stabilise:
            for a in range(3):
                b[row + a] -= 2.0 * alpha_gain * u[a] + beta_gain * beta_gain * v[a]
        # constraint-axis rows (4): U_a fixed in the parent (the first axis), U_b fixed in the child; the
        # constraint torque λ n acts on the child, −λ n on the parent
        if n_constraints:
            for a in range(3):
                if p >= 0:
                    u_a[a] = (rot[pb, a, 0] * geometry[1, 0] + rot[pb, a, 1] * geometry[1, 1]
                              + rot[pb, a, 2] * geometry[1, 2])
                    w[a] = omega[pb, a]
                else:
                    u_a[a] = geometry[1, a]
                    w[a] = 0.0
            _CROSS(w, u_a, ua_dot)
            _CROSS(w, ua_dot, t1)   # ω_p × (ω_p × U_a)
        for e in range(n_constraints):
            for a in range(3):
                u_b[a] = (rot[cb, a, 0] * geometry[2 + e, 0] + rot[cb, a, 1] * geometry[2 + e, 1]
                          + rot[cb, a, 2] * geometry[2 + e, 2])
            normal = out.normals[first_constraint + e]
            _CROSS(u_a, u_b, normal)
            for a in range(3):
                v[a] = omega[cb, a]
            _CROSS(v, u_b, ub_dot)
            _CROSS(v, ub_dot, t2)   # ω_c × (ω_c × U_b)
            value, rate, angle = 0.0, 0.0, 0.0
            for a in range(3):
                value += t1[a] * u_b[a] + u_a[a] * t2[a] + 2.0 * ua_dot[a] * ub_dot[a]
                rate += ua_dot[a] * u_b[a] + u_a[a] * ub_dot[a]
                angle += u_a[a] * u_b[a]
            if stabilise:   # c̈ + 2α ċ + β² c = 0 with c̈ = n·(ω̇_p − ω̇_c) + value
                value += 2.0 * alpha_gain * rate + beta_gain * beta_gain * angle
            row = cons_row + first_constraint + e
            b[row] = value
            for a in range(3):
                A[row, euler + 3 * c + a] = normal[a]
                A[euler + 3 * c + a, row] -= normal[a]   # λ's column = its row index (square layout)
                if p >= 0:
                    A[row, euler + 3 * p + a] = -normal[a]
                    A[euler + 3 * p + a, row] += normal[a]


def _pivot_py(matrix, column):
    """The row r ≥ column of the largest |matrix[r, column]| (partial pivoting)."""
    pivot, best = column, abs(matrix[column, column])
    for r in range(column + 1, matrix.shape[0]):
        if abs(matrix[r, column]) > best:
            pivot, best = r, abs(matrix[r, column])
    return pivot


class SchurFactor(NamedTuple):
    """The factorisation of a link-segment matrix A = [[D, G], [K, 0]] by `_schur_factor_py`: D⁻¹'s 3 × 3 blocks
    (2N, 3, 3), W = D⁻¹ G (6N, 3J + C), the LU factors of the Schur complement K W (unit lower and upper in one
    array) and its row pivots."""

    block_inverses: np.ndarray
    w: np.ndarray
    lu: np.ndarray
    pivots: np.ndarray


#: a segment block (m 1 or the world inertia) whose determinant is at most this times its largest entry cubed is
#: singular for the Schur solve (condition ≳ 1e9: D⁻¹ to ≈ 1e-7, beyond what one refinement step recovers), and the
#: system goes to the dense solve; legitimate inertias are far from it (a thin rod's ratio is ≈ 1e-4)
SINGULAR_BLOCK_RATIO = 1e-9


def _schur_factor_py(matrix, n_segments):
    """(ok, SchurFactor) of the link-segment matrix A = [[D, G], [K, 0]]: D (6N × 6N) is block diagonal (m_i 1 and
    the world inertias), G the joint-force and constraint-torque columns of the Newton–Euler rows, K the connection
    and constraint-axis rows over (a, ω̇). A z = b is then (K W) f = K D⁻¹ b₁ − b₂ for f = (F, λ) (3J + C square,
    LU with partial pivoting) and y = (a, ω̇) = D⁻¹ b₁ − W f: O((3J + C)³) instead of O((6N + 3J + C)³).
    ok False: a singular block or Schur complement."""
    n = matrix.shape[0]
    n6 = 6 * n_segments
    k = n - n6
    factor = SchurFactor(np.empty((2 * n_segments, 3, 3)), np.empty((n6, k)), np.zeros((k, k)),
                         np.empty(k, dtype=np.int64))
    inverse, w, lu = factor.block_inverses, factor.w, factor.lu
    for s in range(2 * n_segments):   # D⁻¹ block by block (adjugate over determinant)
        o = 3 * s
        m = inverse[s]
        m[0, 0] = matrix[o + 1, o + 1] * matrix[o + 2, o + 2] - matrix[o + 1, o + 2] * matrix[o + 2, o + 1]
        m[0, 1] = matrix[o, o + 2] * matrix[o + 2, o + 1] - matrix[o, o + 1] * matrix[o + 2, o + 2]
        m[0, 2] = matrix[o, o + 1] * matrix[o + 1, o + 2] - matrix[o, o + 2] * matrix[o + 1, o + 1]
        m[1, 0] = matrix[o + 1, o + 2] * matrix[o + 2, o] - matrix[o + 1, o] * matrix[o + 2, o + 2]
        m[1, 1] = matrix[o, o] * matrix[o + 2, o + 2] - matrix[o, o + 2] * matrix[o + 2, o]
        m[1, 2] = matrix[o, o + 2] * matrix[o + 1, o] - matrix[o, o] * matrix[o + 1, o + 2]
        m[2, 0] = matrix[o + 1, o] * matrix[o + 2, o + 1] - matrix[o + 1, o + 1] * matrix[o + 2, o]
        m[2, 1] = matrix[o, o + 1] * matrix[o + 2, o] - matrix[o, o] * matrix[o + 2, o + 1]
        m[2, 2] = matrix[o, o] * matrix[o + 1, o + 1] - matrix[o, o + 1] * matrix[o + 1, o]
        det = matrix[o, o] * m[0, 0] + matrix[o, o + 1] * m[1, 0] + matrix[o, o + 2] * m[2, 0]
        scale = 0.0
        for a in range(3):
            for c in range(3):
                scale = max(scale, abs(matrix[o + a, o + c]))
        # singular to round-off too: a rank-2 inertia (ixx = 0) turned into world axes has det ≈ 1e-20, not 0, and
        # its adjugate inverse gave M 34 % off (armar4_fixed_hands); the dense solve is exact for such segments
        if not abs(det) > SINGULAR_BLOCK_RATIO * scale * scale * scale:
            return False, factor
        for a in range(3):
            for c in range(3):
                m[a, c] /= det
        for a in range(3):
            for c in range(k):
                w[o + a, c] = (m[a, 0] * matrix[o, n6 + c] + m[a, 1] * matrix[o + 1, n6 + c]
                               + m[a, 2] * matrix[o + 2, n6 + c])
    for r in range(k):
        for j in range(n6):
            coefficient = matrix[n6 + r, j]
            if coefficient != 0.0:   # K is sparse: each row reaches two segments
                for c in range(k):
                    lu[r, c] += coefficient * w[j, c]
    return _LU_FACTOR(lu, factor.pivots, np.zeros(k)), factor   # (refusing exact zero pivots only)


def _schur_apply_py(matrix, factor, rhs, out):
    """out = A⁻¹ rhs (rhs, out: (n, m)) by the factorisation of `_schur_factor_py`."""
    n, m = matrix.shape[0], rhs.shape[1]
    inverse, w, lu, pivots = factor.block_inverses, factor.w, factor.lu, factor.pivots
    n6 = w.shape[0]
    k = n - n6
    r1 = np.empty(n6)
    reduced = np.empty(k)
    for c in range(m):
        for s in range(n6 // 3):
            o = 3 * s
            for a in range(3):
                r1[o + a] = inverse[s, a, 0] * rhs[o, c] + inverse[s, a, 1] * rhs[o + 1, c] + inverse[s, a, 2] * rhs[o + 2, c]
        for r in range(k):
            total = -rhs[n6 + r, c]
            for j in range(n6):
                coefficient = matrix[n6 + r, j]
                if coefficient != 0.0:
                    total += coefficient * r1[j]
            reduced[r] = total
        _LU_APPLY(lu, pivots, reduced)
        for r in range(k):
            out[n6 + r, c] = reduced[r]
        for r in range(n6):
            total = r1[r]
            for j in range(k):
                total -= w[r, j] * reduced[j]
            out[r, c] = total


def _lu_factor_py(lu, pivots, scale):
    """LU with partial pivoting of the square `lu` in place (the unit lower factor's multipliers below the
    diagonal, U on and above it), the row swaps in `pivots`; False when a pivot is not above MASS_PIVOT_RATIO ×
    scale[c] (the column's largest entry: singular to round-off; zeros: only an exact zero pivot)."""
    k = lu.shape[0]
    for c in range(k):
        pivot = _PIVOT(lu, c)
        if not abs(lu[pivot, c]) > MASS_PIVOT_RATIO * scale[c]:
            return False
        pivots[c] = pivot
        if pivot != c:
            for j in range(k):
                lu[c, j], lu[pivot, j] = lu[pivot, j], lu[c, j]
        for r in range(c + 1, k):
            lu[r, c] /= lu[c, c]
            multiplier = lu[r, c]
            if multiplier != 0.0:
                for j in range(c + 1, k):
                    lu[r, j] -= multiplier * lu[c, j]
    return True


def _lu_apply_py(lu, pivots, vector):
    """vector ← A⁻¹ vector in place by the factors of `_lu_factor_py`: the row swaps, then L (unit) and U."""
    k = lu.shape[0]
    for r in range(k):
        p = pivots[r]
        if p != r:
            vector[r], vector[p] = vector[p], vector[r]
    for r in range(k):
        total = vector[r]
        for j in range(r):
            total -= lu[r, j] * vector[j]
        vector[r] = total
    for r in range(k - 1, -1, -1):
        total = vector[r]
        for j in range(r + 1, k):
            total -= lu[r, j] * vector[j]
        vector[r] = total / lu[r, r]


def _dense_solve_py(matrix, rhs, out):
    """out = A⁻¹ rhs by an LU of the whole square A with partial pivoting (rhs, out: (n, m)): for segments whose
    inertia block is singular (a point mass: the URDF's zero inertia tensor), where the Schur complement's D⁻¹
    does not exist although A, held by its joints, is regular. False when A is singular to round-off: a pivot not
    above MASS_PIVOT_RATIO × the largest entry of its column in A (a point mass on a ball joint turns freely about
    the line through its mass: LAPACK's solve took that pivot, ≈ 1e-17, and gave v̇ ≈ 1e18 and an M ≈ 1e-18 for one
    of entries 0.58, with no error)."""
    n, m = rhs.shape
    lu = matrix.copy()
    scale = np.zeros(n)
    for r in range(n):
        for c in range(n):
            scale[c] = max(scale[c], abs(lu[r, c]))
    pivots = np.empty(n, dtype=np.int64)
    if not _LU_FACTOR(lu, pivots, scale):
        return False
    column = np.empty(n)
    for j in range(m):
        for r in range(n):
            column[r] = rhs[r, j]
        _LU_APPLY(lu, pivots, column)
        for r in range(n):
            out[r, j] = column[r]
    return True


#: the Schur solve's iterative refinement continues while a correction moved some segment acceleration by more than
#: this, relative to the largest of its column (the first correction is ≈ 1e-14 on ordinary trees: one step, as
#: before; each step multiplies the error by the same contraction, ≈ 1e-5 for 1e-6 kg beside 1e4 kg), after at most
#: REFINEMENT_STEPS corrections, and stops when a correction no longer shrinks
REFINEMENT_TOLERANCE = 1e-12
REFINEMENT_STEPS = 5


def _residual_py(matrix, rhs, out, residual):
    """residual = rhs − A out over the sparse A's non-zeros (rhs, out, residual: (n, m))."""
    n, m = rhs.shape
    for r in range(n):
        for c in range(m):
            residual[r, c] = rhs[r, c]
        for j in range(n):
            coefficient = matrix[r, j]
            if coefficient != 0.0:
                for c in range(m):
                    residual[r, c] -= coefficient * out[j, c]


def _schur_solve_py(matrix, n_segments, rhs, out):
    """out = A⁻¹ rhs for the link-segment matrix A (rhs, out: (n, m)) by its Schur complement
    (`_schur_factor_py`), refined against A itself (the residual of the sparse A costs little): one correction
    brings the mass matrix derived through M⁻¹ = C A⁻¹ B to LAPACK's full-pivoting accuracy and beyond (2e-13 →
    5e-15 relative to Pinocchio on arm7); more follow while a correction is above REFINEMENT_TOLERANCE — D is
    eliminated first without pivoting, and segment masses far apart (1e-6 kg beside 1e4 kg) leave the first solve
    1e-5 off, each correction gaining the same factor (1e-5 → 1e-10 → 3e-14). By the dense elimination of the
    whole A when a segment's inertia block is singular (`_dense_solve_py`). False when A is singular."""
    ok, factor = _SCHUR_FACTOR(matrix, n_segments)
    if not ok:
        return _DENSE_SOLVE(matrix, rhs, out)
    _SCHUR_APPLY(matrix, factor, rhs, out)
    n, m = rhs.shape
    n6 = 6 * n_segments
    residual = np.empty((n, m))
    correction = np.empty((n, m))
    last = np.inf
    for _ in range(REFINEMENT_STEPS):
        _RESIDUAL(matrix, rhs, out, residual)
        _SCHUR_APPLY(matrix, factor, residual, correction)
        for r in range(n):
            for c in range(m):
                out[r, c] += correction[r, c]
        size = 0.0   # the largest correction of a segment acceleration, relative to its column's largest
        for c in range(m):
            change, scale = 0.0, 0.0
            for r in range(n6):
                change = max(change, abs(correction[r, c]))
                scale = max(scale, abs(out[r, c]))
            if change > 0.0:
                size = max(size, change / scale)
        if not size > REFINEMENT_TOLERANCE or not size < 0.5 * last:   # (NaN: stop)
            break
        last = size
    return True


def _new_state_py(rotations, origins, n_segments):
    n_bodies = rotations.shape[0]
    return SegmentState(rotations, origins, np.empty((n_bodies, 3)), np.empty((n_bodies, 3)),
                        np.empty((n_segments, 3)), np.empty((n_segments, 3)), np.empty((n_segments, 3, 3)))


def _new_system_py(size, n_joints, n_constraints, n_tangent):
    return SystemArrays(np.empty((size, size)), np.empty(size), np.empty((size, n_tangent)),
                        np.empty((n_tangent, size)), np.empty(n_tangent), np.empty((n_constraints, 3)),
                        np.empty((n_joints, 3)), np.empty((n_joints, 3, 3)))


def _evaluate_py(tables, x, xd, options):
    """(SegmentState, SystemArrays) at the tree state (x, ẋ): tree kinematics (placements and body velocities, the
    loop rows' kernel), segment kinematics, assembly."""
    n, nj = tables.segment_body.shape[0], tables.joint_index.shape[0]
    n_tangent = xd.shape[0]
    n_constraints = 0
    for j in range(nj):
        n_constraints += tables.joint_index[j, 6]
    # bool(): not a literal, the signature the loop kernels and `tree_kinematics` compile (a literal True was a second)
    rot, pos, _, twist, _ = _TREE_KINEMATICS(tables.meta, tables.body, x, xd, n_tangent, bool(True))
    state = _NEW_STATE(rot, pos, n)
    arrays = _NEW_SYSTEM(6 * n + 3 * nj + n_constraints, nj, n_constraints, n_tangent)
    _SEGMENT_STATE(tables, twist, state)
    _ASSEMBLE(tables, state, xd, options, arrays)
    return state, arrays


def _mass_and_bias_py(tables, arrays, mass, bias):
    """Fill M and h (module docstring of `mass_and_bias`) from the assembled `arrays`; False: a singular system."""
    size, nv = arrays.inputs.shape
    n = tables.segment_body.shape[0]
    columns = np.empty((size, nv + 1))
    for r in range(size):
        columns[r, 0] = arrays.rhs[r]
        for c in range(nv):
            columns[r, c + 1] = arrays.inputs[r, c]
    solution = np.empty((size, nv + 1))
    if not _SCHUR_SOLVE(arrays.matrix, n, columns, solution):
        return False
    readout = arrays.readout
    # M⁻¹ = C A⁻¹ B and v̇₀ = C A⁻¹ b + d; C reads only the segment accelerations (the first 6N unknowns)
    inverse = np.empty((nv, nv))
    free_rates = np.empty(nv)
    for r in range(nv):
        for c in range(nv + 1):
            total = 0.0
            for j in range(6 * n):
                total += readout[r, j] * solution[j, c]
            if c == 0:
                free_rates[r] = total + arrays.readout_offset[r]
            else:
                inverse[r, c - 1] = total
    # M = (M⁻¹)⁻¹ by Gauss–Jordan with partial pivoting
    for r in range(nv):
        mass[r, r] = 1.0
    for c in range(nv):
        pivot = _PIVOT(inverse, c)
        if not abs(inverse[pivot, c]) > 0.0:
            return False
        for j in range(nv):
            inverse[c, j], inverse[pivot, j] = inverse[pivot, j], inverse[c, j]
            mass[c, j], mass[pivot, j] = mass[pivot, j], mass[c, j]
        scale = 1.0 / inverse[c, c]
        for j in range(nv):
            inverse[c, j] *= scale
            mass[c, j] *= scale
        for r in range(nv):
            if r != c and inverse[r, c] != 0.0:
                factor = inverse[r, c]
                for j in range(nv):
                    inverse[r, j] -= factor * inverse[c, j]
                    mass[r, j] -= factor * mass[c, j]
    for r in range(nv):
        for c in range(r + 1, nv):
            mean = 0.5 * (mass[r, c] + mass[c, r])
            mass[r, c] = mean
            mass[c, r] = mean
    for r in range(nv):
        total = 0.0
        for c in range(nv):
            total += mass[r, c] * free_rates[c]
        bias[r] = -total
    return True


def _forward_py(tables, arrays, tau, rates):
    """Fill v̇ under generalized forces τ from the assembled `arrays` (one Schur-complement solve); False: a
    singular system."""
    size, nv = arrays.inputs.shape
    rhs = np.empty((size, 1))
    for r in range(size):
        total = arrays.rhs[r]
        for c in range(nv):
            total += arrays.inputs[r, c] * tau[c]
        rhs[r, 0] = total
    z = np.empty((size, 1))
    if not _SCHUR_SOLVE(arrays.matrix, tables.segment_body.shape[0], rhs, z):
        return False
    for r in range(nv):
        total = arrays.readout_offset[r]
        for j in range(size):
            total += arrays.readout[r, j] * z[j, 0]
        rates[r] = total
    return True


_WANT_SYSTEM, _WANT_RATES, _WANT_MASS_AND_BIAS = 0, 1, 2   # what `_solve_py` computes after the assembly


def _solve_py(tables, x, xd, tau, options, wanted):
    """(ok, SegmentState, SystemArrays, M, h, v̇) at the tree state (x, ẋ): the assembly, then what `wanted` asks
    (`_WANT_RATES`: v̇ under τ; `_WANT_MASS_AND_BIAS`: M and h; `_WANT_SYSTEM`: nothing); ok False: a singular
    system. One compiled kernel for the three requests: a top-level kernel per request had LLVM optimise the
    linked assembly's code once per kernel (three kernels 18.6 s of compile CPU on arm7, this one 14.4 s)."""
    state, arrays = _EVALUATE(tables, x, xd, options)
    nv = xd.shape[0]
    mass, bias, rates = np.zeros((nv, nv)), np.zeros(nv), np.zeros(nv)
    ok = True
    if wanted == _WANT_RATES:
        ok = _FORWARD(tables, arrays, tau, rates)
    elif wanted == _WANT_MASS_AND_BIAS:
        ok = _MASS_AND_BIAS_FROM(tables, arrays, mass, bias)
    return ok, state, arrays, mass, bias, rates


# the kernels' callees (Python twins until `_kernel_bindings` binds the compiled ones when a caller compiles)
(_ADD_SKEW, _CROSS, _PIVOT, _TREE_KINEMATICS, _SEGMENT_STATE, _ASSEMBLE, _SCHUR_FACTOR, _SCHUR_APPLY,
 _DENSE_SOLVE, _SCHUR_SOLVE, _NEW_STATE, _NEW_SYSTEM, _EVALUATE, _FORWARD, _MASS_AND_BIAS_FROM, _RESIDUAL,
 _LU_FACTOR, _LU_APPLY) = (
    _add_skew_py, _cross_py, _pivot_py, tree_kinematics_run, _segment_state_py, _assemble_py, _schur_factor_py,
    _schur_apply_py, _dense_solve_py, _schur_solve_py, _new_state_py, _new_system_py, _evaluate_py, _forward_py,
    _mass_and_bias_py, _residual_py, _lu_factor_py, _lu_apply_py)


def _small_callees() -> dict:
    """The 3-vector and pivot helpers, compiled and called (not IR-inlined: `_assemble_py` calls `_CROSS` at twenty
    places, and numba's inlining would type and lower its body again at each, ≈ 6 s of compile)."""
    return {"_ADD_SKEW": jit.compiled(_add_skew_py), "_CROSS": jit.compiled(_cross_py),
            "_PIVOT": jit.compiled(_pivot_py)}


def _kernel_bindings() -> dict:
    """Compiled callees of the link-segment kernels, each compiled (or loaded from the disk cache) once."""
    small = _small_callees()
    lu = {"_LU_FACTOR": jit.compiled(_lu_factor_py, bind=small), "_LU_APPLY": jit.compiled(_lu_apply_py)}
    schur = {"_SCHUR_FACTOR": jit.compiled(_schur_factor_py, bind=lu), "_SCHUR_APPLY": jit.compiled(_schur_apply_py, bind=lu),
             "_DENSE_SOLVE": jit.compiled(_dense_solve_py, bind=lu), "_RESIDUAL": jit.compiled(_residual_py)}
    stages = {"_TREE_KINEMATICS": tree_kinematics_kernel(), "_SEGMENT_STATE": jit.compiled(_segment_state_py),
              "_ASSEMBLE": jit.compiled(_assemble_py, bind=small), "_NEW_STATE": jit.compiled(_new_state_py, inline=True),
              "_NEW_SYSTEM": jit.compiled(_new_system_py, inline=True)}
    # the short glue kernels are IR-inlined into their callers: each level of compiled calls would have LLVM
    # optimise the linked callees' code once more
    stages["_EVALUATE"] = jit.compiled(_evaluate_py, bind=stages, inline=True)
    solves = {**small, "_SCHUR_SOLVE": jit.compiled(_schur_solve_py, bind=schur, inline=True)}
    return {**stages, "_FORWARD": jit.compiled(_forward_py, bind=solves, inline=True),
            "_MASS_AND_BIAS_FROM": jit.compiled(_mass_and_bias_py, bind=solves, inline=True)}


assemble_kernel = jit.lazy(_assemble_py, bind=_small_callees)
solve_kernel = jit.lazy(_solve_py, bind=_kernel_bindings)


@dataclass
class System:
    """A z = b for one instant (3D, or reduced to the plane), with what is needed to read z back.

    `inputs` (n, nv): b changes by inputs · ΔQ for a change ΔQ of the generalized forces; v̇ = readout · z +
    readout_offset (3D layout; see `SystemArrays`)."""

    matrix: np.ndarray
    rhs: np.ndarray
    layout: Layout
    structure: Structure
    state: SegmentState
    joint_points: np.ndarray          # (J, 3) joint point (child side)
    constraint_axes: list             # per joint: (k, 3) array of constraint-torque directions n
    applied_moments: np.ndarray       # (J, 3) applied joint moment on the child (from the generalized forces)
    inputs: np.ndarray
    readout: np.ndarray
    readout_offset: np.ndarray
    planar_basis: tuple | None = None  # (rows, columns) selection of the planar reduction, or None
    free_wrenches: dict = field(default_factory=dict)   # URDF floating joint name → (force, moment), world

    def solve(self, rhs: np.ndarray | None = None) -> np.ndarray:
        """The unknowns z in 3D layout (planar systems are expanded back; out-of-plane parts zero)."""
        b = self.rhs if rhs is None else rhs
        z = _solve(self.matrix, b, self.structure.model_file)
        if self.planar_basis is None:
            return z
        return self.planar_basis[1] @ z


def _solve(matrix: np.ndarray, rhs: np.ndarray, file: str) -> np.ndarray:
    try:
        return np.linalg.solve(matrix, rhs)
    except np.linalg.LinAlgError:
        _singular(file)


def system_arrays(model, x: np.ndarray | None, xd: np.ndarray | None, *, gyroscopic: bool = True,
                  baumgarte: tuple[float, float] | None = None, state: SegmentState | None = None
                  ) -> tuple[SystemArrays, SegmentState]:
    """(the filled SystemArrays, the SegmentState) at the tree state (x, ẋ), or at a given segment `state`
    (absolute-coordinate integration: x, ẋ unused, the readout offset then assumes ẋ = 0)."""
    tables = structure(model).tables
    options = _options(gyroscopic, baumgarte)
    if state is None:
        _check_state(model, x, xd)
        _, state, arrays, _, _, _ = solve_kernel(tables, _floats(x), _floats(xd), _NO_FORCES, options,
                                                 _WANT_SYSTEM)
        return arrays, state
    # one array layout for the kernel (C-contiguous float64), whoever built the state
    state = SegmentState(*(_floats(a) for a in state))
    arrays = empty_system(model)
    assemble_kernel(tables, state, np.zeros(model.n_tangent), options, arrays)
    return arrays, state


def _options(gyroscopic: bool, baumgarte: tuple[float, float] | None) -> np.ndarray:
    if baumgarte is None:
        return _GYROSCOPIC if gyroscopic else _PRINTED
    return np.array([1.0 if gyroscopic else 0.0, 1.0, float(baumgarte[0]), float(baumgarte[1])])


_GYROSCOPIC, _PRINTED = np.array([1.0, 0.0, 0.0, 0.0]), np.array([0.0, 0.0, 0.0, 0.0])
_NO_FORCES = np.zeros(0)   # τ where `_solve_py` reads none


def _floats(a) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=float)


def assemble(model, x: np.ndarray, xd: np.ndarray, tau: np.ndarray | None = None, *, gyroscopic: bool = True,
             planar: Sequence[float] | None = None, baumgarte: tuple[float, float] | None = None,
             state: SegmentState | None = None) -> System:
    """The link-segment system at the tree state (x, ẋ) with generalized forces `tau` (model's nv, default 0).

    gyroscopic: include ω × Iω (False = the paper's printed equation (2)).
    planar: the plane's unit normal (e.g. (0, 1, 0)): the 2D system 3N + 2J (hinges ∥ normal, planar state).
    baumgarte: (α, β) adds −2α ċ − β² c of the joint-point gap and of U_a·U_b to the rows (stabilisation for
    integration in absolute segment coordinates; 0 at consistent states).
    state: a SegmentState of your own (x and ẋ are then not read: absolute-coordinate integration passes None).
    """
    s = structure(model)
    arrays, st = system_arrays(model, x, xd, gyroscopic=gyroscopic, baumgarte=baumgarte, state=state)
    tau = np.zeros(model.nv) if tau is None else np.asarray(tau, dtype=float)
    rhs = arrays.rhs + arrays.inputs @ tau
    tables = s.tables
    applied = np.zeros((len(s.joints), 3))
    axes, start = [], 0
    for j, joint in enumerate(s.joints):
        n_dof = tables.joint_index[j, 4]
        applied[j] = arrays.moment_map[j, :, :n_dof] @ tau[tables.dof_index[j, :n_dof, 1]]
        axes.append(arrays.normals[start:start + joint.n_constraints])
        start += joint.n_constraints
    free_wrenches = {}
    for fb in s.free_bodies:
        body = model.bodies[fb]
        if body.parent >= 0 or body.joint:
            r, k = st.rotations[fb], body.v_index
            free_wrenches[body.joint] = (r @ tau[k:k + 3], r @ tau[k + 3:k + 6])
    system = System(arrays.matrix, rhs, Layout(s.n_segments, len(s.joints), s.n_constraints), s, st,
                    arrays.joint_points, axes, applied, arrays.inputs, arrays.readout, arrays.readout_offset,
                    free_wrenches=free_wrenches)
    if planar is not None:
        _reduce_planar(system, np.asarray(planar, dtype=float), model)
    return system


def joint_axes(bodies, st: SegmentState, joint: SegmentJoint) -> np.ndarray:
    """World rotation axes of a link-segment joint's coordinates, one row each (hinge 1, two-axis 2, ball 3):
    the angular rows of each body's motion subspace, rotated to world axes."""
    return np.vstack([(st.rotations[k] @ bodies[k].motion_subspace[3:, :]).T for k in joint.bodies])


def perpendicular_pair(axis: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Two unit vectors completing `axis` to an orthonormal frame (fixed per joint: depends only on the axis)."""
    helper = np.eye(3)[int(np.argmin(np.abs(axis)))]
    w1 = np.cross(axis, helper)
    w1 /= np.linalg.norm(w1)
    return w1, np.cross(axis, w1)


def _reduce_planar(system: System, normal: np.ndarray, model) -> None:
    """Restrict the 3D system to the plane ⟂ `normal`: in-plane Newton/connection rows and forces, Euler about
    the normal, no constraint rows (3N + 2J). Hinge axes must be parallel to the normal."""
    normal = normal / np.linalg.norm(normal)
    s, lay = system.structure, system.layout
    for joint in s.joints:
        if joint.kind != "hinge":
            raise ModelError(f"joint {joint.name!r} is a {joint.kind} joint: a planar model has hinges only",
                             file=s.model_file, argument="planar")
        axis = system.state.rotations[joint.bodies[0]] @ model.bodies[joint.bodies[0]].axis
        if np.linalg.norm(np.cross(axis, normal)) > 1e-9:
            raise ModelError(f"hinge {joint.name!r} is not perpendicular to the plane", file=s.model_file,
                             argument="planar", expected="hinge axes parallel to the plane's normal")
    e1 = perpendicular_pair(normal)[0]
    e2 = np.cross(normal, e1)
    plane = np.column_stack([e1, e2])  # 3×2
    n, nj = s.n_segments, len(s.joints)
    select = np.zeros((3 * n + 2 * nj, lay.size))
    expand = np.zeros((lay.size, 3 * n + 2 * nj))
    k = 0
    for i in range(n):  # Newton rows and COM accelerations: in-plane
        select[k:k + 2, 3 * i:3 * i + 3] = plane.T
        expand[lay.a + 3 * i:lay.a + 3 * i + 3, k:k + 2] = plane
        k += 2
    for i in range(n):  # Euler row and angular acceleration: about the normal
        select[k, lay.alpha + 3 * i:lay.alpha + 3 * i + 3] = normal
        expand[lay.alpha + 3 * i:lay.alpha + 3 * i + 3, k] = normal
        k += 1
    for j in range(nj):  # connection rows and joint forces: in-plane
        select[k:k + 2, lay.force + 3 * j:lay.force + 3 * j + 3] = plane.T
        expand[lay.force + 3 * j:lay.force + 3 * j + 3, k:k + 2] = plane
        k += 2
    system.matrix = select @ system.matrix @ expand
    system.rhs = select @ system.rhs
    system.planar_basis = (select, expand)


# ---------------------------------------------------------------------------------------------- reading z back
@dataclass(frozen=True)
class Reaction:
    """What the parent exerts on the child at the joint origin, world axes: force (N), moment (N·m, applied +
    constraint), and the constraint torques λ (N·m) along `constraint_axes` (unit rows, world)."""

    force: np.ndarray
    moment: np.ndarray
    constraint_torques: np.ndarray = field(default_factory=lambda: np.zeros(0))
    constraint_axes: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))

    #: where the force and moment act and in which axes
    frame = "at the joint origin, world axes"

    def __repr__(self) -> str:
        def vector(value) -> str:
            return np.array2string(np.asarray(value, dtype=float), precision=4, suppress_small=True)
        text = f"Reaction(force={vector(self.force)} N, moment={vector(self.moment)} N·m, {self.frame}"
        if len(self.constraint_torques):
            text += f"; constraint_torques={vector(self.constraint_torques)} N·m"
        return text + ")"


def reactions_from_solution(system: System, z: np.ndarray) -> dict[str, Reaction]:
    """Joint reactions keyed by link-segment joint name, and also by every grouped URDF joint name. A URDF floating
    joint transmits exactly its generalized wrench (world axes at the child origin); the floating base has none."""
    out: dict[str, Reaction] = {}
    for fb, wrench in system.free_wrenches.items():
        out[fb] = Reaction(wrench[0].copy(), wrench[1].copy())
    lay, cons = system.layout, 0
    for j, joint in enumerate(system.structure.joints):
        force = z[lay.force + 3 * j:lay.force + 3 * j + 3].copy()
        normals = system.constraint_axes[j]
        lam = z[lay.torque + cons:lay.torque + cons + len(normals)].copy()
        cons += len(normals)
        moment = system.applied_moments[j] + (normals.T @ lam if len(lam) else 0.0)
        unit = normals / np.maximum(np.linalg.norm(normals, axis=1, keepdims=True), 1e-300) if len(lam) else normals
        reaction = Reaction(force, np.asarray(moment, dtype=float),
                            lam * np.linalg.norm(normals, axis=1) if len(lam) else lam, unit)
        out[joint.name] = reaction
        for name in joint.urdf_joints:
            out[name] = reaction
    return out


def accelerations_from_solution(system: System, z: np.ndarray) -> np.ndarray:
    """The model's v̇ (tree tangent order) from the unknowns z (3D layout) at a consistent joint state: the
    system's affine readout (θ̈ = (E Eᵀ)⁻¹ E (ω̇_c − ω̇_p − Σ ω_before × e θ̇) per joint; the relative spatial
    acceleration in the child frame per free joint)."""
    return system.readout @ z + system.readout_offset


# ---------------------------------------------------------------------------------------------- public functions
def _tree_state(model, q, v, t: float):
    if model.coordinate_map.kind != "identity":
        structure(model)  # raises the precise ModelError for joint functions / loops
    with np.errstate(invalid="ignore", divide="ignore"):   # (a zero quaternion: reported below, not warned)
        x, xd, _, _ = model.joint_state(q, v, t)
    _check_state(model, x, xd)
    return x, xd


def _check_state(model, x, xd) -> None:
    """SolverError for a tree state the kernels cannot take (they would divide by a zero length: a bare
    ZeroDivisionError): a non-finite entry, or a zero quaternion or (cos, sin) pair."""
    from biobullet.model.tree import FREE, SPHERICAL
    finite = np.all(np.isfinite(x)) and np.all(np.isfinite(xd))
    if finite:   # (every quaternion and planar pair — the compiled model's blocks, not rebuilt per call: the tree
        # state leads with them in q's layout)
        for kind, k, _ in model.compiled.blocks:
            start, size = (k + 3, 4) if kind == FREE else (k, 4) if kind == SPHERICAL else (k + 2, 2)
            finite = finite and np.linalg.norm(x[start:start + size]) > 0.0
    if not finite:
        raise SolverError(f"{model.file}: the link-segment formulation cannot evaluate this state: q or v is not "
                          "finite, or a quaternion or planar (cos, sin) pair of q is zero")


def solve(model, q, v, tau=None, t: float = 0.0, *, gyroscopic: bool = True, planar=None):
    """(v̇, reactions, system, z): the link-segment forward solve at (q, v) with generalized forces `tau`."""
    x, xd = _tree_state(model, q, v, t)
    tau = None if tau is None else model.checked("tau", tau, model.nv)
    system = assemble(model, x, xd, tau, gyroscopic=gyroscopic, planar=planar)
    try:
        z = system.solve()
    except SolverError:
        _singular(model.file, model, x)
    accelerations = accelerations_from_solution(system, z)
    if not (np.all(np.isfinite(z)) and np.all(np.isfinite(accelerations))):   # (gimbal lock: NaN readout)
        _singular(model.file, model, x)
    return accelerations, reactions_from_solution(system, z), system, z


def forward_dynamics(model, q, v, tau=None, t: float = 0.0, *, gyroscopic: bool = True) -> np.ndarray:
    """v̇ by the link-segment solve (one Schur-complement solve of the square system, `_forward_py`)."""
    x, xd = _tree_state(model, q, v, t)
    tau = np.zeros(model.nv) if tau is None else _floats(model.checked("tau", tau, model.nv))
    return _rates(model, x, xd, tau, _options(gyroscopic, None))


def _rates(model, x, xd, tau, options) -> np.ndarray:
    ok, _, _, _, _, rates = solve_kernel(structure(model).tables, _floats(x), _floats(xd), tau, options, _WANT_RATES)
    if not ok or not np.all(np.isfinite(rates)):
        _singular(model.file, model, x)
    return rates


def _singular(file: str, model=None, x=None):
    """SolverError: the system is singular. Given the model and the tree state, the joint that moves no mass is
    named where there is one — the reduced solve's own test (`spatial.dense.massless_coordinate` on the tree's M
    and `CompiledModel.mass_floor_root`), run here on the error path only."""
    if model is not None and x is not None and np.all(np.isfinite(x)):
        from biobullet.algorithms.vectorized import mass_matrix_and_bias
        mass = mass_matrix_and_bias(model, x)[0]   # (no joint functions or loops here: the tree's M is M)
        index = massless_coordinate(mass, model.compiled.mass_floor_root, None)
        if index is not None:
            raise SolverError(f"{file}: the link-segment system is singular to round-off: "
                              + massless_text(model.velocity_names, index, mass[index, index],
                                              coordinate_floor(model.compiled.mass_floor_root, None, index)))
    raise SolverError(f"{file}: the link-segment system is singular to round-off (a direction that moves no mass — "
                      "a point mass on its hinge's axis or on a ball joint turns freely about that line —, a hinge at "
                      "an inconsistent state, or a ball joint built from three axes at gimbal lock)")


def mass_and_bias(model, q, v, t: float = 0.0, *, gyroscopic: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """(M, h) derived from the square system A z = b + B Q, v̇ = C z + d (`SystemArrays`): one Schur-complement
    factorisation of A with nv + 1 right-hand sides gives M⁻¹ = C A⁻¹ B and the zero-force accelerations
    v̇₀ = C A⁻¹ b + d; M = (M⁻¹)⁻¹ (symmetrised), h = −M v̇₀ (`_mass_and_bias_py`)."""
    x, xd = _tree_state(model, q, v, t)
    ok, _, _, mass, bias, _ = solve_kernel(structure(model).tables, _floats(x), _floats(xd), _NO_FORCES,
                                           _options(gyroscopic, None), _WANT_MASS_AND_BIAS)
    if not ok or not (np.all(np.isfinite(mass)) and np.all(np.isfinite(bias))):
        _singular(model.file, model, x)
    model.derived[_KEPT_MASS] = (_floats(x).tobytes(), gyroscopic, mass.copy())
    return mass, bias


#: `Model.derived`'s key of the last `mass_and_bias`'s (x as bytes, gyroscopic, M): M depends on x only, so the
#: bias forces at that x (`model.mass_matrix(q)` then `bias_forces(q, v)`) are −M v̇(Q = 0), one solve of the
#: factorised system for v̇ instead of the nv + 1 right-hand sides and the inversion of M⁻¹ again
_KEPT_MASS = "biobullet.dynamics.link_segment.mass"


def bias_forces(model, q, v, t: float = 0.0, *, gyroscopic: bool = True) -> np.ndarray:
    """h = −M v̇(Q = 0) (`mass_and_bias`), with the M of the last `mass_and_bias` at this configuration."""
    kept = model.derived.get(_KEPT_MASS)
    x, xd = _tree_state(model, q, v, t)
    if kept is None or kept[1] != gyroscopic or kept[0] != _floats(x).tobytes():
        return mass_and_bias(model, q, v, t, gyroscopic=gyroscopic)[1]
    return -(kept[2] @ _rates(model, x, xd, np.zeros(model.nv), _options(gyroscopic, None)))


def inverse_dynamics(model, q, v, vdot, t: float = 0.0, *, gyroscopic: bool = True):
    """(τ, reactions): generalized forces (model's nv) that produce v̇, by the link-segment equations.

    The motion fixes every a_i, ω̇_i; the connecting and constraint-axis rows then hold identically and the 6N
    Newton–Euler rows are a square system in the joint forces, constraint torques and the nv generalized forces
    (6N = Σ_joints (3 + C_j + dof_j) + 6·floating)."""
    x, xd = _tree_state(model, q, v, t)
    xdd = np.asarray(vdot, dtype=float)
    system = assemble(model, x, xd, None, gyroscopic=gyroscopic)
    s, lay = system.structure, system.layout
    alpha, acc = body_accelerations(model, x, xd, xdd)
    z = np.zeros(lay.size)
    st = system.state
    for i, b in enumerate(s.segments):
        arm = st.com[i] - st.origins[b]
        w = st.omega[b]
        z[lay.a + 3 * i:lay.a + 3 * i + 3] = acc[b] + np.cross(alpha[b], arm) + np.cross(w, np.cross(w, arm))
        z[lay.alpha + 3 * i:lay.alpha + 3 * i + 3] = alpha[b]
    rows = slice(0, 6 * s.n_segments)
    known = system.rhs[rows] - system.matrix[rows, :lay.force] @ z[:lay.force]
    unknown = _solve(np.hstack([system.matrix[rows, lay.force:], -system.inputs[rows]]), known, model.file)
    if not np.all(np.isfinite(unknown)):   # (gimbal lock: NaN inputs)
        _singular(model.file, model, x)
    z[lay.force:] = unknown[:lay.size - lay.force]
    tau = unknown[lay.size - lay.force:]
    system = assemble(model, x, xd, tau, gyroscopic=gyroscopic, state=st)
    return tau, reactions_from_solution(system, z)


def system_size(model, *, planar=None) -> int:
    """6N + 3J + C (3D) or 3N + 2J (planar) for this model's link-segment system."""
    return structure(model).size(planar is not None)


@register_formulation
class LinkSegmentFormulation(Formulation):
    """Paper 001's link-segment system as a formulation.

    `forward_dynamics` (used by `Model.forward_dynamics(..., formulation="link_segment")` and the reference
    engine's `accelerations_from_state` hook) solves the square system directly. M and h are DERIVED through the
    same factorised system (`mass_and_bias`): M⁻¹ = C A⁻¹ B, h = −M v̇(Q = 0); one LU, nv + 1 right-hand sides.
    """

    name: ClassVar[str] = "link_segment"
    description: ClassVar[str] = "paper 001: per-segment Newton–Euler + connection + constraint-axis rows"

    def supports(self, model) -> bool:
        """False for models the link-segment system does not describe (prismatic joints, joint functions, loops,
        massless links outside a <segment_joint>); using it on them raises the precise ModelError."""
        try:
            structure(model)
        except ModelError:
            return False
        return True

    def forward_dynamics(self, model, q, v, tau=None, t: float = 0.0) -> np.ndarray:
        return forward_dynamics(model, q, v, tau, t)

    def accelerations_from_state(self, model, x, xd, gradient, gamma, generalized) -> np.ndarray:
        if gradient is not None or gamma is not None:
            structure(model)
        tau = np.zeros(model.nv) if generalized is None else _floats(generalized)
        return _rates(model, x, xd, tau, _GYROSCOPIC)

    def mass_and_bias(self, model, q, v, t: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
        return mass_and_bias(model, q, v, t)

    def mass_matrix(self, model, q, t: float = 0.0) -> np.ndarray:
        return mass_and_bias(model, q, np.zeros(model.nv), t)[0]

    def bias_forces(self, model, q, v, t: float = 0.0) -> np.ndarray:
        return bias_forces(model, q, v, t)


# the public surface (the kernels' argument bundles SegmentTables, SystemArrays, SchurFactor and Layout are this
# module's own business; SegmentState, the absolute state, is what `segment_state` returns)
__all__ = ["SegmentJoint", "Structure", "structure", "System", "system_arrays", "assemble", "joint_axes",
           "perpendicular_pair", "Reaction", "reactions_from_solution", "accelerations_from_solution", "solve",
           "forward_dynamics", "mass_and_bias", "bias_forces", "inverse_dynamics", "system_size",
           "LinkSegmentFormulation", "body_kinematics", "body_accelerations", "segment_state", "SegmentState", "empty_system"]
