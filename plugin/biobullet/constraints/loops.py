"""Loop-closure constraints `<loop>`: parsing, residual Φ(x), Jacobian Φ_x and the velocity product Φ̇_x ẋ.

Conventions (x, ẋ: see model.tree). Every loop relates a point A on `link_a` (`xyz_a`, link frame) to a point
B on `link_b` (`xyz_b`); all rows are lengths (m) or direction cosines (1):
  point     Φ = p_A − p_B (world axes), 3 rows;
  planar    Φ = Eᵀ (p_A − p_B), 2 rows, E = a fixed orthonormal basis (3×2) of the plane ⟂ `normal`;
            `normal` (and E) are attached to link_a's frame, so the equations stay valid on a floating base;
  revolute  the point rows plus u_k·a = 0 (k = 1, 2): the axis a (`axis_a`, default `axis`, in link_a) must
            stay orthogonal to two unit vectors u_k spanning the plane ⟂ `axis_b` (default `axis`) in link_b.
Other types are plugins (`loop_types.LoopType`, entry-point group ``biobullet.constraints``).
Second derivative: Φ̈ = Φ_x ẍ + b(x, ẋ), with b = Φ̇_x ẋ the "velocity product" computed exactly from the
classical accelerations of the bodies with ẍ = 0 (one forward pass).

Speed: the tree kinematics of the last configuration (and velocity) is cached per model (force elements, loop
rows and the reduced formulations' Newton share it within one right-hand side); point, planar, revolute and weld
loops are evaluated by `VectorLoops` (all loops at once). Both run the kernels of `loop_kernels` (compiled; their Python
form without numba), the one implementation of tree kinematics and loop rows; other loop types through `rows()`.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from biobullet.algorithms.vectorized import tree_arrays
from biobullet.core.errors import SourceRef, did_you_mean
from biobullet.constraints.loop_types import COMMON_ATTRIBUTES, LoopType, get_loop_type, loop_type_names
from biobullet.core.attributes import vector3

@dataclass(frozen=True, eq=False)
class Loop:
    """One parsed `<loop>`: points A (`xyz_a` on `link_a`) and B (`xyz_b` on `link_b`), link frames, and the
    equations of its type (`law`, a `loop_types.LoopType`)."""

    name: str
    type: str
    link_a: str
    xyz_a: np.ndarray
    link_b: str
    xyz_b: np.ndarray
    law: LoopType
    source: SourceRef

    @property
    def n_equations(self) -> int:
        return self.law.n_equations

    @property
    def row_names(self) -> tuple[str, ...]:
        return tuple(f"{self.name}.{s}" for s in self.law.row_suffixes)

    @property
    def basis(self) -> np.ndarray:
        """planar: 3×2 plane basis in link_a; revolute: 3×2 u_1, u_2 in link_b (zeros for other types)."""
        return self.law.basis

    @property
    def axis_a(self) -> np.ndarray:
        """revolute: unit axis in link_a (zeros for other types)."""
        return self.law.axis_a


def parse_loop(element, link_names) -> Loop:
    """Validate one loop ElementDescription (raw attributes) into a Loop; ModelError names the attribute."""
    source, attrs = element.source, element.attributes
    name = attrs.get("name")
    if not name or not name.strip():
        raise source.error("name", "missing required attribute", "a loop name")
    kind = attrs.get("type")
    law_class = get_loop_type(kind) if kind else None
    if law_class is None:
        raise source.error("type", f"unknown loop type {kind!r}{did_you_mean(kind, loop_type_names())}",
                           "one of " + ", ".join(loop_type_names()))
    allowed = set(COMMON_ATTRIBUTES) | set(law_class.attributes)
    for key in attrs:
        if key not in allowed:
            raise source.error(key, "unknown attribute", f"one of {', '.join(sorted(allowed))} (type {kind!r})")
    links = []
    for key in ("link_a", "link_b"):
        link = attrs.get(key)
        if link is None:
            raise source.error(key, "missing required attribute", "a link name")
        if link not in link_names:
            raise source.error(key, f"unknown link {link!r}{did_you_mean(link, link_names)}",
                               "one of " + ", ".join(sorted(link_names)))
        links.append(link)
    if links[0] == links[1]:
        raise source.error("link_b", f"the loop closes link {links[0]!r} on itself", "two different links")
    xyz_a, xyz_b = vector3(source, attrs, "xyz_a"), vector3(source, attrs, "xyz_b")
    law = law_class.from_attributes(attrs, source)
    return Loop(name.strip(), kind, links[0], xyz_a, links[1], xyz_b, law, source)


def parse_loops(description, link_names) -> tuple[Loop, ...]:
    loops = tuple(parse_loop(e, set(link_names)) for e in description.elements_of("loop"))
    seen: set[str] = set()
    for loop in loops:
        if loop.name in seen:
            raise loop.source.error("name", f"duplicate loop name {loop.name!r}", "distinct loop names")
        seen.add(loop.name)
    return loops


# ---------------------------------------------------------------------------------------------- kinematics
@dataclass
class TreeKinematics:
    """World placements, motion subspaces (world frame at the world origin, [linear; angular]) and, with ẋ,
    body spatial velocities V and the spatial accelerations A₀ that ẋ alone produces (ẍ = 0).

    Fixed-frame recursion (Featherstone RBDA §3.4): V_i = Σ_{k moves i} S_k ẋ_k, A₀_i = Σ_{k ≤ i} V_k × S_k ẋ_k;
    the same fixed-frame algebra as the tree dynamics kernel (`algorithms.compiled_kernels`), whose RNEA is checked
    against Pinocchio; computed by `loop_kernels._tree_kinematics_kernel_py`.
    """

    arrays: object
    rotations: np.ndarray      # (n_b, 3, 3)
    positions: np.ndarray      # (n_b, 3)
    subspace: np.ndarray       # (6, n_tangent)
    velocity: np.ndarray | None = None   # (n_b, 6)
    accel: np.ndarray | None = None      # (n_b, 6)
    #: (rotations, positions, subspace, velocity, accel) writable, for the loop rows kernel: the fields above are
    #: read-only views of them, and numba compiles a kernel again for read-only arrays (≈ 5 s of CPU)
    kernel_arrays: tuple | None = field(default=None, repr=False)


#: last tree kinematics per model: {model: (x bytes, placements+subspace, xd bytes, velocity, accel)}. The same
#: configuration is evaluated by the force elements, the loop rows and the resolver within one right-hand side.
_KINEMATICS = "loops.tree_kinematics"   # key of the last tree kinematics in `Model.derived`
_NO_RATES = np.zeros(0)
_NO_MOTION = np.zeros((1, 6))   # (writable like `TreeKinematics.kernel_arrays`: one signature of the rows kernel)


def _readonly(*arrays) -> list:
    """Read-only views of `arrays` (which stay writable for the kernels)."""
    views = [a.view() for a in arrays]
    for view in views:
        view.setflags(write=False)
    return views


def tree_kinematics(model, x: np.ndarray, xd: np.ndarray | None = None) -> TreeKinematics:
    """Tree kinematics at x (and ẋ) by the tree kinematics kernel (`loop_kernels.tree_kinematics_run`, compiled,
    or its Python form without numba); the arrays are shared (read-only) with the last call at the same x (and
    ẋ), so treat the result as read-only."""
    x = np.ascontiguousarray(x, dtype=float)   # contiguous: one signature of the kernel (not one per layout)
    key = x.tobytes()
    cached = model.derived.get(_KINEMATICS)
    if cached is not None and cached[0] == key:
        if xd is None:
            return cached[1]
        xd = np.ascontiguousarray(xd, dtype=float)
        if cached[2] == xd.tobytes():
            return cached[3]
    else:
        cached = None
    with_rates = xd is not None
    if with_rates:
        xd = np.ascontiguousarray(xd, dtype=float)
    meta, body = model.tree_pack
    rotations, positions, subspace, vel, acc = tree_kinematics_run(meta, body, x, xd if with_rates else _NO_RATES,
                                                                   model.n_tangent, with_rates)
    writable = (rotations, positions, subspace, vel, acc)
    rotations, positions, subspace, vel, acc = _readonly(*writable)
    arrays = tree_arrays(model)
    kin = TreeKinematics(arrays, rotations, positions, subspace, kernel_arrays=writable)
    if cached is None:
        cached = [key, kin, None, None]
        model.derived[_KINEMATICS] = cached
    if with_rates:
        kin = TreeKinematics(arrays, rotations, positions, subspace, vel, acc, kernel_arrays=writable)
        cached[2:] = [xd.tobytes(), kin]
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
        state.velocity = v[:3] + cross3(omega, position)
        # classical acceleration of a body point from the spatial one: a_p = A_lin + α × p + ω × ṗ
        state.accel = a[:3] + cross3(alpha, position) + cross3(omega, state.velocity)
    return state


def cross3(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cross products along the last axis of (..., 3) arrays (np.cross is slow on small arrays)."""
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
    return np.stack((a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0), axis=-1)


