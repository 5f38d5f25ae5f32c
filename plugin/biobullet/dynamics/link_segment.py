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
"""
from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from typing import ClassVar, Sequence

import numpy as np

from biobullet.core.errors import ModelError, SolverError, did_you_mean
from biobullet.dynamics.formulation import Formulation, register_formulation
from biobullet.spatial.algebra import joint_placement
from biobullet.spatial.rotations import skew

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
    segment_of_body: dict = field(default_factory=dict)
    free_bodies: tuple[int, ...] = ()    # bodies moved by a free joint (floating base, URDF floating joints)

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


_structures: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def structure(model) -> Structure:
    """The (cached) link-segment structure of `model`; ModelError for what the formulation does not support."""
    cached = _structures.get(model)
    if cached is None:
        cached = _structures[model] = _build_structure(model)
    return cached


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
                     model.floating_base, sum(j.n_constraints for j in joints), seg_of_body, free)


def _group_axes_reference(bodies, chain) -> list[np.ndarray]:
    """Axes of a group at zero angles, in the first joint's frame."""
    rotation, axes = np.eye(3), []
    for k, b in enumerate(chain):
        if k:
            rotation = rotation @ bodies[b].rotation
        axes.append(rotation @ bodies[b].axis)
    return axes


# ---------------------------------------------------------------------------------------------- kinematics
@dataclass
class SegmentState:
    """World kinematics of every model body and every segment (positions m, velocities m/s, rad/s)."""

    rotations: np.ndarray     # (n_bodies, 3, 3) body frame → world
    origins: np.ndarray       # (n_bodies, 3) body-frame origin (the joint point of the body's joint)
    omega: np.ndarray         # (n_bodies, 3) angular velocity, world axes
    origin_velocity: np.ndarray  # (n_bodies, 3)
    com: np.ndarray           # (N, 3) segment COM
    com_velocity: np.ndarray  # (N, 3)
    inertia: np.ndarray       # (N, 3, 3) COM inertia, world axes


def body_kinematics(model, x: np.ndarray, xd: np.ndarray) -> tuple[np.ndarray, ...]:
    """(R, p, ω, ṗ) of every body in world axes from the tree configuration x and velocity ẋ.

    Generic in the joint kind: the joint velocity S ẋ_j ([linear; angular] in the child frame, Pinocchio's
    convention, S constant there) adds u = R S_lin ẋ_j to the origin velocity and w = R S_ang ẋ_j to ω."""
    n = len(model.bodies)
    rot, pos = np.empty((n, 3, 3)), np.empty((n, 3))
    omega, vel = np.empty((n, 3)), np.empty((n, 3))
    for body in model.bodies:
        i = body.index
        local_r, local_p = joint_placement(body, x)
        if body.parent < 0:
            pr, pp, pw, pv = np.eye(3), np.zeros(3), np.zeros(3), np.zeros(3)
        else:
            pr, pp, pw, pv = rot[body.parent], pos[body.parent], omega[body.parent], vel[body.parent]
        rot[i] = pr @ local_r
        pos[i] = pp + pr @ local_p
        relative = body.motion_subspace @ xd[body.v_index:body.v_index + body.nv]
        omega[i] = pw + rot[i] @ relative[3:]
        vel[i] = pv + np.cross(pw, pos[i] - pp) + rot[i] @ relative[:3]
    return rot, pos, omega, vel


