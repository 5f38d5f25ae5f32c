"""OpenSim muscles from a `.osim` file (format 4.x, `OpenSimDocument Version` ≥ 40000) into a
`MuscleSetDescription`: the ForceSet's Thelen2003Muscle, Millard2012EquilibriumMuscle and DeGrooteFregly2016Muscle
with their GeometryPath (PathPointSet: PathPoint, ConditionalPathPoint, MovingPathPoint; PathWrapSet), the bodies'
(and ground's) WrapObjectSet surfaces, and the coordinates' ranges (they clamp moving points).

Frames are OpenSim body names (`ground` for the world); a point on a PhysicalOffsetFrame is carried to the
offset frame's body (rotation · location + translation). Read with the project's bounded XML reader; nothing in
the file executes. Every bad value is a ModelError naming the file, the element and the property.
"""
from __future__ import annotations

import math
import os
import re
import xml.etree.ElementTree as ET

import numpy as np

from biobullet.core.attributes import REQUIRED, to_float, to_floats
from biobullet.core.errors import ModelError, SourceRef, bare
from biobullet.model.urdf import parse_xml, read_bytes
from biobullet.muscles.description import (EXTRA_PARAMETERS, FLAG_PARAMETERS, MILLARD_CURVE_PROPERTIES,
                                           MuscleDescription, MuscleParameters, MuscleSetDescription, PathPoint,
                                           PathWrap, WrapSurface)
from biobullet.muscles.bezier import MILLARD_MIN_DAMPING
from biobullet.muscles.location import LocationFunction, piecewise_linear, polynomial, simm_spline

MUSCLE_CLASSES = {"DeGrooteFregly2016Muscle": "degroote2016", "Millard2012EquilibriumMuscle": "millard2012",
                  "Thelen2003Muscle": "thelen2003"}
WRAP_CLASSES = {"WrapCylinder": "cylinder", "WrapSphere": "sphere", "WrapEllipsoid": "ellipsoid",
                "WrapTorus": "torus"}
#: OpenSim 4.6's wrap dimensions where the file gives none (its defaults, which it does not write)
WRAP_DEFAULTS = {("cylinder", "radius"): 1.0, ("sphere", "radius"): 0.05, ("torus", "inner_radius"): 0.01,
                 ("torus", "outer_radius"): 0.05}
#: the quadrant spellings OpenSim 4.6 accepts (WrapObject::extendFinalizeFromProperties; "Unassigned": not given)
QUADRANTS = {**{f"{sign}{axis}": f"{sign or '+'}{axis.lower()}" for sign in ("", "+", "-") for axis in "xyzXYZ"},
             "all": "all", "ALL": "all", "All": "all", "Unassigned": "all"}
#: an element name with `::` (OpenSim's nested class names, e.g. `HuntCrossleyForce::ContactParametersSet`)
_DOUBLE_COLON_NAME = re.compile(rb"<(/?)([A-Za-z_][A-Za-z0-9_.\-]*(?:::[A-Za-z0-9_.\-]+)+)")
#: deepest chain of MultiplierFunctions accepted (a file nesting thousands is an attack, not a model)
MAX_FUNCTION_NESTING = 16
#: a Coordinate's range where the file gives none (OpenSim 4.6's default; it writes no <range> when it is this)
DEFAULT_COORDINATE_RANGE = (-10.0, 10.0)
#: each model's defaults where the file leaves a property out (OpenSim 4.6 constructProperties)
DEFAULTS = {
    "thelen2003": {"activation_time_constant": 0.015, "deactivation_time_constant": 0.050,
                   "minimum_activation": 0.01, "fiber_damping": 0.0},
    "millard2012": {"activation_time_constant": 0.010, "deactivation_time_constant": 0.040,
                    "minimum_activation": 0.01, "fiber_damping": 0.1},
    "degroote2016": {"activation_time_constant": 0.015, "deactivation_time_constant": 0.060,
                     "minimum_activation": 0.0, "fiber_damping": 0.0},
}