class VectorLoops:
    """Point, planar, revolute and weld loop rows of `loop_terms`, all loops at once (the hot path of the multipliers
    right-hand side and of the reduced formulations' Newton), packed for the rows kernel
    (`loop_kernels.loop_rows_run`: compiled, or its Python form without numba). Ground-fixed points are body −1
    (offset in world axes)."""

    def __init__(self, model, loops: tuple[Loop, ...]) -> None:
        self.loops = tuple(loops)
        bodies, offsets = [], []
        # per loop, 3 × 6, the type's `kernel_basis` in body frames (world axes for a ground link): planar — the
        # plane basis of link_a (columns 0, 1); revolute, weld — u_i of link_b (column i), a_i of link_a (3 + i)
        basis = np.zeros((len(loops), 3, 6))
        for side in ("a", "b"):
            for k, loop in enumerate(loops):
                frame = model.frame(getattr(loop, "link_" + side))
                xyz = getattr(loop, "xyz_" + side)
                bodies.append(frame.body if frame.body >= 0 else -1)
                offsets.append(frame.rotation @ xyz + frame.translation)   # in the body frame (world if ground)
                columns = slice(0, 3) if (side == "a") == (loop.law.kernel_kind == 1) else slice(3, 6)
                basis[k, :, columns] = frame.rotation @ loop.law.kernel_basis[:, columns]
        self.n_rows = sum(loop.n_equations for loop in loops)
        # the rows kernel's data (`loop_kernels.LoopRows`): ground points as body −1, loop kinds, rows
        self.kernel_set = (np.array(bodies, dtype=np.int64), np.array(offsets, dtype=float).reshape(-1, 3), basis,
                           np.array([loop.law.kernel_kind for loop in loops], dtype=np.int64),
                           [loop.n_equations for loop in loops])
        self.rows = pack_loop_rows(tree_arrays(model).ancestry, (self.kernel_set,))

    @staticmethod
    def supports(loops: tuple[Loop, ...]) -> bool:
        return all(loop.law.kernel_kind is not None for loop in loops)

    def evaluate(self, model, x: np.ndarray, xd: np.ndarray | None, kin=None, *, jacobian: bool = True):
        """(Φ, Φ_x, b, kin) like `loop_terms` (Φ_x None without `jacobian`, b None without ẋ); `kin` = tree
        kinematics at x to reuse."""
        if kin is None or xd is not None:   # (cached per x and ẋ: a `kin` of another ẋ must not be reused)
            kin = tree_kinematics(model, x, xd)
        with_bias = xd is not None
        rotations, positions, subspace, velocity, accel = kin.kernel_arrays or (
            kin.rotations, kin.positions, kin.subspace, kin.velocity, kin.accel)
        phi, jac, bias = loop_rows_run(self.rows, 0, (rotations, positions, subspace,
                                                      velocity if with_bias else _NO_MOTION,
                                                      accel if with_bias else _NO_MOTION), jacobian, with_bias)
        return phi, (jac if jacobian else None), (bias if with_bias else None), kin


