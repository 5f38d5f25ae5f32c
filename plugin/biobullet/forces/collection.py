"""The force elements of a model: built once from its description, cached per Model (weakly), summed.

`force_elements(model)` returns the elements the model file declares, the stops of its URDF `<limit>`s (unless
loaded with joint_limits=False; `elements.limit_stops`), plus any added with `add_force_element(model, element)`
(Python API; the Model itself stays immutable).
"""
from __future__ import annotations


import numpy as np

from biobullet.algorithms.kinematics import body_placements
from biobullet.core.frozen import set_parameter
from biobullet.forces.base import ForceElement, force_type
from biobullet.model.model import ADDED_FORCES

# keys in `Model.derived`: the file's elements (built once), the elements added from Python, the batched springs
_FROM_FILE, _BATCHES = "forces.from_file", "forces.batches"
_ADDED = ADDED_FORCES   # (the model carries these to its copies: `Model.__reduce__`)
#: bumped by every `add_force_element` / `clear_added_force_elements`: a caller that keeps "this model has no
#: force elements" between calls (the bridge's per-step fast path) asks `force_elements` again only when it changed
_generation = 0
#: element tags owned by other layers (constraints, contact, flexible links)
NOT_FORCES = ("loop", "contact", "flexible")


def _from_description(model) -> tuple[ForceElement, ...]:
    elements = []
    names: dict[str, str] = {}
    for element in model.description.elements:
        if element.tag in NOT_FORCES:
            continue
        cls = force_type(element.tag)
        if cls is None:
            continue
        built = cls.from_description(model, element)
        if built.name in names and "name" not in element.attributes:  # two default names: number them
            base, count = built.name, 2
            while f"{base}_{count}" in names:
                count += 1
            set_parameter(built, "name", f"{base}_{count}")   # (before anything packed it)
        if built.name in names:
            raise element.source.error("name", f"force element name {built.name!r} is used twice "
                                       f"(also by {names[built.name]})", "distinct names")
        names[built.name] = element.source.element
        elements.append(built)
    if model.description.joint_limits:
        from biobullet.forces.elements import limit_stops
        for stop in limit_stops(model):
            if stop.name in names:
                raise stop.source.error(None, f"force element name {stop.name!r} (the stop of this <limit>) is used "
                                        f"by {names[stop.name]}", "another name, or load with joint_limits=False")
            names[stop.name] = stop.source.element
            elements.append(stop)
    return tuple(elements)


def force_elements(model) -> tuple[ForceElement, ...]:
    """All force elements of `model` (file order, then the ones added from Python)."""
    return model.derive(_FROM_FILE, lambda: _from_description(model)) + tuple(model.derived.get(_ADDED, ()))


def add_force_element(model, element: ForceElement) -> ForceElement:
    """Attach a force element to `model` (checked against the model now); returns it."""
    if not isinstance(element, ForceElement):
        raise TypeError(f"{element!r} is not a ForceElement")
    if any(e.name == element.name for e in force_elements(model)):
        raise element.source.error("name", f"force element name {element.name!r} is already used", "a new name")
    n = model.n_tangent  # evaluate once at the neutral configuration: catches unknown links/joints now
    x = model.joint_configuration(model.neutral_configuration())
    tau = element.generalized_force(model, x, np.zeros(n), 0.0)
    if np.shape(tau) != (n,):
        raise element.source.error(None, f"generalized_force returned shape {np.shape(tau)}", f"({n},)")
    global _generation
    model.derived.setdefault(_ADDED, []).append(element)
    _generation += 1
    return element


def clear_added_force_elements(model) -> None:
    """Remove the elements added with `add_force_element`."""
    global _generation
    model.derived.pop(_ADDED, None)
    _generation += 1


def added_generation() -> int:
    """A number that changes whenever an element is added to or cleared from any model (see `_generation`)."""
    return _generation




def _batched(model, elements) -> tuple:
    """((kernel, packed arrays) of the `JointSpring`s and `JointStop`s, the other elements) for this element
    tuple, cached on the model: a segmented flexible link has one joint spring per segment joint, a URDF one stop
    per `<limit>`. The kernel is the compiled right-hand sides' `compiled.joint_forces_kernel` (its Python twin
    without numba), where these elements' laws are written: one call for all of them."""
    cached = model.derived.get(_BATCHES)   # (element tuple, its batch, the other elements)
    if cached is not None and cached[0] == elements:
        return cached[1], cached[2]
    from biobullet.core.jit import direct_entry
    from biobullet.forces.compiled import joint_forces_kernel, pack_joint_forces
    from biobullet.forces.elements import JointSpring, JointStop
    springs = [e for e in elements if type(e) is JointSpring]
    stops = [e for e in elements if type(e) is JointStop]
    batch, others = None, tuple(elements)
    if springs or stops:
        others = tuple(e for e in elements if type(e) not in (JointSpring, JointStop))
        packed = pack_joint_forces(model, springs, stops)
        # the compiled kernel's entry for exactly these types (the bridge calls it per step)
        kernel = direct_entry(joint_forces_kernel(), np.zeros(model.n_config), np.zeros(model.n_tangent), *packed,
                              np.zeros(model.n_tangent))
        batch = (kernel, packed)
    model.derived[_BATCHES] = (tuple(elements), batch, others)
    return batch, others


def applied_forces(model, x: np.ndarray, xd: np.ndarray, t: float = 0.0, elements=None) -> np.ndarray:
    """Σ τ of the force elements (n_tangent, tree order). Joint spring-dampers and joint stops (see `JointSpring`,
    `JointStop`) are summed in one kernel call."""
    elements = force_elements(model) if elements is None else elements
    tau = np.zeros(model.n_tangent)
    if not elements:
        return tau
    batch, elements = _batched(model, tuple(elements))
    if batch is not None:
        kernel, packed = batch
        kernel(np.ascontiguousarray(x, dtype=float), np.ascontiguousarray(xd, dtype=float), *packed, tau)
    placements = None
    for element in elements:
        if getattr(element, "uses_placements", True):
            if placements is None:
                placements = body_placements(model, x)
            tau += element.generalized_force(model, x, xd, t, placements)
        else:
            tau += element.generalized_force(model, x, xd, t)
    return tau


def force_events(model, elements=None) -> list:
    elements = force_elements(model) if elements is None else elements
    return [event for e in elements for event in e.events(model)]
