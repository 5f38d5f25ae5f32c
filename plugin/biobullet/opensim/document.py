"""Read an OpenSim 4 `.osim` file into plain, validated records (bodies, frames, joints, coordinates,
constraints, forces, contact geometry) — no OpenSim needed, nothing in the file executed.

The XML is read with the URDF path's bounded, entity-free parser (`model.urdf.parse_xml`). OpenSim writes
element names such as `HuntCrossleyForce::ContactParametersSet`: legal XML 1.0 names that a namespace-aware
parser rejects (an undeclared prefix), so `::` in element names is read as `__` before parsing.
Units: SI (OpenSim's), angles in radians.
"""
from __future__ import annotations

import math
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field, replace

import numpy as np

from biobullet.core.attributes import PLAIN_NUMBER
from biobullet.core.errors import ModelError, SourceRef, bare
# OpenSim socket paths and the file's XML root: one reader for the importer and the muscles
from biobullet.muscles.osim import DEFAULT_COORDINATE_RANGE, check_version, osim_root, resolve_path
from biobullet.spatial.rotations import axis_angle_matrix

#: containers whose members are components at `/<path>/<member name>`
_SET_PATHS = {"BodySet": "bodyset", "JointSet": "jointset", "ConstraintSet": "constraintset",
              "ForceSet": "forceset", "ContactGeometrySet": "contactgeometryset", "MarkerSet": "markerset",
              "ComponentSet": "componentset", "ProbeSet": "probeset", "ControllerSet": "controllerset"}
#: list properties whose members are sub-components of the element that owns the list
_COMPONENT_LISTS = ("frames", "components")
#: forces the importer maps to force elements (`opensim.forces`)
MAPPED_FORCES = ("CoordinateLimitForce", "SpringGeneralizedForce", "PointToPointSpring")
#: constraints the importer maps (couplers → joint functions, the others → loops)
MAPPED_CONSTRAINTS = ("CoordinateCouplerConstraint", "PointConstraint", "WeldConstraint")
#: a CustomJoint's axes with |a_i × a_j| below this (the file's vectors, as written) are collinear: OpenSim 4.6
#: refuses the joint (CustomJoint::extendFinalizeFromProperties), so the importer does too
COLLINEAR_TOLERANCE = 1e-5
#: prescribed_function types the importer follows (a Constant locks the coordinate; the others drive its joint by
#: an expression of time); a spline of time is reported
TIME_FUNCTIONS = ("Constant", "LinearFunction", "PolynomialFunction", "Sine", "MultiplierFunction")


@dataclass(frozen=True)
class OsimFunction:
    """An OpenSim Function: `kind` one of constant, linear, spline, polynomial, sine, ellipsoid, and its numbers.
    constant: values=(c,); linear: values=(a_1..a_n, b) for b + Σ a_i x_i; polynomial: values in decreasing
    powers (OpenSim's order); sine: values=(amplitude, omega, phase, offset); spline: x, y and `spline_type`
    (SimmSpline, NaturalCubicSpline, GCVSpline, PiecewiseLinearFunction; values=(degree,)); ellipsoid: an
    EllipsoidJoint's translation along F's axis k, values=(radius, k), inputs (q₁, q₂) (`PropertyReader.ellipsoid_axes`).
    `scale` multiplies the value (MultiplierFunction, coupler scale factors); `multiplied`: read through a
    MultiplierFunction (OpenSim's motion type then sees no LinearFunction)."""

    kind: str
    source: SourceRef
    values: tuple[float, ...] = ()
    x: tuple[float, ...] = ()
    y: tuple[float, ...] = ()
    spline_type: str = ""
    scale: float = 1.0
    multiplied: bool = False


@dataclass(frozen=True)
class Frame:
    """A PhysicalOffsetFrame: placed in its parent frame (path) by translation and body-fixed XYZ orientation."""

    path: str
    name: str
    parent: str
    translation: tuple[float, float, float]
    orientation: tuple[float, float, float]
    source: SourceRef


@dataclass(frozen=True)
class Body:
    name: str
    path: str
    mass: float
    mass_center: tuple[float, float, float]
    inertia: tuple[float, float, float, float, float, float]   # Ixx Iyy Izz Ixy Ixz Iyz about the mass centre
    meshes: tuple[tuple[str, tuple[float, float, float]], ...]  # (mesh_file, scale_factors)
    source: SourceRef


@dataclass(frozen=True)
class Coordinate:
    name: str
    default_value: float
    default_speed: float
    range: tuple[float, float]
    clamped: bool
    locked: bool
    prescribed: bool
    source: SourceRef
    #: a prescribed coordinate's function of time, when the importer can drive the joint by it (else None)
    prescribed_function: OsimFunction | None = None


@dataclass(frozen=True)
class TransformAxis:
    """One axis of a joint's motion: `rotation` (about `axis`) or translation (along it), value =
    function(coordinates)."""

    name: str
    rotation: bool
    axis: tuple[float, float, float]
    coordinates: tuple[str, ...]
    function: OsimFunction
    source: SourceRef