_VECTOR_LOOPS = "loops.vector_loops"   # key of the packed loop sets in `Model.derived`


def vector_loops(model, loops) -> VectorLoops | None:
    per_model = model.derived.setdefault(_VECTOR_LOOPS, {})
    key = tuple(loops)
    if key not in per_model:
        per_model[key] = VectorLoops(model, key) if key and VectorLoops.supports(key) else None
    return per_model[key]


def loop_terms(model, loops, x: np.ndarray, xd: np.ndarray | None = None, *,
               jacobian: bool = True) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    """(Φ, Φ_x, b) of all `loops` stacked; Φ_x is n_rows × n_tangent (None if not asked), b = Φ̇_x ẋ (None
    without ẋ)."""
    vector = vector_loops(model, loops)
    if vector is not None:
        phi, jac, bias, _ = vector.evaluate(model, np.asarray(x, dtype=float),
                                            None if xd is None else np.asarray(xd, dtype=float),
                                            jacobian=jacobian)
        return phi, jac, bias
    kin = tree_kinematics(model, np.asarray(x, dtype=float), None if xd is None else np.asarray(xd, dtype=float))
    return _per_loop_terms(model, loops, kin, jacobian, xd is not None)


def _per_loop_terms(model, loops, kin: TreeKinematics, jacobian: bool, rates: bool):
    """(Φ, Φ_x or None, b or None) of `loops` stacked, each loop through its type's `rows()`; b iff `rates`
    (then `kin` has the rates)."""
    motion = kin.velocity if rates else None
    n_rows = sum(loop.n_equations for loop in loops)
    phi = np.zeros(n_rows)
    jac = np.zeros((n_rows, model.n_tangent)) if jacobian else None
    bias = np.zeros(n_rows) if rates else None
    row = 0
    for loop in loops:
        a = point_state(model, kin, loop.link_a, loop.xyz_a, jacobian=jacobian)
        b = point_state(model, kin, loop.link_b, loop.xyz_b, jacobian=jacobian)
        rows = slice(row, row + loop.n_equations)
        phi[rows], loop_jac, loop_bias = loop.law.rows(a, b, jacobian=jacobian, rates=motion is not None)
        if jacobian:
            jac[rows] = loop_jac
        if motion is not None:
            bias[rows] = loop_bias
        row += loop.n_equations
    return phi, jac, bias


