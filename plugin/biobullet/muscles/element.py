"""The `<muscle>` element of the `<biobullet>` block: parse it into a `MuscleSetDescription`, and write one from
a description (the `.osim` importer's output). Units SI, angles in rad; points in the link's frame.

```xml
<muscle name="BIClong" model="degroote2016|millard2012|thelen2003" tendon="rigid|compliant"
        max_isometric_force="624.3" optimal_fiber_length="0.1157" tendon_slack_length="0.2723"
        pennation_angle="0" max_contraction_velocity="10" activation_time_constant="0.01"
        deactivation_time_constant="0.04" minimum_activation="0.01" fiber_damping="0.1">
  <parameter name="KshapeActive" value="0.45"/>    <!-- the model's EXTRA_PARAMETERS, by OpenSim name -->
  <point link="L" xyz="x y z"/>                                      <!-- fixed -->
  <point link="L" xyz="x y z" coordinate="q" range="lo hi"/>         <!-- conditional: on the path while q ∈ range -->
  <moving_point link="L" coordinate="q" range="lo hi">               <!-- moving: q clamped to range; at  -->
                          <!-- xyz + R(xyz_body_rotation) · (f_x, f_y, f_z) when those (default 0) are given -->
    <x type="simm_spline|piecewise_linear|polynomial" x="..." y="..."/>   <!-- polynomial: coefficients="..." -->
                                          <!-- (highest power first, OpenSim's PolynomialFunction order) -->
    <y .../>  <z .../>                                               <!-- an absent axis is 0 -->
  </moving_point>
  <wrap name="W" type="cylinder|sphere|ellipsoid|torus" link="L" xyz="..." xyz_body_rotation="..."
        radius=".." length=".." dimensions="a b c" inner_radius=".." outer_radius=".."
        quadrant="all|+x|-x|+y|-y|+z|-z" range="-1 -1" active="true"/>
</muscle>
```

Defaults are each model's OpenSim defaults (model `degroote2016`, tendon `rigid`). `coordinate` names a movable
joint of the file (its limits are the moving point's default clamp range).
"""
from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from collections.abc import Mapping

import numpy as np

from biobullet.core.attributes import (REQUIRED, check_known_attributes, choice, floats, name, number, text,
                                       vector3)
from biobullet.core.errors import ModelError, SourceRef, bare, did_you_mean
from biobullet.muscles.description import (DEFAULT_MODEL, EXTRA_PARAMETERS, MILLARD_CURVE_PROPERTIES, MODELS,
                                           QUADRANTS, WRAP_TYPES, MuscleDescription, MuscleSetDescription, PathPoint,
                                           PathWrap, WrapSurface)
from biobullet.muscles.location import FUNCTION_TYPES, LocationFunction
from biobullet.muscles.osim import (body_fixed_xyz, check_wrap_range, read_parameters, refuse_rigid_thelen,
                                    surface_dimensions)

MUSCLE_ATTRIBUTES = ("name", "model", "tendon", "max_isometric_force", "optimal_fiber_length", "tendon_slack_length",
                     "pennation_angle", "max_contraction_velocity", "activation_time_constant",
                     "deactivation_time_constant", "minimum_activation", "fiber_damping")
WRAP_ATTRIBUTES = ("name", "type", "link", "xyz", "xyz_body_rotation", "radius", "length", "dimensions",
                   "inner_radius", "outer_radius", "quadrant", "range", "active", "method")


def parse_muscles(file: str, block: ET.Element, links: set[str] | frozenset[str],
                  coordinate_ranges: Mapping[str, tuple[float, float]]) -> MuscleSetDescription:
    """Every `<muscle>` child of the `<biobullet>` element `block`; `links`: the file's link names,
    `coordinate_ranges`: movable joint name → (lower, upper) limit."""
    coordinates = tuple(coordinate_ranges)
    muscles: list[MuscleDescription] = []
    surfaces: dict[str, WrapSurface] = {}
    names: set[str] = set()
    for element in block.findall("muscle"):
        muscle, own_surfaces = _muscle(file, element, links, coordinate_ranges)
        if muscle.name in names:
            raise ModelError(f"muscle {muscle.name!r} is defined twice", file=file,
                             element=f'<muscle name="{bare(muscle.name, 60)}">', attribute="name",
                             expected="distinct muscle names")
        names.add(muscle.name)
        muscles.append(muscle)
        for surface in own_surfaces:   # muscles may share a surface by name, defined alike
            known = surfaces.get(surface.name)
            if known is not None and not _same_surface(known, surface):
                raise ModelError(f"wrap surface {surface.name!r} is defined differently by two muscles", file=file,
                                 element=f'<muscle name="{bare(muscle.name, 60)}"> <wrap>', attribute="name",
                                 expected="one definition per surface name")
            surfaces[surface.name] = surface
    frames = tuple(sorted({p.frame for m in muscles for p in m.points} | {s.frame for s in surfaces.values()}))
    return MuscleSetDescription(file=file, muscles=tuple(muscles), frames=frames, coordinates=coordinates,
                                coordinate_ranges=np.array([coordinate_ranges[c] for c in coordinates],
                                                           dtype=float).reshape(-1, 2),
                                surfaces=tuple(surfaces.values()))