@dataclass(frozen=True)
class Joint:
    type: str
    name: str
    path: str
    parent_frame: str   # resolved frame or body path
    child_frame: str
    coordinates: tuple[Coordinate, ...]
    # from F to M, each axis in the frame the previous ones produced (a CustomJoint's: translations, then rotations)
    axes: tuple[TransformAxis, ...]
    source: SourceRef


@dataclass(frozen=True)
class Component:
    """Any other model component (constraint, force, contact geometry, marker ...): its element for the mapping."""

    type: str
    name: str
    path: str
    element: ET.Element
    source: SourceRef


@dataclass(frozen=True)
class Coupler:
    """A CoordinateCouplerConstraint: dependent = function(independent) (the scale factor is in `function`)."""

    name: str
    dependent: str
    independent: tuple[str, ...]
    function: OsimFunction
    enforced: bool
    source: SourceRef


@dataclass(frozen=True)
class Document:
    file: str
    name: str
    gravity: tuple[float, float, float]
    ground: str
    bodies: dict[str, Body]          # by path
    frames: dict[str, Frame]         # by path
    joints: tuple[Joint, ...]
    coordinate_order: tuple[str, ...]
    constraints: tuple[Component, ...]   # other than the couplers
    couplers: tuple[Coupler, ...]
    forces: tuple[Component, ...]
    contact_geometry: dict[str, Component]   # by path
    other: tuple[Component, ...] = field(default=())   # markers, probes, controllers, components: reported
    credits: str = ""
    notes: tuple[str, ...] = ()   # how OpenSim reads a construct that may not mean what the file suggests: warned


# ---------------------------------------------------------------------------------------------- reading
def read_document(file: str) -> Document:
    """Parse `file` (an OpenSim 4 .osim model). ModelError naming file, element and property on bad input."""
    root = osim_root(file)
    if root.tag != "OpenSimDocument":
        raise ModelError(f"root element is <{root.tag}>", file=file, element=f"<{bare(root.tag, 60)}>",
                         expected="<OpenSimDocument> (an OpenSim .osim model)")
    check_version(file, root)
    models = root.findall("Model")
    if len(models) != 1:
        raise ModelError(f"{len(models)} <Model> elements", file=file, element="<OpenSimDocument>",
                         expected="exactly one <Model>")
    model = models[0]
    reader = PropertyReader(file)
    return reader.read(model)


