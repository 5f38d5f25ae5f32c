"""OpenSim CoordinateActuator, TorqueActuator and PointActuator → named inputs of the imported model.

An actuator's force is `optimal_force × control` (OpenSim's `computeActuation`); `osim_actuators(path)` gives each
enabled one as an `ActuatorInput` and `actuator_forces(model, actuators, q, controls)` turns a {name: control}
mapping into the generalized force Q over `model.coordinate_names` (`model.forward_dynamics(q, v, Q)`, the bridge's
`step(generalized=Q)`):

- CoordinateActuator on coordinate c: the tree force F u on c's joint, Q = Gᵀ e_c F u (G = ∂ẋ/∂v: a coupled or
  loop-dependent coordinate included); on a rotation of a Ball, Free, Ellipsoid or Scapulothoracic joint, whose
  OpenSim speed is ω's component u_k = E_k(q) q̇ (`document.angular_speed_rows`), OpenSim applies F u along u_k:
  the tree forces F u E_k on the joint's three Euler-angle joints;
- TorqueActuator: torque F u â on body A and −F u â on body B (â the unit axis, in ground when `torque_is_global`,
  else in body A): Q = Gᵀ (J_ω,A − J_ω,B)ᵀ τ;
- PointActuator: force F u d̂ at a point of the body (d̂ in ground when `force_is_global`, else in the body; the
  point in the body, or in ground when `point_is_global`: the body's material point there at q): Q = Gᵀ J_pᵀ f.

J are the links' world-aligned frame Jacobians (`algorithms.kinematics.frame_jacobian`).
"""
from __future__ import annotations

import os
import warnings
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from biobullet.algorithms.kinematics import body_placements, frame_jacobian, frame_placement
from biobullet.core.errors import ModelError
from biobullet.model.bundled import resolve_model_path
from biobullet.opensim.document import Document, PropertyReader, angular_speed_coordinates, angular_speed_rows, \
    read_document
from biobullet.opensim.translate import BodyLink

#: the actuator types `osim_actuators` maps (the importer does not report them)
INPUT_ACTUATORS = ("CoordinateActuator", "TorqueActuator", "PointActuator")


@dataclass(frozen=True)
class ActuatorInput:
    """One OpenSim actuator as an input: force = optimal_force × control (N or N·m).

    coordinate: the CoordinateActuator's coordinate; locked: that coordinate is locked (the lock takes the force, as
    in OpenSim: no effect). link_a, rotation_a, translation_a: body (A) as a link and the body frame in it
    (p_link = R p_body + t); link_b, rotation_b: TorqueActuator's body B ("" = ground).
    axis: unit torque axis or force direction; axis_global: it is in ground (else in body A). point, point_global:
    the PointActuator's point in body A (or in ground). rotations: the joint's three X-Y-Z rotation coordinates
    when the coordinate's OpenSim speed is an angular-velocity component (Ball, Free, Ellipsoid, Scapulothoracic;
    OpenSim applies the force along it), else empty.
    """

    name: str
    type: str
    optimal_force: float
    coordinate: str = ""
    link_a: str = ""
    rotation_a: np.ndarray | None = None
    translation_a: np.ndarray | None = None
    link_b: str = ""
    axis: np.ndarray | None = None
    axis_global: bool = True
    point: np.ndarray | None = None
    point_global: bool = False
    locked: bool = False
    rotations: tuple[str, ...] = ()


def _unit(vector, reader: PropertyReader, element, tag: str) -> np.ndarray:
    v = np.asarray(vector, dtype=float)
    norm = float(np.linalg.norm(v))
    if norm == 0.0:
        raise reader.source(element).error(tag, f"<{tag}> is zero", "a nonzero vector")
    return v / norm