def body_accelerations(model, x: np.ndarray, xd: np.ndarray, xdd: np.ndarray, kinematics=None):
    """(ω̇, p̈) of every body origin, world axes, for the tree state (x, ẋ, ẍ) (any joint kind):
    ω̇ = ω̇_p + ω_p × w + R S_ang ẍ_j,  p̈ = p̈_p + ω̇_p × d + ω_p × (ω_p × d) + (ω_p + ω) × u + R S_lin ẍ_j."""
    rot, pos, omega, vel = kinematics if kinematics is not None else body_kinematics(model, x, xd)
    n = len(model.bodies)
    alpha, acc = np.zeros((n, 3)), np.zeros((n, 3))
    for body in model.bodies:
        i = body.index
        if body.parent >= 0:
            p = body.parent
            wp, ap, alp, arm = omega[p], acc[p], alpha[p], pos[i] - pos[p]
        else:
            wp, ap, alp, arm = np.zeros(3), np.zeros(3), np.zeros(3), pos[i]
        s = body.motion_subspace
        k = slice(body.v_index, body.v_index + body.nv)
        rate, accel = s @ xd[k], s @ xdd[k]
        w_rel, u_rel = rot[i] @ rate[3:], rot[i] @ rate[:3]
        alpha[i] = alp + np.cross(wp, w_rel) + rot[i] @ accel[3:]
        acc[i] = (ap + np.cross(alp, arm) + np.cross(wp, np.cross(wp, arm)) + np.cross(wp + omega[i], u_rel)
                  + rot[i] @ accel[:3])
    return alpha, acc


def segment_state(model, x: np.ndarray, xd: np.ndarray) -> SegmentState:
    s = structure(model)
    rot, pos, omega, vel = body_kinematics(model, x, xd)
    com, com_v, inertia = [], [], []
    for b in s.segments:
        body = model.bodies[b]
        arm = rot[b] @ body.com
        com.append(pos[b] + arm)
        com_v.append(vel[b] + np.cross(omega[b], arm))
        inertia.append(rot[b] @ body.inertia_com @ rot[b].T)
    return SegmentState(rot, pos, omega, vel, np.array(com), np.array(com_v), np.array(inertia))


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


@dataclass
class System:
    """A z = b for one instant (3D, or reduced to the plane), with what is needed to read z back.

    `inputs(spec)` gives the right-hand-side column of an input (a generalized force slot, a point force, a
    moment): b changes by that column per unit of the input — the strategies' Δ columns."""

    matrix: np.ndarray
    rhs: np.ndarray
    layout: Layout
    structure: Structure
    state: SegmentState
    joint_points: np.ndarray          # (J, 3) joint point (child side)
    constraint_axes: list             # per joint: (k, 3) array of constraint-torque directions n
    applied_moments: np.ndarray       # (J, 3) applied joint moment on the child (from the generalized forces)
    planar_basis: tuple | None = None  # (rows, columns) selection of the planar reduction, or None
    free_wrenches: dict = field(default_factory=dict)   # URDF floating joint name → (force, moment), world

    def solve(self, rhs: np.ndarray | None = None) -> np.ndarray:
        """The unknowns z in 3D layout (planar systems are expanded back; out-of-plane parts zero)."""
        b = self.rhs if rhs is None else rhs
        try:
            z = np.linalg.solve(self.matrix, b)
        except np.linalg.LinAlgError:
            raise SolverError(f"{self.structure.model_file}: the link-segment system is singular (a hinge at "
                              "an inconsistent state, or a ball joint built from three axes at gimbal lock)") from None
        if self.planar_basis is None:
            return z
        return self.planar_basis[1] @ z