def load_osim_muscles(path: str | os.PathLike[str], root: ET.Element | None = None) -> MuscleSetDescription:
    """The muscles of an OpenSim model file (module docstring); `root`: its XML root when already parsed."""
    file = os.fspath(path)
    root = osim_root(file) if root is None else root
    if root.tag != "OpenSimDocument":
        raise ModelError(f"root element is <{bare(root.tag, 40)}>", file=file, expected="<OpenSimDocument>")
    check_version(file, root)
    model = root.find("Model")
    if model is None:
        raise ModelError("no <Model> element", file=file, element="<OpenSimDocument>")
    reader = _Reader(file, model)
    return reader.muscle_set()


def osim_root(file: str) -> ET.Element:
    """The XML root of `file` (the project's bounded reader), element names with `::` (OpenSim's nested class
    names: legal XML 1.0 names that namespace-aware parsers reject) spelled `__`."""
    data = _DOUBLE_COLON_NAME.sub(lambda m: b"<" + m.group(1) + m.group(2).replace(b"::", b"__"), read_bytes(file))
    root = parse_xml(file, data)
    # OpenSim reads an object with a `file` attribute from that file (`<ForceSet file="forces.xml"/>`): the
    # importer reads no other file (a stranger's model could name any), and the component was silently empty
    for element in root.iter():
        included = element.attrib.get("file")
        if included is not None:
            name = element.attrib.get("name")
            raise ModelError(f"OpenSim reads this component from the file {bare(included, 80)!r}; the importer reads "
                             "no other file", file=file, attribute="file",
                             element=f"<{bare(element.tag, 40)}" + (f' name="{bare(name, 40)}">' if name else ">"),
                             expected="the component written into the model (open and save the model in OpenSim, "
                             "or paste the file's contents in)")
    return root


#: the first OpenSim 4 document version: OpenSim 3 files (joints inside bodies) are not read
MIN_VERSION = 40000


def check_version(file: str, root: ET.Element) -> None:
    """A ModelError naming `<OpenSimDocument Version>` unless `root` is an OpenSim 4 document (Version ≥
    MIN_VERSION, a decimal integer: a 5,000-digit or superscript "digit" is no version)."""
    version = root.attrib.get("Version", "")
    digits = version.strip()
    if not (digits.isascii() and digits.isdigit() and len(digits) <= 9):
        raise ModelError(f"OpenSim document version {bare(version, 20)!r} is not a version number", file=file,
                         element="<OpenSimDocument>", attribute="Version",
                         expected=f"a decimal integer ≥ {MIN_VERSION} (OpenSim 4)")
    if int(digits) < MIN_VERSION:
        raise ModelError(f"OpenSim document version {bare(version, 20)!s}: OpenSim 3 files (joints inside bodies) "
                         "are not read; open and save the file with OpenSim 4 first", file=file,
                         element="<OpenSimDocument>", attribute="Version", expected=f"≥ {MIN_VERSION}")


