"""An OpenSim model's muscles as `<muscle>` elements of the translated URDF: the paths of
`muscles.osim.load_osim_muscles` carried from OpenSim body frames to the links that hold those bodies
(p_link = R · p_body + t, `translate.BodyLink`), so `load_model("x.osim")` and the URDF `convert` writes carry the
same muscles. Coordinates keep their names: every free OpenSim coordinate is a joint of the translation (a coupled
coordinate is a joint driven by its coupler's function); a locked coordinate (no joint: held at its default) fixes
the points that depend on it at that value (`freeze_coordinates`).
"""
from __future__ import annotations

import dataclasses
import xml.etree.ElementTree as ET
from collections.abc import Collection
from typing import TYPE_CHECKING

import numpy as np

from biobullet.core.errors import ModelError
from biobullet.muscles.description import MuscleSetDescription, PathPoint, WrapSurface
from biobullet.muscles.element import muscle_elements
from biobullet.muscles.location import polynomial
from biobullet.muscles.path import CONDITIONAL_SLACK
from biobullet.muscles.osim import MUSCLE_CLASSES, load_osim_muscles

if TYPE_CHECKING:   # translate imports this module
    from biobullet.opensim.translate import BodyLink


def muscles_on_links(muscle_set: MuscleSetDescription, bodies: dict[str, "BodyLink"]) -> MuscleSetDescription:
    """`muscle_set` with every point and wrap surface re-expressed in the link frame of its body."""
    def placed(frame: str) -> "BodyLink":
        if frame not in bodies:
            raise ModelError(f"muscle path frame {frame!r} is not an imported body", file=muscle_set.file,
                             expected="a body connected to the ground by joints")
        return bodies[frame]

    def point_on_link(point: PathPoint) -> PathPoint:
        body = placed(point.frame)
        r, t = body.rotation, body.translation
        if point.kind == "moving":   # p = R_b (R_p f(c) + t_p) + t_b
            return dataclasses.replace(point, frame=body.link, rotation=r @ point.rotation,
                                       translation=r @ point.translation + t)
        return dataclasses.replace(point, frame=body.link, location=r @ point.location + t)

    def surface_on_link(surface: WrapSurface) -> WrapSurface:
        body = placed(surface.frame)
        return dataclasses.replace(surface, frame=body.link, rotation=body.rotation @ surface.rotation,
                                   translation=body.rotation @ surface.translation + body.translation)

    muscles = tuple(dataclasses.replace(m, points=tuple(point_on_link(p) for p in m.points))
                    for m in muscle_set.muscles)
    frames = tuple(dict.fromkeys(placed(f).link for f in muscle_set.frames))
    return dataclasses.replace(muscle_set, muscles=muscles, frames=frames,
                               surfaces=tuple(surface_on_link(s) for s in muscle_set.surfaces))


def freeze_coordinates(muscle_set: MuscleSetDescription, constant: dict[str, float]) -> MuscleSetDescription:
    """`muscle_set` with the coordinates of `constant` (name → value) held: a conditional point on one becomes fixed
    (or leaves the path, OpenSim's ± 1e-5 range test), a moving point's axes that follow one become constants (the
    value clamped to the point's range, as OpenSim's MovingPathPoint does)."""
    ranges = dict(zip(muscle_set.coordinates, np.asarray(muscle_set.coordinate_ranges).reshape(-1, 2)))

    def frozen(point: PathPoint) -> PathPoint | None:
        if point.kind == "conditional" and point.coordinate in constant:
            value = constant[point.coordinate]
            if not point.range[0] - CONDITIONAL_SLACK <= value <= point.range[1] + CONDITIONAL_SLACK:
                return None
            return dataclasses.replace(point, kind="fixed", coordinate=None, range=None)
        if point.kind != "moving" or not any(c in constant for c in point.coordinates):
            return point
        functions, coordinates = list(point.functions), list(point.coordinates)
        for axis, name in enumerate(point.coordinates):
            if name in constant and functions[axis] is not None:
                lo, hi = point.range if point.range is not None else ranges[name]
                functions[axis] = polynomial([functions[axis](min(max(constant[name], lo), hi))])
                coordinates[axis] = None
        moving = {c for c in coordinates if c is not None}
        if not moving:
            location = np.array([0.0 if f is None else f(0.0) for f in functions])
            return PathPoint(name=point.name, frame=point.frame,
                             location=point.rotation @ location + point.translation)
        coordinates = [moving.pop() if c is None and len(moving) == 1 else c for c in coordinates]
        return dataclasses.replace(point, functions=tuple(functions), coordinates=tuple(coordinates))

    muscles = []
    for muscle in muscle_set.muscles:
        points = tuple(p for p in (frozen(p) for p in muscle.points) if p is not None)
        muscles.append(dataclasses.replace(muscle, points=points))
    return dataclasses.replace(muscle_set, muscles=tuple(muscles))


def muscle_lines(file: str, bodies: dict[str, "BodyLink"], constant: dict[str, float],
                 disabled: Collection[str] = (), instant: Collection[str] = ()) -> tuple[list[str], list[str]]:
    """(XML lines of the `<muscle>` elements, reports) for the muscles of OpenSim file `file`; `constant`: the
    locked coordinates' values; `disabled`: names of muscles switched off in the file (left out); `instant`: names
    of muscles with ignore_activation_dynamics (imported with their activation dynamics, reported). A muscle that
    cannot be represented is reported (one line naming it and why), not imported, and does not stop the skeleton
    from loading."""
    try:
        muscle_set = freeze_coordinates(load_osim_muscles(file), constant)
    except ModelError as error:
        return [], [f"muscles not imported: {error}"]
    lines, reports = [], []
    for muscle in muscle_set.muscles:
        if muscle.name in disabled:
            continue
        if muscle.name in instant:
            reports.append(f"muscle {muscle.name}: ignore_activation_dynamics is not imported (its activation "
                           "follows the excitation through the activation dynamics, not instantly)")
        used = {wrap.surface for wrap in muscle.wraps}
        surfaces = tuple(s for s in muscle_set.surfaces if s.name in used)
        one = dataclasses.replace(muscle_set, muscles=(muscle,), surfaces=surfaces, frames=tuple(dict.fromkeys(
            [p.frame for p in muscle.points] + [s.frame for s in surfaces])))
        try:
            elements = muscle_elements(muscles_on_links(one, bodies))
        except ModelError as error:
            reports.append(f"muscle {muscle.name}: not imported ({error})")
            continue
        for element in elements:
            ET.indent(element, space="  ", level=0)
            lines.extend("    " + line for line in ET.tostring(element, encoding="unicode").splitlines())
    return lines, reports


def represented_muscle_types() -> frozenset[str]:
    """OpenSim force classes imported as `<muscle>` elements."""
    return frozenset(MUSCLE_CLASSES)


__all__ = ["muscles_on_links", "freeze_coordinates", "muscle_lines", "represented_muscle_types"]