def assemble(model, x: np.ndarray, xd: np.ndarray, tau: np.ndarray | None = None, *, gyroscopic: bool = True,
             planar: Sequence[float] | None = None, baumgarte: tuple[float, float] | None = None,
             state: SegmentState | None = None) -> System:
    """The link-segment system at the tree state (x, ẋ) with generalized forces `tau` (model's nv, default 0).

    gyroscopic: include ω × Iω (False = the paper's printed equation (2)).
    planar: the plane's unit normal (e.g. (0, 1, 0)): the 2D system 3N + 2J (hinges ∥ normal, planar state).
    baumgarte: (α, β) adds −2α ċ − β² c of the joint-point gap and of U_a·U_b to the rows (stabilisation for
    integration in absolute segment coordinates; 0 at consistent states).
    """
    s = structure(model)
    st = state if state is not None else segment_state(model, x, xd)
    # (with `state` given, x and ẋ are not read: absolute-coordinate integration passes None)
    n, nj = s.n_segments, len(s.joints)
    lay = Layout(n, nj, s.n_constraints)
    A = np.zeros((lay.size, lay.size))
    b = np.zeros(lay.size)
    g = model.gravity
    tau = np.zeros(model.nv) if tau is None else np.asarray(tau, dtype=float)
    rows_newton, rows_euler = 0, 3 * n
    row_conn, row_cons = 6 * n, 6 * n + 3 * nj
    bodies = model.bodies
    for i, body_index in enumerate(s.segments):
        m = bodies[body_index].mass
        A[3 * i:3 * i + 3, lay.a + 3 * i:lay.a + 3 * i + 3] = m * np.eye(3)
        b[3 * i:3 * i + 3] = m * g
        inertia, w = st.inertia[i], st.omega[body_index]
        A[rows_euler + 3 * i:rows_euler + 3 * i + 3, lay.alpha + 3 * i:lay.alpha + 3 * i + 3] = inertia
        if gyroscopic:
            b[rows_euler + 3 * i:rows_euler + 3 * i + 3] = -np.cross(w, inertia @ w)
    free_wrenches: dict = {}
    for fb in s.free_bodies:
        # a free joint's generalized force: wrench in the child frame at the child origin (Pinocchio), on the child
        # segment and, as reaction, on its parent segment (none for the floating base)
        r, k = st.rotations[fb], bodies[fb].v_index
        f, m_ = r @ tau[k:k + 3], r @ tau[k + 3:k + 6]
        i = s.segment_of_body[fb]
        b[3 * i:3 * i + 3] += f
        b[rows_euler + 3 * i:rows_euler + 3 * i + 3] += m_ + np.cross(st.origins[fb] - st.com[i], f)
        if bodies[fb].parent >= 0 or bodies[fb].joint:
            free_wrenches[bodies[fb].joint] = (f, m_)
        if bodies[fb].parent >= 0:
            j = s.segment_of_body[bodies[fb].parent]
            b[3 * j:3 * j + 3] -= f
            b[rows_euler + 3 * j:rows_euler + 3 * j + 3] -= m_ + np.cross(st.origins[fb] - st.com[j], f)
    joint_points = np.zeros((nj, 3))
    applied = np.zeros((nj, 3))
    axes_list: list = []
    cons = 0
    for j, joint in enumerate(s.joints):
        c, p = joint.child, joint.parent
        first = bodies[joint.bodies[0]]
        cb = s.segments[c]
        point_c = st.origins[cb]
        joint_points[j] = point_c
        if p >= 0:
            pb = s.segments[p]
            point_p = st.origins[pb] + st.rotations[pb] @ first.translation
        else:
            point_p = first.translation.copy()
        fcol = lay.force + 3 * j
        # joint force F (parent on child): + on the child, − on the parent; moments about each COM
        rc = point_c - st.com[c]
        A[3 * c:3 * c + 3, fcol:fcol + 3] -= np.eye(3)
        A[rows_euler + 3 * c:rows_euler + 3 * c + 3, fcol:fcol + 3] -= skew(rc)
        if p >= 0:
            rp = point_p - st.com[p]
            A[3 * p:3 * p + 3, fcol:fcol + 3] += np.eye(3)
            A[rows_euler + 3 * p:rows_euler + 3 * p + 3, fcol:fcol + 3] += skew(rp)
        # applied joint moment from the generalized forces: M = E (EᵀE)⁻¹ Q (in the span of the joint's axes)
        axes = joint_axes(bodies, st, joint)   # (dof, 3) world rotation axes of the joint's coordinates
        q_group = np.concatenate([tau[bodies[k].v_index:bodies[k].v_index + bodies[k].nv] for k in joint.bodies])
        moment = axes.T @ np.linalg.solve(axes @ axes.T, q_group)
        applied[j] = moment
        b[rows_euler + 3 * c:rows_euler + 3 * c + 3] += moment
        if p >= 0:
            b[rows_euler + 3 * p:rows_euler + 3 * p + 3] -= moment
        # connecting equation (3): a_c − r_c× ω̇_c − a_p + r_p× ω̇_p = ω_p×(ω_p×r_p) − ω_c×(ω_c×r_c)
        r0 = row_conn + 3 * j
        wc = st.omega[cb]
        A[r0:r0 + 3, lay.a + 3 * c:lay.a + 3 * c + 3] = np.eye(3)
        A[r0:r0 + 3, lay.alpha + 3 * c:lay.alpha + 3 * c + 3] = -skew(rc)
        rhs = -np.cross(wc, np.cross(wc, rc))
        gap, gap_rate = point_c - point_p, st.com_velocity[c] + np.cross(wc, rc)
        if p >= 0:
            wp = st.omega[pb]
            A[r0:r0 + 3, lay.a + 3 * p:lay.a + 3 * p + 3] = -np.eye(3)
            A[r0:r0 + 3, lay.alpha + 3 * p:lay.alpha + 3 * p + 3] = skew(rp)
            rhs = rhs + np.cross(wp, np.cross(wp, rp))
            gap_rate = gap_rate - (st.com_velocity[p] + np.cross(wp, rp))
        if baumgarte is not None:
            rhs = rhs - 2.0 * baumgarte[0] * gap_rate - baumgarte[1] ** 2 * gap
        b[r0:r0 + 3] = rhs
        # constraint-axis rows (4): U_a fixed in the parent (the first axis), U_b fixed in the child
        normals = []
        if joint.n_constraints:
            wp = st.omega[pb] if p >= 0 else np.zeros(3)
            parent_rotation = st.rotations[pb] if p >= 0 else np.eye(3)
            u_a = parent_rotation @ first.rotation @ first.axis
            child = bodies[joint.bodies[-1]]
            if joint.kind == "hinge":
                w1, w2 = _perpendicular_pair(child.axis)
                u_bs = [st.rotations[cb] @ w1, st.rotations[cb] @ w2]
            else:
                u_bs = [st.rotations[cb] @ child.axis]
            for u_b in u_bs:
                normal = np.cross(u_a, u_b)
                normals.append(normal)
                row = row_cons + cons
                col = lay.torque + cons
                A[row, lay.alpha + 3 * c:lay.alpha + 3 * c + 3] = normal
                if p >= 0:
                    A[row, lay.alpha + 3 * p:lay.alpha + 3 * p + 3] = -normal
                ua_dot, ub_dot = np.cross(wp, u_a), np.cross(wc, u_b)
                value = (np.cross(wp, ua_dot) @ u_b + u_a @ np.cross(wc, ub_dot) + 2.0 * ua_dot @ ub_dot)
                if baumgarte is not None:
                    # c̈ + 2α ċ + β² c = 0 with c̈ = n·(ω̇_p − ω̇_c) + value: the feedback adds to the right side
                    value += 2.0 * baumgarte[0] * (ua_dot @ u_b + u_a @ ub_dot) + baumgarte[1] ** 2 * (u_a @ u_b)
                b[row] = value
                # the constraint torque λ n acts on the child, −λ n on the parent
                A[rows_euler + 3 * c:rows_euler + 3 * c + 3, col] -= normal
                if p >= 0:
                    A[rows_euler + 3 * p:rows_euler + 3 * p + 3, col] += normal
                cons += 1
        axes_list.append(np.array(normals).reshape(-1, 3))
    system = System(A, b, lay, s, st, joint_points, axes_list, applied, free_wrenches=free_wrenches)
    if planar is not None:
        _reduce_planar(system, np.asarray(planar, dtype=float), model)
    return system