class _Reader:
    def __init__(self, file: str, model: ET.Element) -> None:
        self.file = file
        self.model = model
        # component path → (parent path, rotation, translation) of every physical frame
        self.frames: dict[str, tuple[str | None, np.ndarray, np.ndarray]] = {"/ground": (None, np.eye(3), np.zeros(3))}
        self.bodies: list[str] = []
        self.surfaces: list[WrapSurface] = []
        self.coordinates: list[str] = []
        self.ranges: list[tuple[float, float]] = []
        ground = model.find("Ground")
        if ground is not None:
            self._read_frame_components("/ground", ground, "ground")
        for body in _objects(model.find("BodySet")):
            if body.tag != "Body":
                continue
            name = self._name(body)
            self.bodies.append(name)
            self.frames[f"/bodyset/{name}"] = (None, np.eye(3), np.zeros(3))
            self._read_frame_components(f"/bodyset/{name}", body, name)
        for joint in _objects(model.find("JointSet")):
            name = self._name(joint)
            for frame in joint.findall("frames/PhysicalOffsetFrame"):
                self._offset_frame(f"/jointset/{name}", frame)
            for coordinate in joint.findall("coordinates/Coordinate"):
                self.coordinates.append(self._name(coordinate))
                source = self._source(coordinate)
                values = _floats(source, coordinate, "range", 2, DEFAULT_COORDINATE_RANGE)
                self.ranges.append((values[0], values[1]))

    # ----------------------------------------------------------------------------------------- helpers
    def _source(self, element: ET.Element) -> SourceRef:
        name = element.attrib.get("name")
        return SourceRef(self.file, f'<{element.tag} name="{bare(name, 60)}">' if name else f"<{element.tag}>")

    def _name(self, element: ET.Element) -> str:
        name = element.attrib.get("name", "").strip()
        if not name:
            raise self._source(element).error("name", "missing required attribute", "a non-empty name")
        return name

    def _read_frame_components(self, owner: str, element: ET.Element, body: str) -> None:
        for frame in element.findall("components/PhysicalOffsetFrame"):
            self._offset_frame(owner, frame)
        for surface in _objects(element.find("WrapObjectSet")):
            if surface.tag in WRAP_CLASSES:
                self.surfaces.append(self._surface(surface, body))

    def _offset_frame(self, owner: str, frame: ET.Element) -> None:
        source = self._source(frame)
        parent = _text(frame, "socket_parent")
        if not parent:
            raise source.error("socket_parent", "missing", "the path of the parent frame")
        path = f"{owner}/{self._name(frame)}"
        rotation = body_fixed_xyz(_floats(source, frame, "orientation", 3, (0.0, 0.0, 0.0)))
        translation = np.array(_floats(source, frame, "translation", 3, (0.0, 0.0, 0.0)))
        self.frames[path] = (resolve_path(path, parent), rotation, translation)

    def _surface(self, element: ET.Element, body: str) -> WrapSurface:
        source = self._source(element)
        kind = WRAP_CLASSES[element.tag]
        # a property at OpenSim's default is not written by OpenSim (printToXML): its default then
        dimensions = surface_dimensions(
            kind, source,
            lambda key, default: _number(source, element, key, WRAP_DEFAULTS.get((kind, key), default), positive=True),
            lambda key: _floats(source, element, key, 3, (0.05, 0.05, 0.05), positive=True))
        written = (_text(element, "quadrant") or "Unassigned").strip()
        quadrant = QUADRANTS.get(written)
        if quadrant is None:
            raise source.error("quadrant", f"unknown quadrant {bare(written, 20)!r}", "all, x, -x, y, -y, z or -z")
        active = (_text(element, "active") or "true").strip().lower() != "false"
        return WrapSurface(name=self._name(element), type=kind, frame=body, dimensions=tuple(dimensions),
                           rotation=body_fixed_xyz(_floats(source, element, "xyz_body_rotation", 3, (0.0, 0.0, 0.0))),
                           translation=np.array(_floats(source, element, "translation", 3, (0.0, 0.0, 0.0))),
                           quadrant=quadrant, active=active)

    def _placement(self, path: str, source: SourceRef) -> tuple[str, np.ndarray, np.ndarray]:
        """(body name, rotation, translation) of frame `path` in its body."""
        rotation, translation = np.eye(3), np.zeros(3)
        seen = 0
        while True:
            if path not in self.frames:
                raise source.error("socket_parent_frame", f"unknown frame {path!r}",
                                   "/ground, /bodyset/BODY or an offset frame of the model")
            parent, r, t = self.frames[path]
            if parent is None:
                return ("ground" if path == "/ground" else path.split("/")[2]), rotation, translation
            rotation, translation = r @ rotation, r @ translation + t
            path = parent
            seen += 1
            if seen > len(self.frames):
                raise source.error("socket_parent_frame", "offset frames form a cycle", "a chain of frames")

    # ----------------------------------------------------------------------------------------- muscles
    def muscle_set(self) -> MuscleSetDescription:
        muscles = []
        for element in _objects(self.model.find("ForceSet")):
            if element.tag in MUSCLE_CLASSES:
                muscles.append(self._muscle(element))
        frames = tuple(dict.fromkeys(["ground", *self.bodies]))
        return MuscleSetDescription(file=self.file, muscles=tuple(muscles), frames=frames,
                                    coordinates=tuple(self.coordinates),
                                    coordinate_ranges=np.array(self.ranges, dtype=float).reshape(-1, 2),
                                    surfaces=tuple(self.surfaces))

    def _muscle(self, element: ET.Element) -> MuscleDescription:
        source = self._source(element)
        name = self._name(element)
        model = MUSCLE_CLASSES[element.tag]
        extra: dict[str, float] = {}
        read_names = EXTRA_PARAMETERS[model]
        for child in element:   # the properties the model reads (OpenSim's others, appliesForce ..., are not)
            written = (child.text or "").strip().lower()
            # a number (true/false for a flag), else refused; empty: OpenSim's unset optional property
            if child.tag in read_names and len(child) == 0 and written:
                extra[child.tag] = (float(written == "true") if child.tag in FLAG_PARAMETERS
                                    and written in ("true", "false") else _number(source, element, child.tag))
        for curve in MILLARD_CURVE_PROPERTIES:
            node = element.find(curve)
            if node is not None:
                for child in node:
                    if f"{curve}.{child.tag}" in read_names and len(child) == 0 and (child.text or "").strip():
                        extra[f"{curve}.{child.tag}"] = _number(SourceRef(self.file, f'<{curve}> of muscle '
                                                                          f'"{bare(name, 60)}"'), node, child.tag)
        compliant = (_text(element, "ignore_tendon_compliance") or "false").strip().lower() != "true"
        mode = (_text(element, "tendon_compliance_dynamics_mode") or "explicit").strip()
        if model == "degroote2016" and compliant and mode != "explicit":
            # implicit: the tendon force's derivative is a discrete variable a solver sets (OpenSim's Manager keeps
            # the tendon forces constant), not a dynamics ours can follow
            raise source.error("tendon_compliance_dynamics_mode", f"{bare(mode, 20)!r} is not implemented",
                               "explicit (the default)")
        refuse_rigid_thelen(source, model, "compliant" if compliant else "rigid", "ignore_tendon_compliance")
        parameters = read_parameters(
            lambda key, default, **checks: _number(source, element, OSIM_NAMES.get(key, key), default, **checks),
            model, "compliant" if compliant else "rigid", extra, source, (1000.0, 0.1, 0.2))
        path = element.find("GeometryPath")
        if path is None:   # OpenSim 4.5's other path classes (FunctionBasedPath, Scholz2015GeometryPath) are not read
            other = next((child.tag for child in element if child.tag.endswith("Path")), None)
            raise source.error(other or "GeometryPath", f"<{bare(other, 40)}> paths are not implemented" if other
                               else "the muscle has no <GeometryPath>", "a GeometryPath with points")
        points = tuple(self._point(p, name) for p in _objects(path.find("PathPointSet")))
        if len(points) < 2:
            raise source.error("PathPointSet", f"{len(points)} path point(s)", "at least 2 path points")
        surface_names = {s.name for s in self.surfaces}
        wraps = []
        for wrap in _objects(path.find("PathWrapSet")):
            wrap_source = self._source(wrap)
            surface = (_text(wrap, "wrap_object") or "").strip()
            if surface not in surface_names:
                raise wrap_source.error("wrap_object", f"unknown wrap object {surface!r}",
                                        "a wrap object of a body's WrapObjectSet")
            bounds = check_wrap_range(wrap_source, _floats(wrap_source, wrap, "range", 2, (-1, -1)), len(points))
            wraps.append(PathWrap(surface=surface, method=(_text(wrap, "method") or "hybrid").strip(),
                                  range=(int(bounds[0]), int(bounds[1]))))
        return MuscleDescription(name=name, model=model, parameters=parameters, points=points, wraps=tuple(wraps))

    def _point(self, element: ET.Element, muscle: str) -> PathPoint:
        source = SourceRef(self.file, f'<{element.tag} name="{bare(element.attrib.get("name", ""), 60)}"> of muscle '
                                      f'"{bare(muscle, 60)}"')
        name = element.attrib.get("name", "").strip() or "point"
        kinds = {"PathPoint": "fixed", "ConditionalPathPoint": "conditional", "MovingPathPoint": "moving"}
        if element.tag not in kinds:
            raise source.error(None, f"unsupported path point type <{bare(element.tag, 40)}>",
                               "PathPoint, ConditionalPathPoint or MovingPathPoint")
        socket = (_text(element, "socket_parent_frame") or "").strip()
        if not socket:
            raise source.error("socket_parent_frame", "missing", "the path of the point's frame")
        frame, rotation, translation = self._placement(resolve_path("/forceset", socket), source)
        kind = kinds[element.tag]
        if kind == "moving":
            functions, coordinates = [], []
            for axis in "xyz":
                coordinates.append(self._coordinate(source, element, f"socket_{axis}_coordinate", required=False))
                node = element.find(f"{axis}_location")
                functions.append(None if node is None else self._function(source, node, f"{axis}_location"))
            return PathPoint(name=name, frame=frame, kind=kind, functions=tuple(functions),
                             coordinates=tuple(coordinates), rotation=rotation, translation=translation)
        location = rotation @ np.array(_floats(source, element, "location", 3, (0.0, 0.0, 0.0))) + translation
        if kind == "conditional":
            bounds = _floats(source, element, "range", 2, (0.0, 0.0))   # OpenSim's default, not written
            if bounds[0] > bounds[1]:
                raise source.error("range", f"minimum {bounds[0]:g} above maximum {bounds[1]:g}", "min ≤ max")
            return PathPoint(name=name, frame=frame, kind=kind, location=location,
                             coordinate=self._coordinate(source, element, "socket_coordinate", required=True),
                             range=(bounds[0], bounds[1]))
        return PathPoint(name=name, frame=frame, location=location)

    def _coordinate(self, source: SourceRef, element: ET.Element, tag: str, required: bool) -> str | None:
        socket = (_text(element, tag) or "").strip()
        if not socket:
            if required:
                raise source.error(tag, "missing", "the path of a coordinate")
            return None
        name = socket.rstrip("/").split("/")[-1]
        if name not in self.coordinates:
            raise source.error(tag, f"unknown coordinate {socket!r}", "a coordinate of the model's JointSet")
        return name

    def _function(self, source: SourceRef, node: ET.Element, tag: str, depth: int = 0) -> LocationFunction:
        if depth > MAX_FUNCTION_NESTING:
            raise source.error(tag, f"functions nested more than {MAX_FUNCTION_NESTING} deep",
                               f"at most {MAX_FUNCTION_NESTING} nested MultiplierFunctions")
        functions = list(node)
        if len(functions) != 1:
            raise source.error(tag, f"{len(functions)} function elements", "exactly one function element")
        function = functions[0]
        kind = function.tag
        try:
            if kind == "SimmSpline":
                x, y = _floats(source, function, "x", None, None), _floats(source, function, "y", None, None)
                return simm_spline(x, y)
            if kind == "PiecewiseLinearFunction":
                x, y = _floats(source, function, "x", None, None), _floats(source, function, "y", None, None)
                return piecewise_linear(x, y)
            if kind == "Constant":
                return polynomial([_number(source, function, "value", 0.0)])
            if kind == "LinearFunction":
                return polynomial(_floats(source, function, "coefficients", 2, (1.0, 0.0)))
            if kind == "PolynomialFunction":
                return polynomial(_floats(source, function, "coefficients", None, (1.0,)))
            if kind == "MultiplierFunction":
                inner = function.find("function")
                if inner is None:
                    raise source.error(tag, "MultiplierFunction without <function>", "a wrapped function")
                return self._function(source, inner, tag, depth + 1).scaled(_number(source, function, "scale", 1.0))
        except ModelError as exc:
            if exc.file:
                raise
            raise source.error(f"{tag}/{kind}/{exc.attribute or ''}", exc.detail, exc.expected) from None
        raise source.error(tag, f"unsupported function <{bare(kind, 40)}>",
                           "SimmSpline, PiecewiseLinearFunction, Constant, LinearFunction, PolynomialFunction or "
                           "MultiplierFunction")


