"""OpenSim forces that have a biobullet counterpart → `<biobullet>` force elements.

CoordinateLimitForce → `<coordinate_limit>` (OpenSim's law, `forces.elements.CoordinateLimit`; OpenSim gives a
rotational coordinate's limits, transition, stiffness and damping per degree: converted to radians here),
SpringGeneralizedForce → `<joint_spring>` (τ = −k (q − rest_length) − viscosity q̇), PointToPointSpring →
`<spring>` (tension k (L − rest_length), its points moved from the body frames to the link frames). Anything
else is left to `unmapped_reports`.
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING
from xml.sax.saxutils import quoteattr

import numpy as np

from biobullet.opensim.document import MAPPED_FORCES, Component, Document, PropertyReader, \
    angular_speed_coordinates, find_frame, number_text, resolve_path

if TYPE_CHECKING:
    from biobullet.opensim.translate import BodyLink


def force_elements(document: Document, bodies: Mapping[str, BodyLink], joints: set[str],
                   rotational: Mapping[str, bool]) -> tuple[list[str], set[str], list[str]]:
    """(element lines, paths of the mapped forces, reports) for the document's forces. `joints`: coordinates
    that are joints of the translated model (not locked); `rotational`: each coordinate's OpenSim motion type is
    Rotational (`document.opensim_rotational`)."""
    reader = PropertyReader(document.file)
    lines: list[str] = []
    mapped: set[str] = set()
    reports: list[str] = []
    angular = angular_speed_coordinates(document)
    for force in document.forces:
        if force.type not in MAPPED_FORCES:
            continue
        enabled = reader.flag(force.element, "appliesForce", True) and not reader.flag(force.element, "isDisabled")
        if not enabled:
            mapped.add(force.path)   # switched off in OpenSim: nothing to apply
            continue
        if force.type == "PointToPointSpring":
            line = _spring(reader, document, force, bodies)
        else:
            coordinate = reader.property_text(force.element, "coordinate")
            if coordinate not in joints:
                reports.append(f"{force.type} {force.name}: its coordinate {coordinate!r} is locked or unknown; "
                               "not imported")
                mapped.add(force.path)
                continue
            if coordinate in angular:   # OpenSim's force acts along u = ω's component, its damping reads it
                reports.append(f"{force.type} {force.name}: its coordinate {coordinate!r} rotates {angular[coordinate][0]}, "
                               "whose OpenSim speed is an angular-velocity component (not the angle's "
                               "rate, as here): not imported")
                mapped.add(force.path)
                continue
            if force.type == "CoordinateLimitForce":
                line = _limit(reader, force, coordinate, rotational.get(coordinate, True))
            else:
                e = force.element
                line = (f"    <joint_spring name={quoteattr(force.name)} joint={quoteattr(coordinate)} "
                        f'stiffness="{number_text(reader.number(e, "stiffness", 0.0))}" '
                        f'rest="{number_text(reader.number(e, "rest_length", 0.0))}" '
                        f'damping="{number_text(reader.number(e, "viscosity", 0.0))}"/>')
        lines.append(line)
        mapped.add(force.path)
    return lines, mapped, reports


def _limit(reader: PropertyReader, force: Component, coordinate: str, rotational: bool) -> str:
    e = force.element
    scale = math.pi / 180.0 if rotational else 1.0   # OpenSim: degrees for a rotational coordinate
    values = {"upper": reader.number(e, "upper_limit") * scale,
              "upper_stiffness": reader.number(e, "upper_stiffness") / scale,
              "lower": reader.number(e, "lower_limit") * scale,
              "lower_stiffness": reader.number(e, "lower_stiffness") / scale,
              "damping": reader.number(e, "damping", 0.0) / scale,
              "transition": reader.number(e, "transition") * scale}
    text = " ".join(f'{key}="{number_text(value)}"' for key, value in values.items())
    return f"    <coordinate_limit name={quoteattr(force.name)} joint={quoteattr(coordinate)} {text}/>"


def _spring(reader: PropertyReader, document: Document, force: Component, bodies: Mapping[str, BodyLink]) -> str:
    e = force.element
    known = set(document.bodies) | {document.ground}
    ends = []
    for socket, point in (("socket_body1", "point1"), ("socket_body2", "point2")):
        path = find_frame(resolve_path(force.path, reader.property_text(e, socket)), known, force.source, socket)
        name = document.ground.strip("/") if path == document.ground else document.bodies[path].name
        link = bodies[name]
        xyz = link.rotation @ np.asarray(reader.numbers(e, point, 3, (0.0, 0.0, 0.0))) + link.translation
        ends.append((link.link, xyz))
    (link_a, xyz_a), (link_b, xyz_b) = ends
    return (f"    <spring name={quoteattr(force.name)} link_a={quoteattr(link_a)} "
            f'xyz_a="{" ".join(number_text(v) for v in xyz_a)}" link_b={quoteattr(link_b)} '
            f'xyz_b="{" ".join(number_text(v) for v in xyz_b)}" '
            f'stiffness="{number_text(reader.number(e, "stiffness"))}" '
            f'rest_length="{number_text(reader.number(e, "rest_length", 0.0))}" damping="0"/>')