class PropertyReader:
    def __init__(self, file: str) -> None:
        self.file = file
        #: components met in `<components>` lists other than offset frames (reported, or mapped at model level)
        self.owned: list[tuple[str, ET.Element]] = []
        self.notes: list[str] = []

    def source(self, element: ET.Element) -> SourceRef:
        name = element.attrib.get("name")
        shown_tag = element.tag.replace("__", "::")
        if name is None:
            return SourceRef(self.file, f"<{shown_tag}>")
        return SourceRef(self.file, f'<{shown_tag} name="{bare(name, 60)}">')

    # ------------------------------------------------------------------ property helpers
    def property_text(self, element: ET.Element, tag: str, default: str | None = None) -> str:
        child = element.find(tag)
        if child is None or child.text is None or not child.text.strip():
            if default is None:
                raise self.source(element).error(tag, f"missing <{tag}>", f"<{tag}> with a value")
            return default
        return child.text.strip()

    def numbers(self, element: ET.Element, tag: str, count: int | None = None,
                default: tuple[float, ...] | None = None) -> tuple[float, ...]:
        text = self.property_text(element, tag, None if default is None else "")
        if not text:
            return default  # type: ignore[return-value]
        parts = text.replace(",", " ").split()
        try:   # plain decimal numbers only, as OpenSim reads them (core.attributes.PLAIN_NUMBER)
            if not text.isascii() or not all(PLAIN_NUMBER.match(v) or v.lower().lstrip("+-") in ("nan", "inf")
                                             for v in parts):
                raise ValueError(text)
            values = tuple(float(v) for v in parts)
        except ValueError:
            raise self.source(element).error(tag, f"not a list of numbers: {bare(text, 60)!r}",
                                             "numbers separated by spaces") from None
        if not all(math.isfinite(v) for v in values):
            raise self.source(element).error(tag, "non-finite value", "finite numbers")
        if count is not None and len(values) != count:
            raise self.source(element).error(tag, f"{len(values)} value(s)", f"{count} numbers")
        return values

    def number(self, element: ET.Element, tag: str, default: float | None = None) -> float:
        return self.numbers(element, tag, 1, None if default is None else (default,))[0]

    def flag(self, element: ET.Element, tag: str, default: bool = False) -> bool:
        text = self.property_text(element, tag, "true" if default else "false").lower()
        if text not in ("true", "false", "1", "0"):
            raise self.source(element).error(tag, f"not a boolean: {bare(text, 20)!r}", "true or false")
        return text in ("true", "1")

    @staticmethod
    def named(element: ET.Element | None) -> list[ET.Element]:
        """The member elements of a Set (`<objects>`) or list property."""
        if element is None:
            return []
        objects = element.find("objects")
        members = objects if objects is not None else element
        return [child for child in members if isinstance(child.tag, str)]

    # ------------------------------------------------------------------ model
    def read(self, model: ET.Element) -> Document:
        name = model.attrib.get("name", "model")
        gravity = self.numbers(model, "gravity", 3, (0.0, -9.80665, 0.0))
        for tag, standard in (("length_units", ("meters", "m")), ("force_units", ("N", "newtons"))):
            units = self.property_text(model, tag, standard[0]).strip()
            if units not in standard:   # OpenSim 4.6 scales nothing by them (measured: same M and q̈)
                self.notes.append(f"<Model> {tag} {bare(units, 40)!r}: OpenSim 4.6 reads every number of the file "
                                  f"in {standard[0]} whatever this says (imported so)")
        ground_element = model.find("Ground") if model.find("Ground") is not None else model.find("ground")
        ground_name = ground_element.attrib.get("name", "ground") if ground_element is not None else "ground"
        ground = "/" + ground_name
        self.frames: dict[str, Frame] = {}
        self.bodies: dict[str, Body] = {}
        # the Model's own `<components>` (where OpenSim's `Model.addComponent` writes): frames at "/name"
        self.collect_frames(model, "")
        if ground_element is not None:
            self.collect_frames(ground_element, ground)
        for body_element in self.named(model.find("BodySet")):
            self.read_body(body_element)
        joint_elements = [(self.path_of("JointSet", e), e) for e in self.named(model.find("JointSet"))]
        for path, element in joint_elements:
            self.collect_frames(element, path)
        for element in self.named(model.find("ConstraintSet")):   # a WeldConstraint's own offset frames
            self.collect_frames(element, self.path_of("ConstraintSet", element))
        components = [(self.path_of("ComponentSet", e), e) for e in self.named(model.find("ComponentSet"))]
        for path, element in components:
            if element.tag == "PhysicalOffsetFrame":
                self.add_frame(element, "/componentset")
        known = set(self.frames) | set(self.bodies) | {ground}
        for frame in self.frames.values():
            if frame.parent not in known:
                raise frame.source.error("socket_parent", f"unknown frame {bare(frame.parent, 80)!r}",
                                         "the path of a body, the ground or a PhysicalOffsetFrame")
        joints = tuple(self.read_joint(path, element, known, ground) for path, element in joint_elements)
        coordinate_order = tuple(c.name for joint in joints for c in joint.coordinates)
        seen: set[str] = set()
        for joint in joints:
            for coordinate in joint.coordinates:
                if coordinate.name in seen:
                    raise coordinate.source.error("name", "duplicate coordinate name", "unique coordinate names")
                seen.add(coordinate.name)
        constraints = tuple(self.component("ConstraintSet", e) for e in self.named(model.find("ConstraintSet")))
        # components owned through `<components>` lists act in OpenSim as they would in the sets: the model's own
        # mapped forces and constraints are read as such, every other one is reported (never silently dropped)
        owned = [Component(e.tag.replace("__", "::"), path.rsplit("/", 1)[1], path, e, self.source(e))
                 for path, e in self.owned]
        top = [c for c in owned if c.path.count("/") == 1]
        constraints += tuple(c for c in top if c.type in MAPPED_CONSTRAINTS)
        couplers = tuple(self.read_coupler(c, seen) for c in constraints if c.type == "CoordinateCouplerConstraint")
        constraints = tuple(c for c in constraints if c.type != "CoordinateCouplerConstraint")
        forces = tuple(self.component("ForceSet", e) for e in self.named(model.find("ForceSet")))
        forces += tuple(c for c in top if c.type in MAPPED_FORCES)
        geometry = {c.path: c for c in (self.component("ContactGeometrySet", e)
                                         for e in self.named(model.find("ContactGeometrySet")))}
        other = tuple(self.component(set_tag, e) for set_tag in ("MarkerSet", "ProbeSet", "ControllerSet")
                      for e in self.named(model.find(set_tag)))
        other += tuple(self.component("ComponentSet", e) for _, e in components if e.tag != "PhysicalOffsetFrame")
        other += tuple(c for c in owned if c.path.count("/") != 1
                       or c.type not in MAPPED_FORCES + MAPPED_CONSTRAINTS)
        credits = (model.findtext("credits") or "").strip()
        return Document(file=self.file, name=name, gravity=gravity, ground=ground, bodies=self.bodies,
                        frames=self.frames, joints=joints, coordinate_order=coordinate_order,
                        constraints=constraints, couplers=couplers, forces=forces, contact_geometry=geometry,
                        other=other,
                        credits=credits, notes=tuple(self.notes))

    def path_of(self, set_tag: str, element: ET.Element) -> str:
        name = element.attrib.get("name", "").strip()
        if not name:
            raise self.source(element).error("name", "missing name", "a name")
        return f"/{_SET_PATHS[set_tag]}/{name}"

    def component(self, set_tag: str, element: ET.Element) -> Component:
        path = self.path_of(set_tag, element)
        return Component(element.tag.replace("__", "::"), path.rsplit("/", 1)[1], path, element,
                         self.source(element))

    def collect_frames(self, owner: ET.Element, owner_path: str) -> None:
        """The offset frames listed by `owner` (at `owner_path`/name); its other `<components>` into `owned`."""
        for tag in _COMPONENT_LISTS:
            for element in self.named(owner.find(tag)):
                if element.tag == "PhysicalOffsetFrame":
                    self.add_frame(element, owner_path)
                elif tag == "components":
                    name = element.attrib.get("name", "").strip() or element.tag
                    self.owned.append((f"{owner_path}/{name}", element))

    def add_frame(self, element: ET.Element, owner_path: str) -> None:
        name = element.attrib.get("name", "").strip()
        if not name:
            raise self.source(element).error("name", "missing name", "a frame name")
        path = f"{owner_path}/{name}"
        parent = resolve_path(path, self.property_text(element, "socket_parent"))
        frame = Frame(path, name, parent, self.numbers(element, "translation", 3, (0.0, 0.0, 0.0)),
                      self.numbers(element, "orientation", 3, (0.0, 0.0, 0.0)), self.source(element))
        if path in self.frames:
            raise frame.source.error("name", "duplicate frame", "unique frame names per owner")
        self.frames[path] = frame
        self.collect_frames(element, path)

    def read_body(self, element: ET.Element) -> None:
        path = self.path_of("BodySet", element)
        source = self.source(element)
        if path in self.bodies:   # else the first body's frames and joints silently hang on the second
            raise source.error("name", "duplicate body name", "unique body names")
        mass = self.number(element, "mass", 0.0)
        if mass < 0.0:
            raise source.error("mass", f"negative mass {mass:g} kg", "mass ≥ 0")
        meshes = []
        for geometry in self.named(element.find("attached_geometry")):
            if geometry.tag == "Mesh" and geometry.findtext("mesh_file"):
                meshes.append((geometry.findtext("mesh_file").strip(),
                               self.numbers(geometry, "scale_factors", 3, (1.0, 1.0, 1.0))))
        self.bodies[path] = Body(path.rsplit("/", 1)[1], path, mass,
                                 self.numbers(element, "mass_center", 3, (0.0, 0.0, 0.0)),
                                 self.numbers(element, "inertia", 6, (0.0,) * 6), tuple(meshes), source)
        self.collect_frames(element, path)

    def read_coupler(self, component: Component, coordinates: set[str]) -> Coupler:
        element, source = component.element, component.source
        enforced = self.flag(element, "isEnforced", True) and not self.flag(element, "isDisabled", False)
        inputs = tuple(self.property_text(element, "independent_coordinate_names").split())
        dependent = self.property_text(element, "dependent_coordinate_name")
        for name in (*inputs, dependent):
            if name not in coordinates:
                raise source.error("independent_coordinate_names" if name in inputs else "dependent_coordinate_name",
                                   f"unknown coordinate {bare(name, 60)!r}", "a coordinate of the model")
        if dependent in inputs:
            raise source.error("dependent_coordinate_name", "the dependent coordinate is also an independent one",
                               "distinct coordinates")
        holder = element.find("coupled_coordinates_function")
        members = [c for c in (holder if holder is not None else []) if isinstance(c.tag, str)]
        if len(members) != 1:
            raise source.error("coupled_coordinates_function", "missing function", "one function element")
        function = self.read_function(members[0], self.number(element, "scale_factor", 1.0), source.element)
        if function.kind == "linear" and len(function.values) != len(inputs) + 1:
            raise function.source.error("coefficients", f"{len(function.values)} coefficients for {len(inputs)} "
                                        "coordinate(s)", f"{len(inputs) + 1} (slopes, then the intercept)")
        if function.kind not in ("linear", "constant") and len(inputs) != 1:
            raise source.error("independent_coordinate_names", f"{len(inputs)} coordinates",
                               f"one coordinate for a {function.kind} function")
        if function.kind == "constant" and enforced:
            self.notes.append(f"CoordinateCouplerConstraint {component.name}: a Constant function holds "
                              f"{dependent} at {function.scale * function.values[0]:g} (imported so); OpenSim 4.6 "
                              f"holds the independent {inputs[0]} at that value instead and leaves {dependent} free "
                              "— lock the coordinate to have both agree")
        return Coupler(component.name, dependent, inputs, function, enforced, source)

    # ------------------------------------------------------------------ joints
    def read_joint(self, path: str, element: ET.Element, known: set[str], ground: str) -> Joint:
        source = self.source(element)
        ends = []
        for socket in ("socket_parent_frame", "socket_child_frame"):
            target = resolve_path(path, self.property_text(element, socket))
            ends.append(find_frame(target, known, source, socket))
        coordinates = tuple(self.read_coordinate(c) for c in self.named(element.find("coordinates"))
                            if c.tag == "Coordinate")
        names = tuple(c.name for c in coordinates)
        joint_type = element.tag
        if joint_type == "CustomJoint":
            transform = element.find("SpatialTransform")
            if transform is None:
                raise source.error("SpatialTransform", "missing <SpatialTransform>", "six <TransformAxis>")
            axes = {a.attrib.get("name", ""): a for a in transform.findall("TransformAxis")}
            order = ("translation1", "translation2", "translation3", "rotation1", "rotation2", "rotation3")
            missing = [n for n in order if n not in axes]
            if missing:
                raise source.error("SpatialTransform", "missing TransformAxis " + ", ".join(missing),
                                   "rotation1..3 and translation1..3")
            transform_axes = tuple(self.read_axis(axes[n], n, names, path) for n in order)
            self.check_collinear(source, [self.numbers(axes[n], "axis", 3) for n in order])
        elif joint_type == "EllipsoidJoint":
            transform_axes = self.ellipsoid_axes(source, names, self.numbers(element, "radii_x_y_z", 3))
        elif joint_type == "ScapulothoracicJoint":
            transform_axes = self.scapulothoracic_axes(element, source, names)
        else:
            shapes = STANDARD_JOINTS.get(joint_type)
            if shapes is None:
                raise source.error(None, f"joint type {joint_type} is not supported by the importer",
                                   "one of CustomJoint, EllipsoidJoint, ScapulothoracicJoint, "
                                   + ", ".join(sorted(STANDARD_JOINTS)))
            if len(coordinates) != len(shapes[1]):
                raise source.error("coordinates", f"{len(coordinates)} coordinate(s)",
                                   f"{len(shapes[1])} for a {joint_type}")
            transform_axes = tuple(
                TransformAxis(f"{joint_type}.{k}", rotation, axis, (names[index],),
                              OsimFunction("linear", source, (1.0, 0.0)), source)
                for k, (rotation, axis, index) in enumerate(zip(*shapes[0], shapes[1])))
        return Joint(joint_type, path.rsplit("/", 1)[1], path, ends[0], ends[1], coordinates, transform_axes,
                     source)

    @staticmethod
    def ellipsoid_axes(source: SourceRef, names: tuple[str, ...], radii: tuple[float, ...]
                       ) -> tuple[TransformAxis, ...]:
        """An EllipsoidJoint as function-based axes (Simbody's Ellipsoid mobilizer): M's origin at
        p = (a n_x, b n_y, c n_z) in F, n = R_FM ẑ, R_FM = Rx(q₁) Ry(q₂) Rz(q₃) body-fixed — so
        n = (sin q₂, −sin q₁ cos q₂, cos q₁ cos q₂); then the three rotations."""
        if len(names) != 3:
            raise source.error("coordinates", f"{len(names)} coordinate(s)", "3 for an EllipsoidJoint")
        translations = tuple(TransformAxis(f"EllipsoidJoint.{k}", False, axis, names[:2],
                                           OsimFunction("ellipsoid", source, (radius, float(k))), source)
                             for k, (axis, radius) in enumerate(zip((X, Y, Z), radii)))
        rotations = tuple(TransformAxis(f"EllipsoidJoint.{k + 3}", True, axis, (name,),
                                        OsimFunction("linear", source, (1.0, 0.0)), source)
                          for k, (axis, name) in enumerate(zip((X, Y, Z), names)))
        return translations + rotations

    def scapulothoracic_axes(self, element: ET.Element, source: SourceRef, names: tuple[str, ...]
                             ) -> tuple[TransformAxis, ...]:
        """A ScapulothoracicJoint as OpenSim 4.6 builds it: an Ellipsoid mobilizer (abduction, elevation, upward
        rotation) between the parent frame turned by Rz(π/2) and a massless frame turned back by Rz(−π/2), radii
        (r_y, r_x, r_z) of `thoracic_ellipsoid_radii_x_y_z`; then a pin (winging) about the direction
        (−sin w, cos w, 0) through (o_x, o_y, 0) of that frame; the child frame welded to it. The radii have no default (OpenSim's are NaN)."""
        if len(names) != 4:
            raise source.error("coordinates", f"{len(names)} coordinate(s)", "4 for a ScapulothoracicJoint")
        rx, ry, rz = self.numbers(element, "thoracic_ellipsoid_radii_x_y_z", 3)
        # OpenSim writes no property at its default: the winging axis at (0, 0), direction 0
        ox, oy = self.numbers(element, "scapula_winging_axis_origin", 2, (0.0, 0.0))
        wing = self.number(element, "scapula_winging_axis_direction", 0.0)

        def fixed(rotation: bool, axis, value: float) -> TransformAxis:
            return TransformAxis("ScapulothoracicJoint.fixed", rotation, axis, (),
                                 OsimFunction("constant", source, (value,)), source)

        winging = TransformAxis("ScapulothoracicJoint.winging", True, (-math.sin(wing), math.cos(wing), 0.0),
                                (names[3],), OsimFunction("linear", source, (1.0, 0.0)), source)
        return (fixed(True, Z, math.pi / 2), *self.ellipsoid_axes(source, names[:3], (ry, rx, rz)),
                fixed(True, Z, -math.pi / 2), fixed(False, X, ox), fixed(False, Y, oy), winging,
                fixed(False, X, -ox), fixed(False, Y, -oy))

    @staticmethod
    def check_collinear(source: SourceRef, axes: list[tuple[float, ...]]) -> None:
        """OpenSim's check of a SpatialTransform: no two rotation (or translation) axes collinear, on the vectors
        as written (so a very short axis is collinear with every other)."""
        for group, kind in ((axes[:3], "translation"), (axes[3:], "rotation")):
            for i, j in ((0, 1), (0, 2), (1, 2)):
                if float(np.linalg.norm(np.cross(group[i], group[j]))) < COLLINEAR_TOLERANCE:
                    raise source.error("SpatialTransform", f"{kind}{i + 1} axis {group[i]} and {kind}{j + 1} axis "
                                       f"{group[j]} are collinear (|a × b| < {COLLINEAR_TOLERANCE:g}); OpenSim 4.6 "
                                       "refuses the joint too", "three independent rotation axes and three "
                                       "independent translation axes")

    def read_coordinate(self, element: ET.Element) -> Coordinate:
        source = self.source(element)
        name = element.attrib.get("name", "").strip()
        if not name:
            raise source.error("name", "missing name", "a coordinate name")
        lower, upper = self.numbers(element, "range", 2, DEFAULT_COORDINATE_RANGE)
        if lower > upper:
            raise source.error("range", f"lower {lower:g} > upper {upper:g}", "lower ≤ upper")
        prescribed = self.flag(element, "prescribed") and element.find("prescribed_function") is not None \
            and len(element.find("prescribed_function")) > 0
        default, clamped = self.number(element, "default_value", 0.0), self.flag(element, "clamped")
        slack = math.sqrt(sys.float_info.epsilon)   # Simbody's SqrtEps, as OpenSim checks it
        if clamped and not lower - slack < default < upper + slack:
            raise source.error("default_value", f"default {default:g} outside the range [{lower:g}, {upper:g}] of a "
                               "clamped coordinate (OpenSim refuses the file too)", "a default inside the range")
        locked, timed = self.flag(element, "locked"), None
        if prescribed:
            members = [c for c in element.find("prescribed_function") if isinstance(c.tag, str)]
            function = self.read_function(members[0], owner=source.element) \
                if members and members[0].tag in TIME_FUNCTIONS else None
            if function is not None and function.kind == "constant":
                # OpenSim holds it at the value, q̇ = q̈ = 0: a locked coordinate
                default, locked, prescribed = function.scale * function.values[0], True, False
            elif function is not None and (function.kind != "linear" or len(function.values) == 2):
                timed = function   # q = f(t): its joint driven by an expression of time
        return Coordinate(name, default, self.number(element, "default_speed_value", 0.0), (lower, upper), clamped,
                          locked, prescribed, source, timed)

    def read_axis(self, element: ET.Element, name: str, coordinates: tuple[str, ...], joint: str = ""
                  ) -> TransformAxis:
        source = self.source(element)
        used = tuple(self.property_text(element, "coordinates", "").split())
        for coordinate in used:
            if coordinate not in coordinates:
                raise source.error("coordinates", f"unknown coordinate {bare(coordinate, 60)!r}",
                                   "a coordinate of this joint: " + (", ".join(coordinates) or "(none)"))
        axis = self.numbers(element, "axis", 3)
        norm = math.sqrt(sum(a * a for a in axis))
        if norm == 0.0:
            raise source.error("axis", "zero axis", "a non-zero direction")
        function_elements = [child for child in element
                             if isinstance(child.tag, str) and child.tag not in ("coordinates", "axis")]
        if function_elements and function_elements[0].tag == "function":   # an older file's <function> wrapper
            function_elements = [child for child in function_elements[0] if isinstance(child.tag, str)]
        if not function_elements:
            # OpenSim 4.6 gives an axis without a function Constant 0, whatever coordinates it lists
            function = OsimFunction("constant", source, (0.0,))
            if used:
                self.notes.append(f"{joint} {source.element}: lists the coordinate(s) {', '.join(used)} but has no "
                                  "function; OpenSim makes it Constant 0, so they do not move it (imported so)")
        else:
            function = self.read_function(function_elements[0], owner=f"{joint} {source.element}".strip())
        if used and function.kind == "linear" and len(function.values) != len(used) + 1:
            raise function.source.error("coefficients", f"{len(function.values)} coefficients for {len(used)} "
                                        "coordinate(s)", f"{len(used) + 1} (one slope per coordinate, then the "
                                        "intercept)")
        if function.kind in ("spline", "polynomial", "sine") and len(used) != 1:
            raise source.error("coordinates", f"a {function.kind} function of {len(used)} coordinates",
                               "exactly one coordinate")
        return TransformAxis(name, name.startswith("rotation"), tuple(a / norm for a in axis), used, function,
                             source)

    def read_function(self, element: ET.Element, scale: float = 1.0, owner: str = "") -> OsimFunction:
        """The function `element` (a MultiplierFunction's scale folded into `scale`); `owner` (the coupler, joint
        axis or coordinate that holds it) leads its errors' element, since OpenSim names most functions
        "function"."""
        tag, source = element.tag, self.source(element)
        if owner:
            source = SourceRef(source.file, f"{owner} {source.element}")
        if tag == "Constant":
            return OsimFunction("constant", source, (self.number(element, "value"),), scale=scale)
        if tag == "LinearFunction":
            values = self.numbers(element, "coefficients", None, (1.0, 0.0))
            if len(values) < 2:
                raise source.error("coefficients", f"{len(values)} coefficient(s)", "slope(s) then intercept")
            return OsimFunction("linear", source, values, scale=scale)
        if tag in ("SimmSpline", "NaturalCubicSpline", "GCVSpline", "PiecewiseLinearFunction"):
            x, y = self.numbers(element, "x"), self.numbers(element, "y")
            if len(x) != len(y) or len(x) < 2:
                raise source.error("y", f"{len(x)} x and {len(y)} y values", "as many y as x values, at least 2")
            if any(b <= a for a, b in zip(x, x[1:])):
                raise source.error("x", "x values are not strictly increasing", "x0 < x1 < ...")
            degree = 3
            if tag == "GCVSpline":
                half_order = self.number(element, "half_order", 3.0)
                variance = self.number(element, "error_variance", 0.0)
                if half_order not in (1.0, 2.0, 3.0, 4.0) or variance != 0.0:
                    raise source.error("half_order" if variance == 0.0 else "error_variance",
                                       f"GCVSpline of half order {half_order:g} with error variance "
                                       f"{variance:g} is not supported", "half_order 1 to 4 and error_variance 0 "
                                       "(an interpolating natural spline)")
                degree = int(2 * half_order - 1)
                if len(x) < half_order + 1:
                    raise source.error("x", f"{len(x)} points for a GCVSpline of degree {degree}",
                                       f"at least {int(half_order) + 1} points")
            if tag == "NaturalCubicSpline" and len(x) < 3:
                raise source.error("x", "a NaturalCubicSpline needs at least 3 points", "3 or more points")
            return OsimFunction("spline", source, (float(degree),), x=x, y=y, spline_type=tag, scale=scale)
        if tag == "PolynomialFunction":
            return OsimFunction("polynomial", source, self.numbers(element, "coefficients"), scale=scale)
        if tag == "Sine":
            return OsimFunction("sine", source, (self.number(element, "amplitude", 1.0),
                                                 self.number(element, "omega", 1.0),
                                                 self.number(element, "phase", 0.0),
                                                 self.number(element, "offset", 0.0)), scale=scale)
        if tag == "MultiplierFunction":
            inner = element.find("function")
            members = [c for c in (inner if inner is not None else []) if isinstance(c.tag, str)]
            if len(members) != 1:
                raise source.error("function", "a MultiplierFunction needs one function", "one <function> child")
            return replace(self.read_function(members[0], scale * self.number(element, "scale", 1.0), owner),
                           multiplied=True)
        raise source.error(None, f"function type {tag} is not supported by the importer",
                           "Constant, LinearFunction, SimmSpline, NaturalCubicSpline, GCVSpline (degree 1, 3, 5 "
                           "or 7, no smoothing), "
                           "PiecewiseLinearFunction, PolynomialFunction, MultiplierFunction or Sine")