def check_wrap_range(source: SourceRef, bounds: tuple[float, ...], n_points: int) -> tuple[float, ...]:
    """A PathWrap's `range` (first and last path point considered, 1-based; < 1: the path's end) checked against
    the path's `n_points`: OpenSim 4.6 fails reading a last point beyond the path (an index out of bounds)."""
    if bounds[1] > n_points:
        raise source.error("range", f"last point {bounds[1]:g} beyond the path's {n_points} points",
                           f"point numbers 1 … {n_points}, or -1 for the path's ends")
    return bounds


def surface_dimensions(kind: str, source: SourceRef, read, read_three) -> tuple[float, ...]:
    """A wrap surface's dimensions (`WrapSurface.dimensions`) from `read(name, default)` (one positive number;
    default REQUIRED: must be given) and `read_three(name)` (three positive numbers); a torus's outer radius (of
    its centre circle) must exceed its inner radius (of its tube), as OpenSim requires."""
    if kind == "cylinder":
        return read("radius", REQUIRED), read("length", 1.0)
    if kind == "sphere":
        return (read("radius", REQUIRED),)
    if kind == "ellipsoid":
        return tuple(float(v) for v in read_three("dimensions"))
    inner, outer = read("inner_radius", REQUIRED), read("outer_radius", REQUIRED)
    if outer <= inner:
        raise source.error("outer_radius", f"{outer!r} is not larger than inner_radius {inner!r}",
                           "the torus's centre-circle radius, larger than its tube radius (inner_radius)")
    return inner, outer


