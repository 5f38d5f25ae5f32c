"""Force-element base class and the registry keyed by the `<biobullet>` element tag.

A force element maps the tree state (x = [base pose?, θ], ẋ = [base twist?, θ̇], t) to generalized forces
τ (n_tangent, tree order, N or N·m) and splits its power into three parts so that the engine can keep an
energy balance:  τ·ẋ = −dV/dt − dissipated_power + input_power, where V = potential_energy (J, elastic),
dissipated_power ≥ 0 (W, dampers) and input_power (W, actuators).
Third-party element types register with `register_force("tag")` (or the entry-point group
``biobullet.force_elements``, name = tag, value = a ForceElement subclass with `from_description`).
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar

import numpy as np

from biobullet.core.errors import SourceRef
from biobullet.core.plugins import PluginRegistry

ENTRY_POINT_GROUP = "biobullet.force_elements"


class ForceElement(ABC):
    """One force element. Immutable after construction; `name` identifies it in reports and events."""

    tag: ClassVar[str] = ""
    #: True if the force is discontinuous in the state (the engine then restarts at its events)
    switched: ClassVar[bool] = False
    #: False if generalized_force does not use the `placements` argument (the engine then skips computing them)
    uses_placements: ClassVar[bool] = True

    def __init__(self, name: str, source: SourceRef | None = None) -> None:
        self.name = name
        self.source = source or SourceRef("<python>", f"<{self.tag} name=\"{name}\">")

    @classmethod
    @abstractmethod
    def from_description(cls, model, element) -> "ForceElement":
        """Build from an ElementDescription (raw string attributes); raise `source.error(...)` on bad input."""

    @abstractmethod
    def generalized_force(self, model, x: np.ndarray, xd: np.ndarray, t: float,
                          placements=None) -> np.ndarray:
        """τ (n_tangent): the element's generalized force on the tree (N, N·m)."""

    def potential_energy(self, model, x: np.ndarray) -> float:
        """Elastic potential V(x) (J); τ_elastic = −∂V/∂x."""
        return 0.0

    def potential_energy_batch(self, model, positions: np.ndarray) -> np.ndarray:
        """V at every sample (positions: (n, n_config) tree configurations) in J — trajectory post-processing.
        Sample by sample unless an element has a vectorised (or compiled) form; zero without an elastic part."""
        if type(self).potential_energy is ForceElement.potential_energy:
            return np.zeros(len(positions))
        return np.array([self.potential_energy(model, x) for x in positions], dtype=float)

    def dissipated_power(self, model, x: np.ndarray, xd: np.ndarray) -> float:
        """Power removed by the element's dampers (W, ≥ 0)."""
        return 0.0

    def input_power(self, model, x: np.ndarray, xd: np.ndarray, t: float) -> float:
        """Power put in by actuators (W): the non-conservative, non-dissipative part of τ·ẋ."""
        return 0.0

    def events(self, model) -> list:
        """Event functions (integrate.events.Event) the engine must locate (switching surfaces)."""
        return []

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


def _builtins() -> None:
    from biobullet.forces import elements  # noqa: F401  (registers the built-in elements)


def _tag_entry_point(cls: type[ForceElement], name: str) -> None:
    cls.tag = cls.tag or name


FORCE_ELEMENTS: PluginRegistry[type[ForceElement]] = PluginRegistry(
    "force element", ForceElement, ENTRY_POINT_GROUP, _builtins, _tag_entry_point)


def register_force(tag: str):
    """Class decorator: register a ForceElement subclass for the `<biobullet>` element `tag`."""
    def decorate(cls: type[ForceElement]) -> type[ForceElement]:
        cls.tag = tag
        return FORCE_ELEMENTS.add(tag, cls)
    return decorate


def force_type(tag: str) -> type[ForceElement] | None:
    return FORCE_ELEMENTS.get(tag)


def force_tags() -> list[str]:
    return FORCE_ELEMENTS.names()


# attribute helpers live in biobullet.core.attributes (number, vector3, check_known_attributes, ...)
def joint_indices(model, joint: str, source: SourceRef, attribute: str = "joint") -> tuple[int, int]:
    """(index in x, index in ẋ) of a movable joint's coordinate."""
    if joint not in model.joint_names:
        raise source.error(attribute, f"unknown joint {joint!r}", "one of " + ", ".join(model.joint_names))
    slot = model.joint_names.index(joint)
    return slot + model.base_nq, slot + model.base_nv   # after the floating base and multi-DOF joints