X, Y, Z = (1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0)
#: standard joints as function-based axes: ((rotation?, axis) per axis in mobilizer order, coordinate index of
#: each axis). Translations are in the parent frame, rotations body-fixed in order (Simbody's mobilizers).
STANDARD_JOINTS: dict[str, tuple[tuple[tuple[bool, ...], tuple[tuple[float, float, float], ...]], tuple[int, ...]]] = {
    "WeldJoint": (((), ()), ()),
    "PinJoint": (((True,), (Z,)), (0,)),
    "SliderJoint": (((False,), (X,)), (0,)),
    "UniversalJoint": (((True, True), (X, Y)), (0, 1)),
    "GimbalJoint": (((True, True, True), (X, Y, Z)), (0, 1, 2)),
    "BallJoint": (((True, True, True), (X, Y, Z)), (0, 1, 2)),
    "FreeJoint": (((False, False, False, True, True, True), (X, Y, Z, X, Y, Z)), (3, 4, 5, 0, 1, 2)),
    "PlanarJoint": (((False, False, True), (X, Y, Z)), (1, 2, 0)),
}


#: joints whose Simbody mobilizer has angular-velocity speeds (Ball, Free, Ellipsoid, Scapulothoracic: u = ω, not
#: the Euler-angle rates), with the indices of their X-Y-Z body-fixed rotation coordinates. OpenSim applies a
#: coordinate's generalized force (a CoordinateActuator, SpringGeneralizedForce, CoordinateLimitForce) along that
#: u, and its damping reads u: u = E(q) q̇, E's columns x̂, Rx(q₁) ŷ, Rx(q₁) Ry(q₂) ẑ (ω in the mobilizer's F;
#: measured, OpenSim 4.6's N⁻¹, reversed joints too).
ANGULAR_SPEED_JOINTS: dict[str, tuple[int, ...]] = {"BallJoint": (0, 1, 2), "FreeJoint": (0, 1, 2),
                                                    "EllipsoidJoint": (0, 1, 2), "ScapulothoracicJoint": (0, 1, 2)}