def refuse_rigid_thelen(source: SourceRef, model: str, tendon: str, attribute: str) -> None:
    """ModelError at `source`'s `attribute` for a Thelen2003 muscle with a rigid tendon: Thelen 2003 has no forward
    force–velocity curve, so its fiber velocity exists only with a compliant tendon (OpenSim 4.6 refuses the file)."""
    if model == "thelen2003" and tendon == "rigid":
        raise source.error(attribute, "a Thelen2003 muscle with a rigid tendon (it has no force–velocity curve to "
                           "give its fiber velocity)", 'a compliant tendon (or model="degroote2016"/"millard2012")')


#: OpenSim 4.6's checks of curve parameters (extendFinalizeFromProperties): property → (lower bound, included)
OPENSIM_LOWER_BOUNDS = {
    "thelen2003": {"FmaxTendonStrain": (0.0, False), "FmaxMuscleStrain": (0.0, False), "KshapeActive": (0.0, False),
                   "KshapePassive": (0.0, False), "Af": (0.0, False), "Flen": (1.0, False)},
    "degroote2016": {"active_force_width_scale": (1.0, True), "passive_fiber_strain_at_one_norm_force": (0.0, False),
                     "tendon_strain_at_one_norm_force": (0.0, False), "activation_dynamics_smoothing": (0.0, False),
                     "default_activation": (0.0, False)},
}
#: OpenSim's property names where they differ from MuscleParameters' fields
OSIM_NAMES = {"pennation_angle": "pennation_angle_at_optimal"}