def _muscle(file: str, element: ET.Element, links, coordinate_ranges) -> tuple[MuscleDescription, list[WrapSurface]]:
    label = bare(element.attrib.get("name", ""), 60)
    source = SourceRef(file, f'<muscle name="{label}">')
    check_known_attributes(source, element, MUSCLE_ATTRIBUTES)
    muscle_name = name(source, element, "name")
    model = choice(source, element, "model", tuple(MODELS), DEFAULT_MODEL, what="muscle model")
    extra: dict[str, float] = {}
    points: list[PathPoint] = []
    wraps: list[PathWrap] = []
    wrap_sources: list[SourceRef] = []
    surfaces: list[WrapSurface] = []
    for child in element:
        child_source = SourceRef(file, f'<muscle name="{label}"> <{bare(child.tag, 40)}>')
        if child.tag == "parameter":
            check_known_attributes(child_source, child, ("name", "value"))
            key = text(child_source, child, "name")
            if key not in EXTRA_PARAMETERS[model]:
                raise child_source.error("name", f"unknown {model} parameter {bare(key, 60)!r}"
                                         f"{did_you_mean(key, sorted(EXTRA_PARAMETERS[model]))}",
                                         _known_parameters(model, key))
            if key in extra:
                raise child_source.error("name", f"parameter {key!r} is given twice", "each parameter once")
            extra[key] = number(child_source, child, "value")
        elif child.tag in ("point", "moving_point"):
            points.append(_point(child_source, child, len(points) + 1, links, coordinate_ranges))
        elif child.tag == "wrap":
            surface, wrap = _wrap(child_source, child, f"{muscle_name}_wrap{len(wraps) + 1}", links)
            surfaces.append(surface)
            wraps.append(wrap)
            wrap_sources.append(child_source)
        else:
            raise child_source.error(None, f"unknown element <{bare(child.tag, 40)}>",
                                     "<point>, <moving_point>, <wrap> or <parameter>")
    if len(points) < 2:
        raise source.error(None, f"{len(points)} path point(s)", "at least 2 <point>/<moving_point> children")
    for wrap, wrap_source in zip(wraps, wrap_sources):
        check_wrap_range(wrap_source, wrap.range, len(points))
    tendon = choice(source, element, "tendon", ("rigid", "compliant"), "rigid")
    refuse_rigid_thelen(source, model, tendon, "tendon")
    parameters = read_parameters(lambda key, default, **checks: number(source, element, key, default, **checks),
                                 model, tendon, extra, source)
    return (MuscleDescription(name=muscle_name, model=model, parameters=parameters, points=tuple(points),
                              wraps=tuple(wraps)), surfaces)


def _known_parameters(model: str, key: str) -> str:
    """The parameter names `model` reads, for a message about `key` (Millard's many curve properties: those of
    the curve `key` names, else the curves)."""
    names = sorted(n for n in EXTRA_PARAMETERS[model] if "." not in n)
    if model != "millard2012":
        return "one of " + ", ".join(names)
    curve = key.partition(".")[0]
    if curve in MILLARD_CURVE_PROPERTIES:
        return f"{curve}.NAME with NAME one of {', '.join(MILLARD_CURVE_PROPERTIES[curve])}"
    return f"{' or '.join(names)}, or CURVE.NAME with CURVE one of {', '.join(MILLARD_CURVE_PROPERTIES)}"


def _same_surface(a: WrapSurface, b: WrapSurface) -> bool:
    return ((a.type, a.frame, a.dimensions, a.quadrant, a.active) == (b.type, b.frame, b.dimensions, b.quadrant, b.active)
            and np.array_equal(a.rotation, b.rotation) and np.array_equal(a.translation, b.translation))


