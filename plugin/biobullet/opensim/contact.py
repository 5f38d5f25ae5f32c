"""OpenSim HuntCrossleyForce with ContactSphere / ContactHalfSpace → `<contact>` elements (Simbody's laws).

Simbody checks every pair of the force's surfaces on different bodies; a ContactSphere on a body against a
ContactHalfSpace on the ground, or on a body welded to it (a platform), becomes one `<contact>` (sphere centre and
radius in the body's link; the ground plane n·p = h with n = the half-space frame's −x axis, the half-space being
its +x side). Each surface i has stiffness kᵢ, dissipation cᵢ and static / dynamic / viscous friction; Simbody
combines them as

    k'ᵢ = kᵢ^(2/3),  K = (4/3) √R (k'₁k'₂/(k'₁+k'₂))^(3/2),  c = (c₁ k'₂ + c₂ k'₁)/(k'₁ + k'₂),
    μ = 2 μ₁μ₂/(μ₁ + μ₂) for each friction coefficient (0 when either is 0),

giving `normal_law="opensim_hunt_crossley"` (F = K δ^(3/2) (1 + (3/2) c δ̇)) with Simbody's point of application,
the plane point moved into the overlap by δ k'_sphere/(k'_sphere + k'_plane) (`point_depth`), where the slip
velocity is taken too, and `friction_law="opensim"` with the force's transition velocity. Other geometry pairs are
reported.
"""
from __future__ import annotations

import math
from xml.sax.saxutils import quoteattr

import numpy as np

from biobullet.opensim.constraints import FramePlacement
from biobullet.opensim.document import Component, Document, PropertyReader, find_frame, number_text, \
    orientation_matrix, resolve_path, vector_text
FRICTION_PROPERTIES = ("static_friction", "dynamic_friction", "viscous_friction")


def contact_elements(document: Document, place: FramePlacement, ground_link: str
                     ) -> tuple[list[str], set[str], list[str]]:
    """(`<contact>` lines, paths of the mapped HuntCrossleyForces and contact geometry, reports)."""
    reader = PropertyReader(document.file)
    known = set(document.bodies) | set(document.frames) | {document.ground}
    by_name = {geometry.name: geometry for geometry in document.contact_geometry.values()}
    lines: list[str] = []
    mapped: set[str] = set()
    reports: list[str] = []
    for force in document.forces:
        if force.type != "HuntCrossleyForce":
            continue
        e = force.element
        mapped.add(force.path)
        enabled = reader.flag(e, "appliesForce", True) and not reader.flag(e, "isDisabled")
        transition = reader.number(e, "transition_velocity", 0.01)
        surfaces = _surface_parameters(reader, force, by_name)
        mapped.update(by_name[name].path for name in surfaces)
        if not enabled:
            continue
        placed = {name: _geometry_placement(reader, by_name[name], place, known) for name in surfaces}
        names = list(surfaces)
        for i, first in enumerate(names):
            for second in names[i + 1:]:
                pair = sorted((by_name[first], by_name[second]), key=lambda g: g.type != "ContactSphere")
                sphere, other = pair
                a, b = placed[sphere.name], placed[other.name]
                if a is None or b is None or a[0] == b[0]:
                    continue   # a body not imported, or both on one body: Simbody skips the pair too
                if sphere.type != "ContactSphere" or other.type != "ContactHalfSpace" or b[0] != ground_link:
                    reports.append(f"HuntCrossleyForce {force.name}: the pair {sphere.type} {sphere.name} – "
                                   f"{other.type} {other.name} is not imported (only spheres on a half-space "
                                   "on the ground or on a body welded to it)")
                    continue
                lines.append(_contact_line(reader, force, sphere, a, surfaces[sphere.name], b,
                                           surfaces[other.name], transition))
    return lines, mapped, reports