def read_parameters(read, model: str, tendon: str, extra: dict[str, float], source: SourceRef,
                    sizes: tuple = (REQUIRED, REQUIRED, REQUIRED)) -> MuscleParameters:
    """MuscleParameters from `read(field, default, **checks)` (a number reader of the file's format): F₀, l₀ and
    l_s default to `sizes` (REQUIRED: must be given), the rest to the model's OpenSim defaults; `extra`'s
    default_activation (a run's initial activation) must lie in [0, 1] (ModelError at `source`)."""
    if "default_activation" in extra:
        to_float(source, "default_activation", extra["default_activation"], at_least=0.0, at_most=1.0)
    if "maximum_pennation_angle" in extra:   # OpenSim 4.6's MuscleFixedWidthPennationModel refuses others
        to_float(source, "maximum_pennation_angle", extra["maximum_pennation_angle"], at_least=0.0,
                 at_most=math.pi / 2, expected="an angle in [0, π/2] rad (OpenSim 4.6 refuses others)")
    for key, (bound, included) in OPENSIM_LOWER_BOUNDS.get(model, {}).items():
        if key in extra:
            to_float(source, key, extra[key], at_least=bound if included else None, above=None if included else bound,
                     expected=f"a number {'≥' if included else '>'} {bound:g} (OpenSim 4.6 refuses others)")
    defaults = DEFAULTS[model]
    parameters = MuscleParameters(
        max_isometric_force=read("max_isometric_force", sizes[0], positive=True),
        optimal_fiber_length=read("optimal_fiber_length", sizes[1], positive=True),
        # a compliant tendon's length is normalized by l_s (0 only for a rigid tendon: a fiber without tendon)
        tendon_slack_length=read("tendon_slack_length", sizes[2], non_negative=True, positive=tendon == "compliant"),
        pennation_angle=read("pennation_angle", 0.0, at_least=0.0, below=math.pi / 2),
        max_contraction_velocity=read("max_contraction_velocity", 10.0, positive=True),
        tendon=tendon,
        activation_time_constant=read("activation_time_constant", defaults["activation_time_constant"],
                                      positive=True),
        deactivation_time_constant=read("deactivation_time_constant", defaults["deactivation_time_constant"],
                                        positive=True),
        minimum_activation=read("minimum_activation", defaults["minimum_activation"], at_least=0.0, below=1.0),
        fiber_damping=read("fiber_damping", defaults["fiber_damping"], non_negative=True),
        extra=tuple(sorted(extra.items())))
    flen = parameters.value("Flen", 1.4)
    if model == "thelen2003" and not parameters.value("fv_linear_extrap_threshold", 0.95) > 1.0 / flen:
        raise source.error("fv_linear_extrap_threshold", f"{parameters.value('fv_linear_extrap_threshold', 0.95):g} "
                           f"is not above 1/Flen = {1.0 / flen:g}", "a threshold above 1/Flen (OpenSim 4.6 refuses "
                           "others)")
    # Thelen always, Millard with a compliant tendon and no damping (< MILLARD_MIN_DAMPING): OpenSim's fiber velocity
    # is singular at a = 0, so it refuses a minimum activation below 0.01
    if parameters.minimum_activation < 0.01 and (model == "thelen2003" or (
            model == "millard2012" and tendon == "compliant" and parameters.fiber_damping < MILLARD_MIN_DAMPING)):
        raise source.error("minimum_activation", f"{parameters.minimum_activation:g} is below 0.01",
                           "at least 0.01 for a Thelen2003 muscle or an undamped compliant Millard2012 muscle "
                           "(OpenSim 4.6 refuses others)")
    return parameters


