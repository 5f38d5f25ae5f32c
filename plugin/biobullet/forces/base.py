"""Force-element base class and the registry keyed by the `<biobullet>` element tag.

A force element maps the tree state (x = [base pose?, θ], ẋ = [base twist?, θ̇], t) to generalized forces
τ (n_tangent, tree order, N or N·m) and splits its power into three parts so that the engine can keep an
energy balance:  τ·ẋ = −dV/dt − dissipated_power + input_power, where V = potential_energy (J, elastic),
dissipated_power ≥ 0 (W, dampers) and input_power (W, actuators).
Third-party element types register with `register_force("tag")` (or the entry-point group
``biobullet.force_elements``, name = tag, value = a ForceElement subclass with `from_description`).

The compiled right-hand side (`integrate.compiled_rhs`) evaluates the built-in elements
in one numba call. A third-party element joins them by returning a `ForceKernel` from `compiled_kernel(model)`:
a numba-compilable pure function of the fixed signature `FORCE_KERNEL_SIGNATURE`

    status = kernel(t, x, xd, rot, pos, sub, ancestry, fparams, iparams, tau, power)

    t         time (s)
    x, xd     tree configuration (n_config) and joint rates (n_tangent), tree order; a joint's slots are
              `joint_indices(model, joint, source)` (index in x, index in xd)
    rot, pos  world placement of every body: rot[b] (3×3, body → world), pos[b] (3, m)   [only if `kinematics`]
    sub       (6, n_tangent): column k = the world motion subspace of tangent direction k — linear part (rows 0–2,
              at the world origin) and angular part (rows 3–5); a point p of body b moves with
              v = Σ_k ancestry[b, k] (sub[0:3, k] + sub[3:6, k] × p) ẋ_k                     [only if `kinematics`]
    ancestry  (n_bodies, n_tangent) 1.0 where direction k moves body b, else 0.0               [only if `kinematics`]
    fparams   float64 parameters, iparams int64 parameters: the element's own, packed once (`ForceKernel`)
    tau       (n_tangent) generalized forces: the kernel ADDS its τ (N, N·m); a point force F at p on body b
              adds Σ_k ancestry[b, k] (F·sub[0:3, k] + (p × F)·sub[3:6, k]) to tau[k]
    power     (2): the kernel ADDS its input power (power[0], W, as `input_power`) and dissipated power
              (power[1], W ≥ 0, as `dissipated_power`)
    status    0 = evaluated; anything else = this state needs the callback stage (the whole right-hand side is
              then evaluated there, which raises the element's own clear error); a non-finite τ also hands over

(all arrays C-contiguous float64 unless said; rot, pos, sub, ancestry are empty when `kinematics` is False). The
function is also the element's pure-Python reference; it is compiled as a C callable (`core.jit.function_address`)
and called through its address, so any number of such kernels of any types run inside the one compiled
right-hand side without recompiling it. It must not raise (no Python exceptions in a C call): return a status.
It must give the same τ and powers as `generalized_force`, `input_power` and `dissipated_power` (the generic
path, also the path without numba, `BIOBULLET_NUMBA=0`). Without a kernel (the default `compiled_kernel` returns
None) a model with the element runs on the callback stage.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Callable, ClassVar, Mapping

import numpy as np

from biobullet.core.errors import SourceRef, did_you_mean
from biobullet.core.frozen import FrozenParameters
from biobullet.core.plugins import PluginRegistry

ENTRY_POINT_GROUP = "biobullet.force_elements"

#: numba signature of a force element's compiled kernel (see the module docstring)
FORCE_KERNEL_SIGNATURE = ("int64(float64, float64[::1], float64[::1], float64[:, :, ::1], float64[:, ::1], "
                          "float64[:, ::1], float64[:, ::1], float64[::1], int64[::1], float64[::1], float64[::1])")


@dataclass(frozen=True)
class ForceKernel:
    """A force element's compiled form for the compiled right-hand sides (see the module docstring).

    function: the `_NAME_py` kernel of signature `FORCE_KERNEL_SIGNATURE` (a module-level function, so that numba
    can cache it); fparams / iparams: its float and int parameters (1-D); kinematics: True if it reads rot, pos,
    sub or ancestry (the right-hand side then computes the tree kinematics for it); bind: compiled kernels it
    calls, by global name (as `core.jit.compiled`'s `bind`)."""

    function: Callable
    fparams: np.ndarray = field(default_factory=lambda: np.zeros(0))
    iparams: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    kinematics: bool = False
    bind: Mapping[str, Callable] | Callable[[], Mapping[str, Callable]] | None = None


class ForceElement(FrozenParameters, ABC):
    """One force element. Immutable after construction (assigning a parameter raises
    `core.frozen.FrozenParameterError`); `name` identifies it in reports and events."""

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

    def compiled_kernel(self, model) -> ForceKernel | None:
        """The element's kernel for the compiled right-hand sides (module docstring: signature, conventions), or
        None: a model with this element then runs on the callback stage. Built-in elements are compiled by the
        right-hand sides themselves; this hook is for third-party elements."""
        return None

    def _where(self) -> tuple[str | None, str]:
        return self.source.file, self.source.element

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


# attribute helpers live in biobullet.core.attributes (number, vector3, check_known_attributes, ...)
def joint_indices(model, joint: str, source: SourceRef, attribute: str = "joint") -> tuple[int, int]:
    """(index in x, index in ẋ) of a movable joint's coordinate."""
    if joint not in model.joint_names:
        several = {j.name: j.type for j in model.description.joints if j.multi_dof}
        if joint in several:   # (from Python it read "unknown joint 'ball'", though the model has it)
            raise source.error(attribute, f"joint {joint!r} is {several[joint]}: it has several degrees of freedom "
                               "and a joint element acts on one coordinate", "one of " + ", ".join(model.joint_names))
        raise source.error(attribute, f"unknown joint {joint!r}{did_you_mean(joint, model.joint_names)}",
                           "one of " + ", ".join(model.joint_names))
    slot = model.joint_names.index(joint)
    return slot + model.base_nq, slot + model.base_nv   # after the floating base and multi-DOF joints


def joint_element_name(model, element, tag: str) -> str:
    """The `name` of a single-joint element (`<TAG joint=..>`), or TAG_JOINT; `source.error` naming the element when
    its joint is missing or unknown."""
    joint = element.attributes.get("joint", "")
    joint_indices(model, joint, element.source)
    return element.attributes.get("name") or f"{tag}_{joint}"