def _surface_parameters(reader: PropertyReader, force: Component, by_name: dict[str, Component]
                        ) -> dict[str, tuple[float, ...]]:
    """Per geometry name: (stiffness, dissipation, static, dynamic, viscous friction)."""
    result: dict[str, tuple[float, ...]] = {}
    holder = force.element.find("HuntCrossleyForce__ContactParametersSet")
    if holder is None:
        holder = force.element.find("contact_parameters")
    for parameters in reader.named(holder):
        source = reader.source(parameters)
        values = (reader.number(parameters, "stiffness"), reader.number(parameters, "dissipation", 0.0),
                  *(reader.number(parameters, name, 0.0) for name in FRICTION_PROPERTIES))
        if not values[0] > 0.0:
            raise source.error("stiffness", f"stiffness {values[0]:g}", "a stiffness > 0 (N/m²)")
        for name, value in zip(("dissipation", *FRICTION_PROPERTIES), values[1:]):
            if value < 0.0:
                raise source.error(name, f"negative {name} {value:g}", f"{name} ≥ 0")
        for name in (reader.property_text(parameters, "geometry", "")).split():
            if name not in by_name:
                raise source.error("geometry", f"unknown contact geometry {name!r}",
                                   "the name of a ContactGeometrySet member")
            result[name] = values
    return result


def _geometry_placement(reader: PropertyReader, geometry: Component, place: FramePlacement, known: set[str]
                        ) -> tuple[str, np.ndarray, np.ndarray] | None:
    """(link, rotation, origin) of the geometry's own frame (its frame socket, then location and orientation)."""
    e = geometry.element
    frame = find_frame(resolve_path(geometry.path, reader.property_text(e, "socket_frame")), known,
                       geometry.source, "socket_frame")
    placed = place(frame)
    if placed is None:
        return None
    link, rotation, origin = placed
    location = np.asarray(reader.numbers(e, "location", 3, (0.0, 0.0, 0.0)))
    orientation = reader.numbers(e, "orientation", 3, (0.0, 0.0, 0.0))
    return link, rotation @ orientation_matrix(orientation), rotation @ location + origin


def _combined(a: float, b: float) -> float:
    """Simbody's combination of two friction coefficients: 2ab/(a + b), 0 if either is 0."""
    return 0.0 if a == 0.0 or b == 0.0 else 2.0 * a * b / (a + b)


def _contact_line(reader: PropertyReader, force: Component, sphere: Component, sphere_at, sphere_parameters,
                  plane_at, plane_parameters, transition: float) -> str:
    radius = reader.number(sphere.element, "radius")
    if not radius > 0.0:
        raise sphere.source.error("radius", f"radius {radius:g}", "a radius > 0 (m)")
    link, _, centre = sphere_at
    _, plane_rotation, plane_origin = plane_at
    normal = -plane_rotation[:, 0]   # the half-space is the +x side of its frame
    k_sphere, k_plane = sphere_parameters[0] ** (2.0 / 3.0), plane_parameters[0] ** (2.0 / 3.0)
    stiffness = 4.0 / 3.0 * math.sqrt(radius) * (k_sphere * k_plane / (k_sphere + k_plane)) ** 1.5
    dissipation = (sphere_parameters[1] * k_plane + plane_parameters[1] * k_sphere) / (k_sphere + k_plane)
    mu_static, mu_dynamic, mu_viscous = (_combined(a, b) for a, b in zip(sphere_parameters[2:], plane_parameters[2:]))

    friction = ('friction_law="none"' if mu_static == mu_dynamic == mu_viscous == 0.0 else
                f'friction_law="opensim" mu_static="{number_text(mu_static)}" '
                f'mu_dynamic="{number_text(mu_dynamic)}" mu_viscous="{number_text(mu_viscous)}" '
                f'transition_velocity="{number_text(transition)}"')
    return (f"    <contact name={quoteattr(f'{force.name}.{sphere.name}')} link={quoteattr(link)} "
            f'xyz="{vector_text(centre)}" radius="{number_text(radius)}" ground="plane" '
            f'ground_height="{number_text(float(normal @ plane_origin))}" ground_normal="{vector_text(normal)}" '
            f'normal_law="opensim_hunt_crossley" stiffness="{number_text(stiffness)}" '
            f'dissipation="{number_text(dissipation)}" point_depth="{number_text(k_sphere / (k_sphere + k_plane))}" '
            f'{friction}/>')