# ------------------------------------------------------------------------------------------------ XML helpers
def _objects(element: ET.Element | None) -> list[ET.Element]:
    """The children of a Set's <objects> (empty for a missing set)."""
    if element is None:
        return []
    objects = element.find("objects")
    return [] if objects is None else list(objects)


def _text(element: ET.Element, tag: str) -> str | None:
    child = element.find(tag)
    return None if child is None else (child.text or "")


def _number(source: SourceRef, element: ET.Element, tag: str, default=None, **checks) -> float:
    raw = _text(element, tag)
    if raw is None or not raw.strip():
        if default is None or default is REQUIRED:
            raise source.error(tag, "missing", "a finite number")
        return float(default)
    return to_float(source, tag, raw, **checks)


def _floats(source: SourceRef, element: ET.Element, tag: str, count: int | None, default, **checks):
    raw = _text(element, tag)
    if raw is None or not raw.strip():
        if default is None:
            raise source.error(tag, "missing", f"{count or 'some'} space-separated numbers")
        return tuple(float(v) for v in default)
    values = to_floats(source, tag, raw, count, **checks)
    if count is None and len(values) > 100_000:
        raise source.error(tag, f"{len(values)} numbers", "at most 100000")
    return values


def resolve_path(owner: str, socket: str) -> str:
    """The absolute component path of socket value `socket` written in component `owner` (OpenSim's rules:
    absolute from '/', else relative to the owner, '..' one level up)."""
    socket = socket.strip()
    parts = [] if socket.startswith("/") else [p for p in owner.split("/") if p]
    for part in socket.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if parts:
                parts.pop()
        else:
            parts.append(part)
    return "/" + "/".join(parts)


def body_fixed_xyz(angles) -> np.ndarray:
    """OpenSim's body-fixed x-y-z rotation sequence: R = Rx(a) Ry(b) Rz(c)."""
    a, b, c = (float(v) for v in angles)
    ca, sa, cb, sb, cc, sc = math.cos(a), math.sin(a), math.cos(b), math.sin(b), math.cos(c), math.sin(c)
    rx = np.array([[1.0, 0.0, 0.0], [0.0, ca, -sa], [0.0, sa, ca]])
    ry = np.array([[cb, 0.0, sb], [0.0, 1.0, 0.0], [-sb, 0.0, cb]])
    rz = np.array([[cc, -sc, 0.0], [sc, cc, 0.0], [0.0, 0.0, 1.0]])
    return rx @ ry @ rz


__all__ = ["load_osim_muscles", "osim_root", "check_version", "body_fixed_xyz", "MUSCLE_CLASSES", "resolve_path", "check_wrap_range",
           "refuse_rigid_thelen", "read_parameters", "surface_dimensions",
           "DEFAULT_COORDINATE_RANGE"]