def actuator_inputs(document: Document, bodies: Mapping[str, BodyLink]) -> tuple[ActuatorInput, ...]:
    """The document's enabled CoordinateActuators, TorqueActuators and PointActuators (see the module docstring)."""
    reader = PropertyReader(document.file)
    out: list[ActuatorInput] = []
    coordinates = {c.name: c for joint in document.joints for c in joint.coordinates}
    angular = angular_speed_coordinates(document)

    def body(force, tag: str, default: str | None = None) -> BodyLink | None:
        name = reader.property_text(force.element, tag, default).rsplit("/", 1)[-1]   # a body name (or a path)
        if not name:
            return None
        if name not in bodies:
            raise force.source.error(tag, f"no body named {name!r}", "one of " + ", ".join(sorted(bodies)))
        return bodies[name]

    for force in document.forces:
        if force.type not in INPUT_ACTUATORS:
            continue
        e = force.element
        if not reader.flag(e, "appliesForce", True) or reader.flag(e, "isDisabled"):
            continue
        optimal = reader.number(e, "optimal_force", 1.0)
        if force.type == "CoordinateActuator":
            name = reader.property_text(e, "coordinate")
            if name not in coordinates:
                raise force.source.error("coordinate", f"no coordinate named {name!r}", "a coordinate of the model")
            out.append(ActuatorInput(force.name, force.type, optimal, coordinate=name,
                                     locked=coordinates[name].locked, rotations=angular.get(name, ("", ()))[1]))
            continue
        if force.type == "TorqueActuator":
            a, b = body(force, "bodyA"), body(force, "bodyB", "")
            out.append(ActuatorInput(force.name, force.type, optimal, link_a=a.link, rotation_a=a.rotation,
                                     translation_a=a.translation, link_b=b.link if b is not None else "",
                                     axis=_unit(reader.numbers(e, "axis", 3), reader, e, "axis"),
                                     axis_global=reader.flag(e, "torque_is_global", True)))
            continue
        a = body(force, "body")
        out.append(ActuatorInput(force.name, force.type, optimal, link_a=a.link, rotation_a=a.rotation,
                                 translation_a=a.translation,
                                 axis=_unit(reader.numbers(e, "direction", 3), reader, e, "direction"),
                                 axis_global=reader.flag(e, "force_is_global", False),
                                 point=np.asarray(reader.numbers(e, "point", 3, (0.0, 0.0, 0.0)), dtype=float),
                                 point_global=reader.flag(e, "point_is_global", False)))
    return tuple(out)


def osim_actuators(path: str | os.PathLike[str]) -> dict[str, ActuatorInput]:
    """{name: ActuatorInput} of an .osim file's CoordinateActuators, TorqueActuators and PointActuators."""
    from biobullet.opensim import osim_translation
    file = resolve_model_path(path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        bodies = osim_translation(file).bodies
    return {a.name: a for a in actuator_inputs(read_document(file), bodies)}


def actuator_forces(model, actuators: Mapping[str, ActuatorInput], q, controls: Mapping[str, float]) -> np.ndarray:
    """Generalized force Q (over `model.coordinate_names`) of the actuators at controls {name: u} (others 0)."""
    x, _, gradient, _ = model.joint_state(q, np.zeros(model.nv))
    base = model.n_tangent - model.n_joints
    placements = body_placements(model, x)
    tree = np.zeros(model.n_tangent)
    for name, control in controls.items():
        if name not in actuators:
            raise ModelError(f"no actuator named {name!r}", attribute="controls",
                             expected="one of " + ", ".join(sorted(actuators)))
        a = actuators[name]
        magnitude = a.optimal_force * float(control)
        if a.type == "CoordinateActuator":
            if a.locked:
                continue
            if a.rotations:   # along OpenSim's speed u_k = E_k(q) q̇ of the joint's Euler angles
                missing = [c for c in a.rotations if c not in model.joint_names]
                if missing:
                    raise ModelError(f"actuator {name!r}: the rotation coordinate(s) {', '.join(missing)} of its "
                                     "joint are locked (its force along OpenSim's angular-velocity speed needs the "
                                     "three angles): not supported", attribute="controls",
                                     expected="the joint's three rotations unlocked")
                joints = [model.joint_names.index(c) for c in a.rotations]
                row = angular_speed_rows(x[joints[0]], x[joints[1]])[a.rotations.index(a.coordinate)]
                tree[[base + k for k in joints]] += magnitude * row
                continue
            if a.coordinate not in model.joint_names:
                raise ModelError(f"actuator {name!r}: its coordinate {a.coordinate!r} is not a joint of this model",
                                 attribute="controls", expected="an actuator on a coordinate of the model")
            tree[base + model.joint_names.index(a.coordinate)] += magnitude
            continue
        rotation_link, translation_link = frame_placement(model, x, a.link_a, placements)
        rotation_body = rotation_link @ a.rotation_a
        vector = magnitude * (a.axis if a.axis_global else rotation_body @ a.axis)
        if a.type == "TorqueActuator":
            tree += frame_jacobian(model, x, a.link_a)[3:].T @ vector
            if a.link_b:
                tree -= frame_jacobian(model, x, a.link_b)[3:].T @ vector
            continue
        point_body = (rotation_body.T @ (a.point - (rotation_link @ a.translation_a + translation_link))
                      if a.point_global else a.point)
        point_link = a.rotation_a @ point_body + a.translation_a
        tree += frame_jacobian(model, x, a.link_a, point_link)[:3].T @ vector
    return gradient.T @ tree


__all__ = ["INPUT_ACTUATORS", "ActuatorInput", "actuator_inputs", "osim_actuators", "actuator_forces"]