def joint_axes(bodies, st: SegmentState, joint: SegmentJoint) -> np.ndarray:
    """World rotation axes of a link-segment joint's coordinates, one row each (hinge 1, two-axis 2, ball 3):
    the angular rows of each body's motion subspace, rotated to world axes."""
    return np.vstack([(st.rotations[k] @ bodies[k].motion_subspace[3:, :]).T for k in joint.bodies])


def _perpendicular_pair(axis: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
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
    e1 = _perpendicular_pair(normal)[0]
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


def accelerations_from_solution(model, system: System, z: np.ndarray, xd: np.ndarray) -> np.ndarray:
    """The model's v̇ (tree tangent order) from the segment accelerations (consistent joint state)."""
    s, st, lay = system.structure, system.state, system.layout
    bodies = model.bodies
    out = np.zeros(model.n_tangent)
    alpha = z[lay.alpha:lay.alpha + 3 * s.n_segments].reshape(-1, 3)
    acc = z[lay.a:lay.a + 3 * s.n_segments].reshape(-1, 3)
    for fb in s.free_bodies:   # free joints: the relative spatial acceleration in the child frame (S = 1)
        body = bodies[fb]
        i, r, w = s.segment_of_body[fb], st.rotations[fb], st.omega[fb]
        arm = st.com[i] - st.origins[fb]
        origin_acc = acc[i] - np.cross(alpha[i], arm) - np.cross(w, np.cross(w, arm))
        k = body.v_index
        u_rel = r @ xd[k:k + 3]
        if body.parent >= 0:
            j, pb = s.segment_of_body[body.parent], body.parent
            wp, arm_p = st.omega[pb], st.com[j] - st.origins[pb]
            d = st.origins[fb] - st.origins[pb]
            parent_origin = acc[j] - np.cross(alpha[j], arm_p) - np.cross(wp, np.cross(wp, arm_p))
            point = parent_origin + np.cross(alpha[j], d) + np.cross(wp, np.cross(wp, d))
            alpha_p = alpha[j]
        else:
            wp, point, alpha_p = np.zeros(3), np.zeros(3), np.zeros(3)
        w_rel = w - wp
        out[k:k + 3] = r.T @ (origin_acc - point - np.cross(wp + w, u_rel))
        out[k + 3:k + 6] = r.T @ (alpha[i] - alpha_p - np.cross(wp, w_rel))
    for joint in s.joints:
        alpha_p = alpha[joint.parent] if joint.parent >= 0 else np.zeros(3)
        e = joint_axes(bodies, st, joint)
        drift, slots = np.zeros(3), []
        for k in joint.bodies:
            body = bodies[k]
            w_before = st.omega[body.parent] if body.parent >= 0 else np.zeros(3)
            for c in range(body.nv):   # ω̇_c − ω̇_p = Σ e ẍ + ω_before × e ẋ (S constant in the child frame)
                drift += np.cross(w_before, st.rotations[k] @ body.motion_subspace[3:, c]) * xd[body.v_index + c]
                slots.append(body.v_index + c)
        theta_dd = np.linalg.solve(e @ e.T, e @ (alpha[joint.child] - alpha_p - drift))
        out[slots] = theta_dd
    return out


# ---------------------------------------------------------------------------------------------- public functions
def _tree_state(model, q, v, t: float):
    if model.coordinate_map.kind != "identity":
        structure(model)  # raises the precise ModelError for joint functions / loops
    x, xd, _, _ = model.joint_state(q, v, t)
    return x, xd


def solve(model, q, v, tau=None, t: float = 0.0, *, gyroscopic: bool = True, planar=None):
    """(v̇, reactions, system, z): the link-segment forward solve at (q, v) with generalized forces `tau`."""
    x, xd = _tree_state(model, q, v, t)
    tau = None if tau is None else model.checked("tau", tau, model.nv)
    system = assemble(model, x, xd, tau, gyroscopic=gyroscopic, planar=planar)
    z = system.solve()
    return accelerations_from_solution(model, system, z, xd), reactions_from_solution(system, z), system, z


def forward_dynamics(model, q, v, tau=None, t: float = 0.0, *, gyroscopic: bool = True) -> np.ndarray:
    """v̇ by the link-segment solve (one (6N+3J+C)² dense solve)."""
    return solve(model, q, v, tau, t, gyroscopic=gyroscopic)[0]


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
    columns = [system.matrix[rows, lay.force:]]
    zero = assemble(model, x, xd, None, gyroscopic=gyroscopic, state=st).rhs[rows]
    for k in range(model.nv):
        unit = np.zeros(model.nv)
        unit[k] = 1.0
        columns.append(-(assemble(model, x, xd, unit, gyroscopic=gyroscopic, state=st).rhs[rows] - zero)[:, None])
    unknown = np.linalg.solve(np.hstack(columns), known)
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
    same factorised system: the columns of M⁻¹ are the accelerations for unit generalized forces at zero
    velocity without gravity, −M⁻¹h the accelerations for zero forces; one LU, nv + 1 right-hand sides.
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
        system = assemble(model, x, xd, generalized)
        return accelerations_from_solution(model, system, system.solve(), xd)

    def _inverse_mass(self, model, q, t):
        x, _ = _tree_state(model, q, np.zeros(model.nv), t)
        xd = np.zeros(model.n_tangent)
        columns = []
        import scipy.linalg as sla
        base = assemble(model, x, xd, None)
        lu = sla.lu_factor(base.matrix)
        gravity_free = base.rhs.copy()
        for i, b_index in enumerate(base.structure.segments):  # remove gravity: M⁻¹ columns need none
            gravity_free[3 * i:3 * i + 3] -= model.bodies[b_index].mass * model.gravity
        for k in range(model.nv):
            unit = np.zeros(model.nv)
            unit[k] = 1.0
            rhs = assemble(model, x, xd, unit).rhs - base.rhs + gravity_free
            columns.append(accelerations_from_solution(model, base, sla.lu_solve(lu, rhs), xd))
        return np.column_stack(columns)

    def mass_matrix(self, model, q, t: float = 0.0) -> np.ndarray:
        inverse = self._inverse_mass(model, q, t)
        mass = np.linalg.inv(inverse)
        return 0.5 * (mass + mass.T)

    def bias_forces(self, model, q, v, t: float = 0.0) -> np.ndarray:
        mass = self.mass_matrix(model, q, t)
        return -mass @ forward_dynamics(model, q, v, None, t)


# ---------------------------------------------------------------------------------------------- absolute coordinates
@dataclass
class AbsoluteRun:
    """Integration in the paper's own unknowns (segment COM position, orientation, velocities), hinge models.

    t (s); com (T, N, 3); rotations (T, N, 3, 3); gap (T,) largest joint-point separation (m); axis_error (T,)
    largest |U_a·U_b| of the hinge rows (the constraint rows' own invariants, rad-like)."""

    t: np.ndarray
    com: np.ndarray
    rotations: np.ndarray
    gap: np.ndarray
    axis_error: np.ndarray


def constraint_residuals(model, st: SegmentState) -> tuple[float, float]:
    """(largest joint-point gap in m, largest |U_a·U_b|) of an absolute state — both 0 when assembled."""
    s = structure(model)
    gap, axis = 0.0, 0.0
    for joint in s.joints:
        first = model.bodies[joint.bodies[0]]
        cb = s.segments[joint.child]
        if joint.parent >= 0:
            pb = s.segments[joint.parent]
            point_p, rot_p = st.origins[pb] + st.rotations[pb] @ first.translation, st.rotations[pb]
        else:
            point_p, rot_p = first.translation, np.eye(3)
        gap = max(gap, float(np.linalg.norm(st.origins[cb] - point_p)))
        u_a = rot_p @ first.rotation @ first.axis
        for w in _perpendicular_pair(model.bodies[cb].axis):
            axis = max(axis, abs(float(u_a @ (st.rotations[cb] @ w))))
    return gap, axis


def simulate_absolute(model, q0, v0, t_end: float, dt: float, *, tau=None, baumgarte=None,
                      gyroscopic: bool = True, tolerance: float = 1e-9,
                      state0: SegmentState | None = None) -> AbsoluteRun:
    """RK4 on the segments' absolute coordinates with the acceleration-level equations only (the paper's scheme).

    The joint constraints are enforced only through their second derivatives, so position and velocity errors of
    the joints drift; `baumgarte=(α, β)` feeds them back (−2α ċ − β² c). The initial state comes from (q0, v0) and is
    checked for consistency (assembly) to `tolerance` (`state0`: an absolute state of your own instead, e.g. from
    measured segment poses — the check is what catches a non-assembled one; tolerance=inf skips it). Hinge joints only (grouped joints need their massless
    links' orientations, which absolute coordinates do not carry). `tau(t)` → generalized forces (nv), default 0.
    Rotations are re-orthonormalised after every step (polar decomposition)."""
    s = structure(model)
    if any(j.kind != "hinge" for j in s.joints):
        raise ModelError("simulate_absolute supports hinge joints only", file=model.file, argument="model",
                         expected="a model without <segment_joint> groups")
    if state0 is None:
        x, xd, _, _ = model.joint_state(q0, v0)
        st = segment_state(model, x, xd)
    else:
        st = state0
    gap, axis = constraint_residuals(model, st)
    if gap > tolerance or axis > tolerance:
        raise SolverError(f"inconsistent initial conditions: joint gap {gap:.3g} m, axis error {axis:.3g}")
    locals_ = np.array([model.bodies[b].com for b in s.segments])
    inertia_body = np.array([model.bodies[b].inertia_com for b in s.segments])
    seg = list(s.segments)

    def make_state(com, rot, vel, omega) -> SegmentState:
        arms = np.einsum("nij,nj->ni", rot, locals_)
        return SegmentState(rot, com - arms, omega, vel - np.cross(omega, arms), com, vel,
                            np.einsum("nij,njk,nlk->nil", rot, inertia_body, rot))

    def rates(t, com, rot, vel, omega):
        state = make_state(com, rot, vel, omega)
        generalized = None if tau is None else tau(t)
        system = assemble(model, None, None, generalized, gyroscopic=gyroscopic, baumgarte=baumgarte, state=state)
        z = system.solve()
        n = s.n_segments
        acc = z[:3 * n].reshape(n, 3)
        alpha = z[3 * n:6 * n].reshape(n, 3)
        rot_dot = np.einsum("nij,njk->nik", np.array([skew(w) for w in omega]), rot)
        return vel, rot_dot, acc, alpha

    com, rot = st.com.copy(), st.rotations[seg].copy()
    vel, omega = st.com_velocity.copy(), st.omega[seg].copy()
    times, coms, rots, gaps, axes = [0.0], [com.copy()], [rot.copy()], [gap], [axis]
    steps = int(round(t_end / dt))
    for k in range(steps):
        t = k * dt
        y = (com, rot, vel, omega)
        k1 = rates(t, *y)
        k2 = rates(t + dt / 2, *(a + dt / 2 * b for a, b in zip(y, k1)))
        k3 = rates(t + dt / 2, *(a + dt / 2 * b for a, b in zip(y, k2)))
        k4 = rates(t + dt, *(a + dt * b for a, b in zip(y, k3)))
        com, rot, vel, omega = (a + dt / 6 * (b1 + 2 * b2 + 2 * b3 + b4) for a, b1, b2, b3, b4 in zip(y, k1, k2, k3, k4))
        u, _, vt = np.linalg.svd(rot)
        rot = u @ vt
        gap, axis = constraint_residuals(model, make_state(com, rot, vel, omega))
        times.append((k + 1) * dt)
        coms.append(com.copy())
        rots.append(rot.copy())
        gaps.append(gap)
        axes.append(axis)
    return AbsoluteRun(np.array(times), np.array(coms), np.array(rots), np.array(gaps), np.array(axes))