def _coordinate(source: SourceRef, element: ET.Element, coordinate_ranges) -> str:
    return name(source, element, "coordinate", known=coordinate_ranges, kind="coordinate (movable joint)")


def _range(source: SourceRef, element: ET.Element, default) -> tuple[float, float]:
    values = floats(source, element, "range", default, count=2)
    if values[0] > values[1]:
        raise source.error("range", f"lower {values[0]:g} above upper {values[1]:g}", "lo ≤ hi")
    return float(values[0]), float(values[1])


def _point(source: SourceRef, element: ET.Element, number_in_path: int, links, coordinate_ranges) -> PathPoint:
    point_name = element.attrib.get("name", "").strip() or f"P{number_in_path}"
    link = name(source, element, "link", known=sorted(links), kind="link")
    if element.tag == "point":
        check_known_attributes(source, element, ("name", "link", "xyz", "coordinate", "range"))
        location = np.array(vector3(source, element, "xyz", REQUIRED))
        if "coordinate" not in element.attrib:
            if "range" in element.attrib:
                raise source.error("range", "a range without a coordinate", "coordinate= with range=")
            return PathPoint(name=point_name, frame=link, location=location)
        coordinate = _coordinate(source, element, coordinate_ranges)
        return PathPoint(name=point_name, frame=link, kind="conditional", location=location, coordinate=coordinate,
                         range=_range(source, element, REQUIRED))
    check_known_attributes(source, element, ("name", "link", "coordinate", "range", "xyz", "xyz_body_rotation"))
    coordinate = _coordinate(source, element, coordinate_ranges)
    clamp = _range(source, element, coordinate_ranges[coordinate])
    functions: list[LocationFunction | None] = [None, None, None]
    for child in element:
        axis_source = SourceRef(source.file, f"{source.element} <{bare(child.tag, 10)}>")
        if child.tag not in ("x", "y", "z"):
            raise axis_source.error(None, f"unknown element <{bare(child.tag, 40)}>", "<x>, <y> or <z>")
        axis = "xyz".index(child.tag)
        if functions[axis] is not None:
            raise axis_source.error(None, f"<{child.tag}> given twice", "each axis once")
        functions[axis] = _function(axis_source, child)
    if all(f is None for f in functions):
        raise source.error(None, "no <x>, <y> or <z> function", "at least one axis function")
    return PathPoint(name=point_name, frame=link, kind="moving", functions=tuple(functions),
                     coordinates=(coordinate,) * 3, range=clamp,
                     rotation=body_fixed_xyz(vector3(source, element, "xyz_body_rotation")),
                     translation=np.array(vector3(source, element, "xyz")))


def _function(source: SourceRef, element: ET.Element) -> LocationFunction:
    kind = choice(source, element, "type", tuple(FUNCTION_TYPES), what="function type")
    if kind == "polynomial":
        check_known_attributes(source, element, ("type", "coefficients"))
        return FUNCTION_TYPES[kind](floats(source, element, "coefficients", max_count=64), ())
    check_known_attributes(source, element, ("type", "x", "y"))
    xs = floats(source, element, "x", min_count=2, max_count=100_000)
    ys = floats(source, element, "y", count=len(xs))
    if np.any(np.diff(xs) <= 0.0):
        raise source.error("x", "not strictly increasing", "x0 < x1 < ...")
    return FUNCTION_TYPES[kind](xs, ys)


def _wrap(source: SourceRef, element: ET.Element, default_name: str, links) -> tuple[WrapSurface, PathWrap]:
    check_known_attributes(source, element, WRAP_ATTRIBUTES)
    kind = choice(source, element, "type", WRAP_TYPES, what="wrap surface type")
    link = name(source, element, "link", known=sorted(links), kind="link")
    dimensions = surface_dimensions(
        kind, source, lambda key, default: number(source, element, key, default, positive=True),
        lambda key: floats(source, element, key, REQUIRED, count=3, positive=True))
    bounds = floats(source, element, "range", (-1, -1), count=2)
    surface = WrapSurface(name=text(source, element, "name", default_name), type=kind, frame=link,
                          dimensions=dimensions,
                          rotation=body_fixed_xyz(vector3(source, element, "xyz_body_rotation")),
                          translation=np.array(vector3(source, element, "xyz")),
                          quadrant=choice(source, element, "quadrant", QUADRANTS, "all"),
                          active=text(source, element, "active", "true").lower() != "false")
    return surface, PathWrap(surface=surface.name, method=text(source, element, "method", "hybrid"),
                             range=(int(bounds[0]), int(bounds[1])))