def angular_speed_coordinates(document: Document) -> dict[str, tuple[str, tuple[str, ...]]]:
    """{coordinate: ("TYPE NAME" of its joint, the joint's three rotation coordinates)} of the coordinates whose
    OpenSim speed is an angular-velocity component (`ANGULAR_SPEED_JOINTS`): here v = q̇ of the Euler angles."""
    out: dict[str, tuple[str, tuple[str, ...]]] = {}
    for joint in document.joints:
        indices = ANGULAR_SPEED_JOINTS.get(joint.type, ())
        if len(joint.coordinates) < len(indices):
            continue
        rotations = tuple(joint.coordinates[k].name for k in indices)
        out.update({name: (f"{joint.type} {joint.name}", rotations) for name in rotations})
    return out


def angular_speed_rows(first: float, second: float) -> np.ndarray:
    """E(q) with u = E q̇ for X-Y-Z body-fixed angles (q₁, q₂, q₃): OpenSim's speeds of a Ball-like joint."""
    c1, s1, c2, s2 = math.cos(first), math.sin(first), math.cos(second), math.sin(second)
    return np.array([[1.0, 0.0, s2], [0.0, c1, -s1 * c2], [0.0, s1, c1 * c2]])


def opensim_rotational(joints: tuple[Joint, ...]) -> dict[str, bool]:
    """{coordinate: OpenSim's motion type is Rotational} — what OpenSim 4.6's CoordinateLimitForce reads (it takes
    a Rotational coordinate's limits in degrees, a Translational or Coupled one's as they are). A CustomJoint
    coordinate is Translational if a translation axis, else Rotational if a rotation axis, is a LinearFunction of
    it with slope ±1 (OpenSim's tolerance measured ≈ 1e-6: 1 ± 5e-7 counts, 1.000005 and 0.999999 do not;
    intercept free), else Coupled — a spline, a scaled slope or a MultiplierFunction is Coupled (measured on
    OpenSim 4.6). Other joints, and a coordinate no axis uses: Rotational when a rotation axis carries it or none
    does."""
    out: dict[str, bool] = {}
    for joint in joints:
        for coordinate in joint.coordinates:
            axes = [axis for axis in joint.axes if coordinate.name in axis.coordinates]
            if joint.type != "CustomJoint" or not axes:
                out[coordinate.name] = not axes or any(axis.rotation for axis in axes)
                continue
            unit = [axis.rotation for axis in axes if axis.function.kind == "linear"
                    and not axis.function.multiplied and len(axis.coordinates) == 1
                    and abs(abs(axis.function.values[0] * axis.function.scale) - 1.0) <= 1e-6]
            out[coordinate.name] = bool(unit) and all(unit)
    return out


