"""Frozen description objects: what a model file says, validated, before compilation.

Units: SI, angles in radians. Vectors are tuples of floats; 3×3 matrices are tuples of 3 row tuples.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator, Mapping

from biobullet.core.errors import SourceRef

Vec3 = tuple[float, float, float]
Mat3 = tuple[Vec3, Vec3, Vec3]

MOVABLE_JOINT_TYPES = ("revolute", "continuous", "prismatic")
# Joints with several degrees of freedom: URDF's "planar" and "floating", PyBullet's "spherical" (ball joint).
# Their coordinates bypass the coordinate map (like a floating base): see model.tree for the layout.
MULTI_DOF_JOINT_TYPES = ("spherical", "planar", "floating")


@dataclass(frozen=True)
class InertialDescription:
    """Mass (kg), centre of mass (m, link frame) and inertia about the COM expressed in the link frame (kg·m²)."""

    mass: float
    com: Vec3
    inertia: Mat3


@dataclass(frozen=True)
class LinkDescription:
    name: str
    inertial: InertialDescription | None
    source: SourceRef


@dataclass(frozen=True)
class JointDescription:
    """A URDF joint. `origin` places the joint (= child link) frame in the parent link frame at θ = 0."""

    name: str
    type: str
    parent: str
    child: str
    origin_xyz: Vec3
    origin_rpy: Vec3
    axis: Vec3
    lower: float | None
    upper: float | None
    mimic: tuple[str, float, float] | None  # (joint, multiplier, offset)
    source: SourceRef

    @property
    def movable(self) -> bool:
        """A 1-DOF joint (one coordinate θ, which joint functions, loops and `<initial>` may name)."""
        return self.type in MOVABLE_JOINT_TYPES

    @property
    def multi_dof(self) -> bool:
        return self.type in MULTI_DOF_JOINT_TYPES


@dataclass(frozen=True)
class JointFunctionDescription:
    """θ_joint = function(inputs, t)."""

    joint: str
    function: Any  # functions.base.JointFunction (kept Any to avoid importing plugins here)
    source: SourceRef


@dataclass(frozen=True)
class InitialDescription:
    joint: str
    position: float | None
    velocity: float | None
    source: SourceRef


@dataclass(frozen=True)
class ElementDescription:
    """A `<biobullet>` child handled by a later layer (loops, forces, contact, flexible links).

    `attributes` are the raw strings; link and joint references have already been checked to exist.
    """

    tag: str
    attributes: Mapping[str, str]
    source: SourceRef

    def get(self, key: str, default: str | None = None) -> str | None:
        return self.attributes.get(key, default)


@dataclass(frozen=True)
class ModelDescription:
    name: str
    file: str
    links: tuple[LinkDescription, ...]
    joints: tuple[JointDescription, ...]
    root_link: str
    gravity: Vec3 = (0.0, 0.0, -9.81)
    base_type: str = "fixed"
    coordinates: tuple[str, ...] | None = None
    joint_functions: tuple[JointFunctionDescription, ...] = ()
    initial: tuple[InitialDescription, ...] = ()
    elements: tuple[ElementDescription, ...] = ()  # loop, spring, joint_spring, joint_torque, joint_stop, contact, flexible
    extension_version: str | None = None
    inertia_policy: str = "warn"
    # links whose tensor is physically impossible: (link, problem, relative Frobenius distance to the nearest
    # physical tensor, whether the tensor was replaced by it) — see model.urdf.INERTIA_POLICIES
    inertia_issues: tuple[tuple[str, str, float, bool], ...] = ()
    # the URDF text this description was read from when `file` is in another format (an OpenSim .osim model,
    # translated in memory by `biobullet.opensim`); None when `file` is the URDF itself
    translated_urdf: str | None = None
    # the bytes of `file` this description was parsed and checked from (`load_description`): the bridge hands
    # PyBullet exactly these, not the file as it is later (it may have been replaced since); None when the
    # description was made from text in memory
    source_text: bytes | None = field(default=None, repr=False, compare=False)
    # URDF <limit>s of revolute/prismatic joints act as joint stops (forces.elements.limit_stops), as in PyBullet
    joint_limits: bool = True
    # the `<muscle>` elements of the `<biobullet>` block as XML text, parsed by the muscles layer
    # (`biobullet.muscles.api.muscle_set`): their children are needed, so they are not ElementDescriptions
    muscles: tuple[str, ...] = ()

    def link(self, name: str) -> LinkDescription:
        return next(link for link in self.links if link.name == name)

    def joint(self, name: str) -> JointDescription:
        return next(joint for joint in self.joints if joint.name == name)

    def elements_of(self, tag: str) -> tuple[ElementDescription, ...]:
        return tuple(e for e in self.elements if e.tag == tag)


class FrozenMapping(Mapping):
    """A read-only mapping of an element's attributes that, unlike `types.MappingProxyType`, pickles and copies: a
    model goes to worker processes (multiprocessing, dask) as its description (`Model.__reduce__`)."""

    __slots__ = ("_items",)

    def __init__(self, items: Mapping[str, str]) -> None:
        self._items = dict(items)

    def __getitem__(self, key: str) -> str:
        return self._items[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __repr__(self) -> str:
        return f"FrozenMapping({self._items!r})"

    def __reduce__(self):
        return FrozenMapping, (self._items,)


def frozen_mapping(d: dict[str, str]) -> Mapping[str, str]:
    return FrozenMapping(d)


__all__ = ["InertialDescription", "LinkDescription", "JointDescription", "JointFunctionDescription",
           "InitialDescription", "ElementDescription", "ModelDescription", "MOVABLE_JOINT_TYPES", "MULTI_DOF_JOINT_TYPES", "field"]