# ------------------------------------------------------------------------------------------------ writing
def _numbers(values) -> str:
    return " ".join(repr(float(v)) for v in values)


def muscle_elements(muscle_set: MuscleSetDescription) -> list[ET.Element]:
    """`<muscle>` elements (to append to a `<biobullet>` block) for every muscle of `muscle_set`; frames are
    written as link names unchanged. Parsing them back gives the same paths and parameters."""
    surfaces = {s.name: s for s in muscle_set.surfaces}
    ranges = dict(zip(muscle_set.coordinates, map(tuple, np.asarray(muscle_set.coordinate_ranges).reshape(-1, 2))))
    elements = []
    for muscle in muscle_set.muscles:
        p = muscle.parameters
        element = ET.Element("muscle", {
            "name": muscle.name, "model": muscle.model, "tendon": p.tendon,
            "max_isometric_force": repr(p.max_isometric_force), "optimal_fiber_length": repr(p.optimal_fiber_length),
            "tendon_slack_length": repr(p.tendon_slack_length), "pennation_angle": repr(p.pennation_angle),
            "max_contraction_velocity": repr(p.max_contraction_velocity),
            "activation_time_constant": repr(p.activation_time_constant),
            "deactivation_time_constant": repr(p.deactivation_time_constant),
            "minimum_activation": repr(p.minimum_activation), "fiber_damping": repr(p.fiber_damping)})
        for key, value in p.extra:
            ET.SubElement(element, "parameter", {"name": key, "value": repr(float(value))})
        for point in muscle.points:
            element.append(_point_element(point, ranges))
        for wrap in muscle.wraps:
            s = surfaces[wrap.surface]
            attributes = {"name": s.name, "type": s.type, "link": s.frame, "xyz": _numbers(s.translation),
                          "xyz_body_rotation": _numbers(_xyz_angles(s.rotation)), "quadrant": s.quadrant,
                          "range": f"{wrap.range[0]} {wrap.range[1]}", "method": wrap.method,
                          "active": "true" if s.active else "false"}
            keys = {"cylinder": ("radius", "length"), "sphere": ("radius",), "torus": ("inner_radius", "outer_radius")}
            if s.type == "ellipsoid":
                attributes["dimensions"] = _numbers(s.dimensions)
            else:
                attributes.update({k: repr(float(v)) for k, v in zip(keys[s.type], s.dimensions)})
            ET.SubElement(element, "wrap", attributes)
        elements.append(element)
    return elements


def _point_element(point: PathPoint, ranges) -> ET.Element:
    if point.kind != "moving":
        attributes = {"name": point.name, "link": point.frame, "xyz": _numbers(point.location)}
        if point.kind == "conditional":
            attributes.update(coordinate=point.coordinate, range=_numbers(point.range))
        return ET.Element("point", attributes)
    names = {c for c in point.coordinates if c is not None}
    if len(names) != 1:
        raise ModelError(f"moving point {point.name!r}: a <moving_point> has one coordinate for its three axes",
                         element=f"<moving_point name=\"{bare(point.name, 60)}\">",
                         expected="x, y and z functions of the same coordinate")
    coordinate = names.pop()
    clamp = point.range if point.range is not None else ranges[coordinate]
    element = ET.Element("moving_point", {"name": point.name, "link": point.frame, "coordinate": coordinate,
                                          "range": _numbers(clamp)})
    if not np.array_equal(point.rotation, np.eye(3)):
        element.set("xyz_body_rotation", _numbers(_xyz_angles(point.rotation)))
    if np.any(point.translation != 0.0):
        element.set("xyz", _numbers(point.translation))
    for axis, function in zip("xyz", point.functions):
        if function is None:
            continue
        kind, first, second = function.definition
        if kind == "polynomial":
            ET.SubElement(element, axis, {"type": kind, "coefficients": _numbers(first)})
        else:
            ET.SubElement(element, axis, {"type": kind, "x": _numbers(first), "y": _numbers(second)})
    return element


def _xyz_angles(rotation: np.ndarray) -> tuple[float, float, float]:
    """Body-fixed x-y-z angles of a rotation (inverse of `osim.body_fixed_xyz`)."""
    r = np.asarray(rotation, dtype=float)
    b = math.asin(max(-1.0, min(1.0, r[0, 2])))
    a = math.atan2(-r[1, 2], r[2, 2])
    c = math.atan2(-r[0, 1], r[0, 0])
    return a, b, c


__all__ = ["parse_muscles", "muscle_elements"]