def number_text(value: float) -> str:
    """The shortest text that reads back as the same double (what the translated URDF writes)."""
    return repr(float(value))


def vector_text(values) -> str:
    """Numbers as a URDF attribute's space-separated text (each `number_text`)."""
    return " ".join(number_text(v) for v in values)


def find_frame(path: str, known: set[str], source: SourceRef, socket: str) -> str:
    """`path` if it names a frame, a body or the ground; else the one known component of that name."""
    if path in known:
        return path
    name = path.rsplit("/", 1)[-1]
    matches = sorted(p for p in known if p.rsplit("/", 1)[-1] == name)
    if len(matches) == 1:
        return matches[0]
    raise source.error(socket, f"unknown frame {bare(path, 80)!r}" if not matches else
                       f"ambiguous frame {bare(name, 60)!r} ({', '.join(matches[:4])})",
                       "the path of a body, the ground or a PhysicalOffsetFrame")


def orientation_matrix(orientation) -> np.ndarray:
    """Rotation of an OpenSim frame orientation: body-fixed X-Y-Z angles, R = Rx(a) Ry(b) Rz(c)."""
    a, b, c = orientation
    return axis_rotation(X, a) @ axis_rotation(Y, b) @ axis_rotation(Z, c)


def axis_rotation(axis, angle: float) -> np.ndarray:
    """Rotation by `angle` about the unit vector `axis`."""
    return axis_angle_matrix(np.asarray(axis, dtype=float), angle)