def joint_layout_tree(model) -> tuple[np.ndarray, np.ndarray] | None:
    """(meta, body) of the packed tree over the loop kernels' joint layout (joint j at index base_v + j, in q as
    in v), or None where the model has none (multi-DOF joints other than a root free base). A fixed base: the
    model's tree. A root free base over 1-DOF joints: the tree over x[1:], the base a prismatic joint of zero axis
    at the identity, so the loop rows are evaluated with the base at the identity and at rest, as
    `LoopResolver.terms` evaluates them (loop equations are invariant under a rigid motion of the whole tree)."""
    if not model.base_nq:
        return model.tree_pack
    if not (model.floating_base and model.base_nq == 7 and model.base_nv == 6 and model.bodies[0].joint_type == "free"
            and not model.bodies[0].joint
            and all(b.joint_type in ("revolute", "prismatic") for b in model.bodies[1:])):
        return None
    from dataclasses import replace

    from biobullet.model.tree import pack_tree
    base = replace(model.bodies[0], joint_type="prismatic", axis=np.zeros(3), rotation=np.eye(3),
                   translation=np.zeros(3), nv=1, motion_subspace=np.zeros((6, 1)))
    meta, body = pack_tree((base, *model.bodies[1:]))
    meta[1:, 2] -= 1   # q indices into x[1:]; tangent indices unchanged
    return np.ascontiguousarray(meta), np.ascontiguousarray(body)


def loop_supports(model, loop: Loop) -> set[int]:
    """Indices (tree order) of the movable joints whose motion can change the loop's equations (paths to root)."""
    joints: set[int] = set()
    for attribute, link in (("link_a", loop.link_a), ("link_b", loop.link_b)):
        index = model.frame(link).body
        while index >= 0:
            body = model.bodies[index]
            if body.multi_dof and body.joint_type != "free":   # (a floating base is held at the identity)
                raise loop.source.error(attribute, f"the path from link {link!r} to the root passes through the "
                                        f"{body.joint_type} joint {body.joint!r}: loop closures solve for single "
                                        "joint coordinates", "loops over revolute, continuous and prismatic joints "
                                        "(a spherical joint as three revolute joints with massless links between)")
            if body.joint_type != "free":
                joints.add(model.joint_names.index(body.joint))
            index = body.parent
    return joints


from biobullet.constraints.loop_kernels import loop_rows_run, pack_loop_rows, tree_kinematics_run  # noqa: E402,I001
