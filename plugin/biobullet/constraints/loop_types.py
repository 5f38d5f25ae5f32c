"""Loop-closure types `<loop type="...">`: one small base class and a registry (a plugin family).

A loop relates point A on `link_a` (`xyz_a`) to point B on `link_b` (`xyz_b`); its type says which equations
Φ(A, B) = 0 hold. A type gives, from the two points' states (`loops.PointState`: position, rotation, 6×n Jacobian,
and with rates velocity, angular velocity and the classical accelerations with ẍ = 0):

    Φ (n_equations), Φ_x (n_equations × n_tangent), b = Φ̇_x ẋ  (so that Φ̈ = Φ_x ẍ + b)

and the reaction its multipliers λ exert on link_a at A. Built in: `point` (3 rows), `planar` (2 in-plane rows),
`revolute` (point + axis alignment, 5 rows), `weld` (point + orientation, 6 rows). Their rows are the loop rows
kernel's (`loop_kernels`, a `kernel_kind` and `kernel_basis` each): all loops of a model in one kernel call
(`loops.VectorLoops`), and `rows()` runs the same kernel for one loop from the two points' states. Every other
type is evaluated through its `rows()`.
Third-party types register with `register_loop_type` or through the entry-point group ``biobullet.constraints``
(name = type, value = a LoopType subclass).
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, ClassVar, Mapping

import numpy as np

from biobullet.constraints.loop_kernels import loop_rows_run, pack_loop_rows
from biobullet.core.errors import SourceRef
from biobullet.core.frozen import FrozenParameters
from biobullet.core.attributes import REQUIRED, vector3
from biobullet.core.plugins import PluginRegistry
from biobullet.spatial.rotations import rpy_to_matrix

if TYPE_CHECKING:
    from biobullet.constraints.loops import PointState

ENTRY_POINT_GROUP = "biobullet.constraints"
#: attributes every loop has (the type adds its own `attributes`)
COMMON_ATTRIBUTES = ("name", "type", "link_a", "xyz_a", "link_b", "xyz_b")


def _frozen(array: np.ndarray) -> np.ndarray:
    array.setflags(write=False)
    return array


def plane_basis(normal: np.ndarray) -> np.ndarray:
    """Deterministic orthonormal 3×2 basis [e1 e2] of the plane ⟂ unit `normal` (e1 × e2 = normal).

    e1 is the coordinate axis least aligned with the normal, made orthogonal to it (normal z → e1 = x, e2 = y).
    """
    helper = np.zeros(3)
    helper[int(np.argmin(np.abs(normal)))] = 1.0
    e1 = helper - (helper @ normal) * normal
    e1 /= np.linalg.norm(e1)
    return np.column_stack([e1, np.cross(normal, e1)])


def _cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """3-vector cross product (np.cross is ~10× slower on single vectors)."""
    return np.array([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]])


class LoopType(FrozenParameters, ABC):
    """The equations of one loop type between points A (link_a) and B (link_b). Immutable after parsing
    (assigning an attribute raises `core.frozen.FrozenParameterError`)."""

    type_name: ClassVar[str] = ""
    n_equations: ClassVar[int] = 0
    row_suffixes: ClassVar[tuple[str, ...]] = ()
    #: attributes of this type beyond COMMON_ATTRIBUTES
    attributes: ClassVar[tuple[str, ...]] = ()
    #: the 3×2 basis (planar: of the plane, in link_a; revolute: ⟂ axis_b, in link_b) and link_a's axis
    #: (revolute), read by the Pinocchio oracle; zeros where unused
    basis: np.ndarray = _frozen(np.zeros((3, 2)))
    axis_a: np.ndarray = _frozen(np.zeros(3))
    #: the loop rows kernel's kind of this type (`loop_kernels.LoopRows`: 0 point, 1 planar, k ≥ 2 the point rows
    #: and k pair rows), or None: a type evaluated by its own `rows()`
    kernel_kind: ClassVar[int | None] = None
    #: its vectors for that kernel in link frames (3 × 6): planar — the plane basis of link_a (columns 0, 1); a
    #: pair type — u_i in link_b (column i) and a_i in link_a (column 3 + i)
    kernel_basis: np.ndarray = _frozen(np.zeros((3, 6)))

    @classmethod
    def from_attributes(cls, attributes: Mapping[str, str], source: SourceRef) -> "LoopType":
        """Parse this type's own attributes (ModelError naming the attribute on bad input)."""
        return cls()

    @abstractmethod
    def rows(self, a: "PointState", b: "PointState", *, jacobian: bool, rates: bool
             ) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
        """(Φ, Φ_x or None, b or None) from the states of A and B (Jacobians present iff `jacobian`; velocities,
        ω and accelerations present iff `rates`)."""

    def reaction(self, a: "PointState", b: "PointState", multipliers: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(force, moment) on link_a at A, world axes, of this loop's multipliers λ, with the sign convention of
        `dynamics.multipliers.joint_reactions` (the opposite acts on link_b). Default: not resolved (zeros) —
        the generalized reaction Φ_xᵀ λ is exact for every type; override to report forces."""
        return np.zeros(3), np.zeros(3)

    def _where(self) -> tuple[str | None, str]:
        return None, f'<loop type="{self.type_name}">'


def _builtins() -> None:
    """The built-in types are defined (and registered) below, in this module."""


LOOP_TYPES: PluginRegistry[type[LoopType]] = PluginRegistry("loop type", LoopType, ENTRY_POINT_GROUP, _builtins)


def register_loop_type(cls: type[LoopType]) -> type[LoopType]:
    """Class decorator: register a LoopType subclass under its `type_name`."""
    if not cls.type_name or cls.n_equations <= 0 or len(cls.row_suffixes) != cls.n_equations:
        raise ValueError(f"{cls.__name__}: needs type_name, n_equations > 0 and one row suffix per equation")
    return LOOP_TYPES.add(cls.type_name, cls)


def get_loop_type(name: str) -> type[LoopType] | None:
    return LOOP_TYPES.get(name)


def loop_type_names() -> list[str]:
    return LOOP_TYPES.names()


# ------------------------------------------------------------------------------------------------ built-ins
class _KernelLoop(LoopType):
    """A built-in type: its rows are the loop rows kernel's (`kernel_kind`, `kernel_basis`)."""

    def rows(self, a, b, *, jacobian, rates):
        return kernel_rows(self, a, b, jacobian, rates)


@register_loop_type
class PointLoop(_KernelLoop):
    """Φ = p_A − p_B (world axes): a spherical joint closing the loop."""

    type_name = "point"
    n_equations = 3
    row_suffixes = ("x", "y", "z")

    kernel_kind = 0

    def reaction(self, a, b, multipliers):
        return np.array(multipliers[:3], dtype=float), np.zeros(3)


@register_loop_type
class PlanarLoop(_KernelLoop):
    """Φ = Eᵀ (p_A − p_B), E = an orthonormal basis (3×2) of the plane ⟂ `normal`, attached to link_a."""

    type_name = "planar"
    n_equations = 2
    row_suffixes = ("e1", "e2")
    attributes = ("normal",)

    kernel_kind = 1

    def __init__(self, basis: np.ndarray) -> None:
        self.basis = basis
        self.kernel_basis = _kernel_basis(basis)

    @classmethod
    def from_attributes(cls, attributes, source):
        return cls(_frozen(plane_basis(vector3(source, attributes, "normal", REQUIRED, unit=True))))

    def reaction(self, a, b, multipliers):
        return a.rotation @ self.basis @ np.asarray(multipliers, dtype=float), np.zeros(3)


@register_loop_type
class RevoluteLoop(_KernelLoop):
    """The point rows plus u_k·a = 0 (k = 1, 2): link_a's axis a (`axis_a`, default `axis`) stays orthogonal to
    two unit vectors u_k spanning the plane ⟂ `axis_b` (default `axis`) in link_b — a hinge closing the loop."""

    type_name = "revolute"
    n_equations = 5
    row_suffixes = ("x", "y", "z", "axis1", "axis2")
    attributes = ("axis", "axis_a", "axis_b")

    kernel_kind = 2

    def __init__(self, axis_a: np.ndarray, basis: np.ndarray) -> None:
        self.axis_a, self.basis = axis_a, basis
        self.axis_pairs = _frozen(np.column_stack([axis_a, axis_a]))   # a paired with u_1, u_2
        self.kernel_basis = _kernel_basis(basis, self.axis_pairs)

    @classmethod
    def from_attributes(cls, attributes, source):
        axis = attributes.get("axis")
        if axis is None and ("axis_a" not in attributes or "axis_b" not in attributes):
            raise source.error("axis", "missing required attribute", "the hinge axis (or axis_a and axis_b)")
        axis_a = vector3(source, attributes, "axis_a" if "axis_a" in attributes else "axis", REQUIRED, unit=True)
        axis_b = vector3(source, attributes, "axis_b" if "axis_b" in attributes else "axis", REQUIRED, unit=True)
        return cls(axis_a, _frozen(plane_basis(axis_b)))

    def reaction(self, a, b, multipliers):
        return (np.array(multipliers[:3], dtype=float),
                _perpendicular_moment(self.basis, self.axis_pairs, a, b, multipliers[3:]))


def _kernel_basis(in_first: np.ndarray, in_last: np.ndarray | None = None) -> np.ndarray:
    """A type's `kernel_basis` (3 × 6, frozen): `in_first`'s columns from column 0, `in_last`'s from column 3."""
    basis = np.zeros((3, 6))
    basis[:, :in_first.shape[1]] = in_first
    if in_last is not None:
        basis[:, 3:3 + in_last.shape[1]] = in_last
    return _frozen(basis)


def kernel_rows(law: LoopType, a: "PointState", b: "PointState", jacobian: bool, rates: bool
                ) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    """`LoopType.rows` of a type with a `kernel_kind`, by the loop rows kernel (`loop_kernels.loop_rows_run`): the
    two points' link frames as two bodies placed at the points, each moved by its own n tangent columns (body A by
    columns 0 … n−1, B by n … 2n−1, so the kernel's Φ_x is the sum of its two halves), with the spatial velocity and
    accelerations at the world origin that give the points' states: S_lin = J_lin − S_ang × p, v_O = ṗ − ω × p,
    a_O = p̈ − α × p − ω × ṗ."""
    n = a.jacobian.shape[1] if jacobian else 0
    states = (a, b)
    sub = np.zeros((6, 2 * n))
    ancestry = np.zeros((2, 2 * n))
    motion = np.zeros((1, 6))
    velocity = acceleration = motion
    if rates:
        velocity, acceleration = np.empty((2, 6)), np.empty((2, 6))
    for side, state in enumerate(states):
        columns = slice(side * n, (side + 1) * n)
        ancestry[side, columns] = 1.0
        if jacobian:
            sub[3:, columns] = state.jacobian[3:]
            sub[:3, columns] = state.jacobian[:3] - np.cross(state.jacobian[3:].T, state.position).T
        if rates:
            velocity[side, 3:], acceleration[side, 3:] = state.omega, state.alpha
            velocity[side, :3] = state.velocity - _cross(state.omega, state.position)
            acceleration[side, :3] = (state.accel - _cross(state.alpha, state.position)
                                      - _cross(state.omega, state.velocity))
    # writable and C-contiguous, as `VectorLoops.evaluate` passes the tree kinematics: one compiled signature
    kin = (np.array([a.rotation, b.rotation], dtype=float), np.array([a.position, b.position], dtype=float), sub,
           velocity, acceleration)
    loop = (np.array([0, 1], dtype=np.int64), np.zeros((2, 3)), law.kernel_basis[None],
            np.array([law.kernel_kind], dtype=np.int64), [law.n_equations])
    phi, jac, bias = loop_rows_run(pack_loop_rows(ancestry, (loop,)), 0, kin, jacobian, rates)
    return phi, (jac[:, :n] + jac[:, n:]) if jacobian else None, bias if rates else None


def _perpendicular_moment(u_in_b: np.ndarray, a_in_a: np.ndarray, a: "PointState", b: "PointState",
                          multipliers) -> np.ndarray:
    """Moment on link_a of the multipliers λ_k of the rows u_k·a_k = 0: the generalized force of row k on link_a's
    rotation is −λ_k (u_k × a_k)."""
    moment = np.zeros(3)
    for k in range(u_in_b.shape[1]):
        moment -= multipliers[k] * np.cross(b.rotation @ u_in_b[:, k], a.rotation @ a_in_a[:, k])
    return moment


@register_loop_type
class WeldLoop(_KernelLoop):
    """The point rows plus three orientation rows: frame A (at A, orientation `rpy_a` in link_a) and frame B (at B,
    `rpy_b` in link_b) coincide. The orientation rows are Simbody's (its Weld / ConstantOrientation constraint):
    x_B·y_A = 0, y_B·z_A = 0, z_B·x_A = 0 — together with the point rows a rigid attachment (near R_A = R_B; these
    rows also vanish at some half-turn misalignments, which assembly from a nearby guess never reaches)."""

    type_name = "weld"
    n_equations = 6
    row_suffixes = ("x", "y", "z", "rx", "ry", "rz")
    attributes = ("rpy_a", "rpy_b")

    kernel_kind = 3

    def __init__(self, frame_a: np.ndarray, frame_b: np.ndarray) -> None:
        self.frame_a, self.frame_b = _frozen(frame_a.copy()), _frozen(frame_b.copy())   # axes as columns
        self.frame_a_pairs = _frozen(frame_a[:, [1, 2, 0]].copy())   # A's axes paired with B's x, y, z
        self.kernel_basis = _kernel_basis(self.frame_b, self.frame_a_pairs)

    @classmethod
    def from_attributes(cls, attributes, source):
        frames = [rpy_to_matrix(vector3(source, attributes, key, (0.0, 0.0, 0.0))) for key in ("rpy_a", "rpy_b")]
        return cls(*frames)

    def reaction(self, a, b, multipliers):
        return (np.array(multipliers[:3], dtype=float),
                _perpendicular_moment(self.frame_b, self.frame_a_pairs, a, b, multipliers[3:]))


__all__ = ["LoopType", "register_loop_type", "get_loop_type", "loop_type_names", "LOOP_TYPES", "COMMON_ATTRIBUTES",
           "PointLoop", "PlanarLoop", "RevoluteLoop", "WeldLoop", "plane_basis"]
