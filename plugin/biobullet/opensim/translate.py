"""An OpenSim model (`document.Document`) → URDF text with a `<biobullet>` block, and the map from OpenSim
bodies to the URDF links that carry them.

Every OpenSim joint is Simbody's function-based mobilizer: X_FM(q) = (R, p) with R = R₁(θ₁) R₂(θ₂) R₃(θ₃) the
rotation axes applied in order as body-fixed rotations (each axis in the frame the previous rotations produced)
and p = Σ τ_k a_k the translations along axes fixed in the parent frame F. As a URDF chain that is
F → prismatic τ₁, τ₂, τ₃ (they do not rotate the frame) → revolute θ₁ → θ₂ → θ₃ → M. Constant axes are folded
into the next joint's `<origin>`; an axis whose value is a coordinate itself (LinearFunction 1·q + 0) is the URDF
joint named after the coordinate; any other axis is a joint driven by a `<joint_function>` of the coordinates.
A coordinate that no axis carries as itself gets its own joint (a massless carrier link on the parent), so every
coordinate name is a joint name and v = q̇. A body's link is the last moving joint's child: its URDF frame is
that joint's frame, placed in the body frame by `BodyLink` (point p_body ↦ rotation @ p_body + translation).
"""
from __future__ import annotations

import re
import sys
from dataclasses import dataclass, replace
from xml.sax.saxutils import quoteattr

import numpy as np

from biobullet.core.errors import ModelError, SourceRef
from biobullet.opensim.constraints import constraint_loops, dependent_coordinates
from biobullet.opensim.contact import contact_elements
from biobullet.opensim.forces import force_elements
from biobullet.muscles.osim import MUSCLE_CLASSES
from biobullet.opensim.muscles import muscle_lines
from biobullet.opensim.document import Document, Joint, OsimFunction, PropertyReader, TransformAxis, axis_rotation, \
    number_text, opensim_rotational, orientation_matrix, vector_text
from biobullet.spatial.rotations import matrix_to_rpy

@dataclass(frozen=True)
class BodyLink:
    """Where an OpenSim body sits in the URDF model: `link` and the body frame in the link frame
    (p_link = rotation @ p_body + translation)."""

    link: str
    rotation: np.ndarray
    translation: np.ndarray

    def transform(self) -> np.ndarray:
        """The 4×4 homogeneous transform link ← body."""
        matrix = np.eye(4)
        matrix[:3, :3] = self.rotation
        matrix[:3, 3] = self.translation
        return matrix


@dataclass(frozen=True)
class Translation:
    urdf: str
    bodies: dict[str, BodyLink]       # by OpenSim body name (the ground too)
    coordinates: tuple[str, ...]      # independent coordinates, in the CoordinateSet's order
    reports: tuple[str, ...]          # one line per component not imported (or imported approximately)
    mapped: frozenset[str]            # paths of the forces, constraints, contact geometry that became elements


def function_spec(function: OsimFunction, inputs: tuple[str, ...]) -> tuple[str, dict[str, str]] | None:
    """The `<joint_function>` type and attributes of an OpenSim function of `inputs` (None for a constant)."""
    s = function.scale
    if function.kind == "constant":
        return None
    if function.kind == "linear":
        return "linear", {"coefficients": vector_text(s * a for a in function.values[:-1]),
                          "offset": number_text(s * function.values[-1])}
    if function.kind == "polynomial":
        return "polynomial", {"coefficients": vector_text(s * c for c in reversed(function.values))}
    if function.kind == "ellipsoid":   # Simbody's Ellipsoid mobilizer: p_k = radius_k n_k(q₁, q₂)
        radius, k = function.values
        q1, q2 = inputs
        component = (f"sin({q2})", f"-sin({q1})*cos({q2})", f"cos({q1})*cos({q2})")[int(k)]
        return "expression", {"expression": f"radius*{component}", "parameters": f"radius={number_text(s * radius)}"}
    if function.kind == "sine":
        amplitude, omega, phase, offset = function.values
        return "expression", {"expression": f"amplitude*sin(omega*{inputs[0]} + phase) + offset",
                              "parameters": f"amplitude={number_text(s * amplitude)} omega={number_text(omega)} "
                                            f"phase={number_text(phase)} offset={number_text(s * offset)}"}
    attributes = {"x": vector_text(function.x), "y": vector_text(s * y for y in function.y), "extrapolation": "linear"}
    degree = int(function.values[0])
    if function.spline_type == "GCVSpline" and degree != 3:
        # GCVSPL without smoothing: the natural spline of degree 2m − 1, continued by its degree m − 1 polynomial
        return "natural_spline", {"x": attributes["x"], "y": attributes["y"], "degree": str(degree)}
    if function.spline_type == "PiecewiseLinearFunction":
        attributes["degree"] = "1"
    else:
        # OpenSim 4 reads NaturalCubicSpline as SimmSpline (a renamed type); a cubic GCVSpline without error
        # variance is the natural interpolating spline, continued linearly
        attributes["boundary"] = "natural" if function.spline_type == "GCVSpline" else "fmm"
    return "spline", attributes


def time_expression(function: OsimFunction) -> str | None:
    """A prescribed coordinate's f(t) as an `expression` joint function's text (None: not expressible)."""
    s, values = function.scale, function.values
    if function.kind == "linear":
        return f"({number_text(s * values[0])})*t + ({number_text(s * values[1])})"
    if function.kind == "polynomial":   # highest power first, as OpenSim writes it
        return " + ".join(f"({number_text(s * c)})*t**{len(values) - 1 - k}" for k, c in enumerate(values))
    if function.kind == "sine":
        amplitude, omega, phase, offset = values
        return (f"({number_text(s * amplitude)})*sin(({number_text(omega)})*t + ({number_text(phase)})) + "
                f"({number_text(s * offset)})")
    return None


def is_identity(function: OsimFunction, inputs: tuple[str, ...]) -> bool:
    return (function.kind == "linear" and len(inputs) == 1
            and function.scale * function.values[0] == 1.0 and function.scale * function.values[1] == 0.0)


def evaluate(function: OsimFunction, inputs: tuple[str, ...], values: dict[str, float]) -> float:
    """The function's value at the given coordinate values (through the joint-function type it maps to)."""
    spec = function_spec(function, inputs)
    if spec is None:
        return function.scale * function.values[0]
    from biobullet.functions import registry

    kind, attributes = spec
    built = registry.get(kind).from_attributes(attributes, inputs, function.source)
    return float(built.value(np.array([values[name] for name in inputs])))


class _Transform:
    """A rigid transform (R, p): x ↦ R x + p."""

    def __init__(self, rotation=None, translation=None) -> None:
        self.rotation = np.eye(3) if rotation is None else np.asarray(rotation, dtype=float)
        self.translation = np.zeros(3) if translation is None else np.asarray(translation, dtype=float)

    def __matmul__(self, other: "_Transform") -> "_Transform":
        return _Transform(self.rotation @ other.rotation, self.rotation @ other.translation + self.translation)

    def inverse(self) -> "_Transform":
        return _Transform(self.rotation.T, -self.rotation.T @ self.translation)

    def origin(self) -> str:
        return f'<origin xyz="{vector_text(self.translation)}" rpy="{vector_text(matrix_to_rpy(self.rotation))}"/>'


def fold_constant_inputs(function: OsimFunction, inputs: tuple[str, ...], constant: dict[str, float]
                         ) -> tuple[OsimFunction, tuple[str, ...]]:
    """(function, inputs) without the constant (locked) inputs of a function that still has free ones: only a
    LinearFunction takes several inputs, so the constant ones fold into its intercept."""
    if not any(name in constant for name in inputs) or all(name in constant for name in inputs):
        return function, inputs
    if function.kind != "linear":   # an EllipsoidJoint's translation: its locked input stays a named input
        raise function.source.error("coordinates", f"{', '.join(n for n in inputs if n in constant)} locked and "
                                    f"{', '.join(n for n in inputs if n not in constant)} free: not supported",
                                    "all of its first two coordinates locked, or none")
    slopes, intercept = function.values[:-1], function.values[-1]
    intercept += sum(a * constant[name] for a, name in zip(slopes, inputs) if name in constant)
    kept = [(a, name) for a, name in zip(slopes, inputs) if name not in constant]
    return replace(function, values=(*(a for a, _ in kept), intercept)), tuple(name for _, name in kept)


def _is_constant(axis: TransformAxis, constant: dict[str, float]) -> bool:
    """True if the axis does not move: a constant function, or only locked (constant) coordinates."""
    return axis.function.kind == "constant" or all(name in constant for name in axis.coordinates)


def _axis_transform(axis: TransformAxis, value: float) -> _Transform:
    if axis.rotation:
        return _Transform(axis_rotation(axis.axis, value))
    return _Transform(translation=value * np.asarray(axis.axis))


class _Builder:
    def __init__(self, document: Document) -> None:
        self.document = document
        self.file = document.file
        self.links: list[str] = []
        self.joints: list[str] = []
        self.functions: list[str] = []
        self.body_links: dict[str, BodyLink] = {}
        self.link_frames: dict[str, _Transform] = {}   # body path → body frame in its link's frame
        self.link_names: set[str] = set()
        self.joint_names: set[str] = set()
        self.reports: list[str] = []
        self.body_entries: list[tuple[int, str, object, _Transform]] = []
        # per coordinate: (parent link, joint frame F in it) — where its carrier joint goes if needed
        self.carrier_parent: dict[str, tuple[str, _Transform]] = {}
        self.link_of: dict[str, str] = {}
        #: link → its frame in the ground link's frame, for the links welded to the ground by fixed joints
        self.grounded: dict[str, _Transform] = {}

    # ------------------------------------------------------------------ names
    def unique(self, name: str, taken: set[str]) -> str:
        candidate, k = name, 1
        while candidate in taken:
            k += 1
            candidate = f"{name}_{k}"
        taken.add(candidate)
        return candidate

    # ------------------------------------------------------------------ frames
    def frame_in_body(self, path: str) -> tuple[str, _Transform]:
        """(body or ground path, frame in that body's frame) of frame `path` (chains of offset frames)."""
        transform, seen = _Transform(), set()
        while path in self.document.frames:
            if path in seen:
                raise self.document.frames[path].source.error("socket_parent", "the offset frames form a cycle",
                                                              "frames that end on a body or the ground")
            seen.add(path)
            frame = self.document.frames[path]
            transform = _Transform(orientation_matrix(frame.orientation), frame.translation) @ transform
            path = frame.parent
        if path != self.document.ground and path not in self.document.bodies:
            raise ModelError(f"frame parent {path!r} is no body, frame or ground", file=self.file,
                             expected="a body, the ground or a PhysicalOffsetFrame")
        return path, transform

    # ------------------------------------------------------------------ build
    def build(self) -> Translation:
        document = self.document
        ground_link = self.unique(document.ground.strip("/"), self.link_names)
        self.links.append(f"  <link name={quoteattr(ground_link)}/>")
        self.body_links[ground_link] = BodyLink(ground_link, np.eye(3), np.zeros(3))
        self.link_frames[document.ground] = _Transform()
        self.grounded[ground_link] = _Transform()
        self.link_of[document.ground] = ground_link
        coordinates = {c.name: c for joint in document.joints for c in joint.coordinates}
        # OpenSim's motion type: rotational if a rotation axis uses the coordinate (or none does)
        uses = {name: [axis for joint in document.joints for axis in joint.axes if name in axis.coordinates]
                for name in coordinates}
        self.rotational = {name: not axes or any(axis.rotation for axis in axes) for name, axes in uses.items()}
        self.joint_names.update(coordinates)
        constant = self.constant_coordinates(coordinates)
        couplers = self.couplers(coordinates, constant)
        carried: set[str] = set()
        joints = [self.joint_ends(joint, reversed_) for joint, reversed_ in self.ordered_joints()]
        for joint, ends in joints:
            self.add_joint(joint, ends, constant, carried)
        # the skeleton's visuals: a rod from each body's origin to each child joint's centre in the default pose
        # (a knee's centre moves with its translation functions, so it is not the parent frame's origin)
        defaults = {name: c.default_value for name, c in coordinates.items()}
        children: dict[str, list[np.ndarray]] = {}
        for joint, (inboard, _, axes) in joints:
            parent_body, centre = self.frame_in_body(inboard)
            for axis in axes:
                centre = centre @ _axis_transform(axis, evaluate(axis.function, axis.coordinates, defaults))
            children.setdefault(parent_body, []).append(centre.translation)
        for index, link, body, in_link in self.body_entries:
            self.links[index] = self.body_link(link, body, in_link, children.get(body.path, []))
        for name, coordinate in coordinates.items():
            if name in constant or name in carried:
                continue
            self.add_carrier(name, coordinate)
        for dependent, (function, inputs, source) in couplers.items():
            self.add_function(dependent, function, inputs)
        timed: set[str] = set()
        for name, coordinate in coordinates.items():   # OpenSim's prescribed motion q = f(t): driven by time
            text = None if coordinate.prescribed_function is None or name in constant or name in couplers \
                else time_expression(coordinate.prescribed_function)
            if text is not None:
                timed.add(name)
                self.functions.append(f"    <joint_function joint={quoteattr(name)} type=\"expression\" "
                                      f"expression={quoteattr(text)}/>")
        independent = tuple(name for name in document.coordinate_order
                            if name not in constant and name not in couplers and name not in timed)
        elements, mapped, reports = force_elements(document, self.body_links,
                                                   {name for name in coordinates if name not in constant},
                                                   opensim_rotational(document.joints))
        self.functions.extend(elements)
        self.reports.extend(reports)
        contacts, mapped_contact, reports = contact_elements(document, self.place_grounded, ground_link)
        self.functions.extend(contacts)
        self.reports.extend(reports)
        mapped |= mapped_contact
        loops, mapped_constraints, reports = constraint_loops(document, self.place)
        self.reports.extend(reports)
        mapped |= mapped_constraints
        dependent: tuple[str, ...] = ()
        if loops:   # choose the coordinates the loops make dependent on the tree without them
            dependent, loops = dependent_coordinates(self.tree_model(independent, coordinates), loops, independent)
            independent = tuple(name for name in independent if name not in dependent)
            self.functions.extend(spec.element() for spec in loops)
        muscles = [force for force in document.forces if force.type in MUSCLE_CLASSES]
        if muscles:
            reader = PropertyReader(document.file)
            # switched off in OpenSim (appliesForce false): no force to apply, so no `<muscle>` either
            disabled = {force.name for force in muscles if not reader.flag(force.element, "appliesForce", True)
                        or reader.flag(force.element, "isDisabled")}
            instant = {force.name for force in muscles if reader.flag(force.element, "ignore_activation_dynamics")}
            lines, reports = muscle_lines(document.file, self.body_links, constant, disabled, instant)
            self.functions.extend(lines)
            self.reports.extend(reports)
        for joint in document.joints:
            for coordinate in joint.coordinates:
                if coordinate.prescribed and coordinate.name not in timed:
                    self.reports.append(f"Coordinate {coordinate.name}: prescribed motion not imported (free "
                                        "coordinate)")
        return Translation(self.urdf(independent, coordinates, dependent), dict(self.body_links), independent,
                           tuple(self.reports), frozenset(mapped))

    def place(self, path: str) -> tuple[str, np.ndarray, np.ndarray] | None:
        """(link, rotation, translation) of an OpenSim frame or body in the URDF link frame (None if its body is
        not imported)."""
        body, in_body = self.frame_in_body(path)
        if body not in self.link_frames:
            return None
        placement = self.link_frames[body] @ in_body
        return self.link_of[body], placement.rotation, placement.translation

    def place_grounded(self, path: str) -> tuple[str, np.ndarray, np.ndarray] | None:
        """`place`, with a frame on a link welded to the ground placed in the ground link (a half-space on a
        welded platform is a ground half-space: Simbody's weld does not move)."""
        placed = self.place(path)
        if placed is None or placed[0] not in self.grounded:
            return placed
        link, rotation, translation = placed
        weld = self.grounded[link]
        return (self.link_of[self.document.ground], weld.rotation @ rotation,
                weld.rotation @ translation + weld.translation)

    def tree_model(self, independent: tuple[str, ...], coordinates):
        """The translated model without loops (warnings silenced: the final load reports them)."""
        import warnings
        from biobullet.dynamics.api import build_model
        from biobullet.model.urdf import description_from_root, parse_xml

        text = self.urdf(independent, coordinates, ())
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return build_model(description_from_root(parse_xml(self.file, text.encode("utf-8")), self.file, None,
                                                     "warn"))

    def constant_coordinates(self, coordinates) -> dict[str, float]:
        """Locked coordinates at their default values, coupled coordinates whose inputs are all constant or
        whose function is a Constant (OpenSim holds them at its value, whatever the inputs do), and the free input
        of a LinearFunction coupler whose dependent coordinate is constant (OpenSim's coupler then holds it)."""
        constant = {name: c.default_value for name, c in coordinates.items() if c.locked}
        changed = True
        while changed:
            changed = False
            for coupler in self.document.couplers:
                if not coupler.enforced:
                    continue
                if coupler.dependent not in constant:
                    if coupler.function.kind == "constant" or all(name in constant for name in coupler.independent):
                        constant[coupler.dependent] = evaluate(coupler.function, coupler.independent, constant)
                        changed = True
                    continue
                free = [name for name in coupler.independent if name not in constant]
                if free and coupler.function.kind != "constant":
                    name, value = self.held_input(coupler, free, constant)
                    constant[name] = value
                    changed = True
        return constant

    @staticmethod
    def held_input(coupler, free: list[str], constant: dict[str, float]) -> tuple[str, float]:
        """(input, value) that an enforced coupler holds when its dependent coordinate is constant: s (a x + b) = c
        for its one free input x of a LinearFunction (a ≠ 0); anything else is refused, naming the coupler."""
        function = coupler.function
        slopes = dict(zip(coupler.independent, function.values[:-1])) if function.kind == "linear" else {}
        if len(free) != 1 or slopes.get(free[0], 0.0) == 0.0 or function.scale == 0.0:
            raise coupler.source.error("dependent_coordinate_name", f"the dependent coordinate {coupler.dependent!r} "
                                       f"is locked, so OpenSim holds the free input(s) {', '.join(free)} where the "
                                       f"{function.kind} function meets its value: not supported", "a locked "
                                       "dependent coordinate with one free input of a LinearFunction, or the "
                                       "inputs locked instead")
        rest = function.values[-1] + sum(a * constant[n] for n, a in slopes.items() if n != free[0])
        return free[0], (constant[coupler.dependent] / function.scale - rest) / slopes[free[0]]

    def couplers(self, coordinates, constant) -> dict[str, tuple[OsimFunction, tuple[str, ...], SourceRef]]:
        """The enforced couplers of free dependent coordinates: dependent → (function, free inputs, source);
        a coordinate coupled twice, or couplers that feed back on themselves, refused naming the coupler."""
        result = {}
        for coupler in self.document.couplers:
            if not coupler.enforced or coupler.dependent in constant:
                continue
            if coupler.dependent in result:
                raise coupler.source.error("dependent_coordinate_name", f"{coupler.dependent!r} is coupled twice",
                                           "one CoordinateCouplerConstraint per dependent coordinate")
            function, inputs = fold_constant_inputs(coupler.function, coupler.independent, constant)
            result[coupler.dependent] = (function, inputs, coupler.source)
        for dependent, (_, _, source) in result.items():
            path, name = [dependent], dependent
            while True:   # follow the first input that is itself coupled back to `dependent`
                name = next((n for n in result.get(name, ((), ()))[1] if n in result), None)
                if name is None or name in path[1:]:
                    break
                path.append(name)
                if name == dependent:
                    raise source.error("independent_coordinate_names", "the couplers form a cycle: "
                                       + " → ".join(path) + " (OpenSim solves them together)", "couplers whose "
                                       "inputs do not depend back on their dependent coordinate")
        return result

    def ordered_joints(self) -> list[tuple[Joint, bool]]:
        """(joint, reversed) from the ground outwards (a body's inbound joint before its outbound ones). A joint
        whose child body is reached first (the ground, or a body placed by another joint) is reversed, as
        OpenSim's graph maker reverses it: its parent body hangs from its child."""
        pending = list(self.document.joints)
        placed_by: dict[str, tuple[Joint, bool] | None] = {self.document.ground: None}
        ordered: list[tuple[Joint, bool]] = []
        while pending:
            ready = []
            for joint in pending:
                ends = (self.frame_in_body(joint.parent_frame)[0], self.frame_in_body(joint.child_frame)[0])
                if ends[0] in placed_by and ends[1] in placed_by:
                    raise joint.source.error("socket_child_frame", f"the joint closes a loop: bodies {ends[0]!r} and "
                                             f"{ends[1]!r} are already joined through other joints", "a tree of "
                                             "joints (close a loop with a PointConstraint or WeldConstraint)")
                if ends[0] in placed_by or ends[1] in placed_by:
                    ready.append((joint, ends[1] in placed_by, ends[0] if ends[1] in placed_by else ends[1]))
            if not ready:
                raise pending[0].source.error("socket_parent_frame", "the joint does not connect to the ground "
                                              "through other joints", "a tree rooted at the ground")
            for joint, reversed_, body in ready:   # a pass per level, in file order
                if body in placed_by:   # reached twice: a loop of joints
                    self.loop_error(joint, reversed_, body, placed_by[body])
                ordered.append((joint, reversed_))
                placed_by[body] = (joint, reversed_)
                pending.remove(joint)
        for path, body in self.document.bodies.items():
            if path not in placed_by:
                self.reports.append(f"Body {body.name}: no joint connects it to the ground; not imported")
        return ordered

    @staticmethod
    def loop_error(joint: Joint, reversed_: bool, body: str, first: tuple[Joint, bool] | None) -> None:
        """Refuse `joint`, which reaches `body` a second time (OpenSim would cut the loop with a hidden weld)."""
        if first is not None and not reversed_ and not first[1]:
            detail = f"body {body!r} is the child of two joints ({first[0].name!r} and {joint.name!r})"
        else:
            detail = f"the joint closes a loop: body {body!r} is already joined through another joint"
        raise joint.source.error("socket_child_frame", detail, "a tree of joints (close a loop with a "
                                 "PointConstraint or WeldConstraint)")

    @staticmethod
    def joint_ends(joint: Joint, reversed_: bool) -> tuple[Joint, tuple[str, str, tuple[TransformAxis, ...]]]:
        """(joint, (inboard frame, outboard frame, axes from inboard to outboard)). A reversed joint goes from
        its child frame M to its parent frame F: X_MF = X_FM(q)⁻¹ = R₃(−θ₃) R₂(−θ₂) R₁(−θ₁) then −p, i.e. the
        axes in the opposite order about the opposite directions, with the same functions of the same q."""
        if not reversed_:
            return joint, (joint.parent_frame, joint.child_frame, joint.axes)
        axes = tuple(replace(axis, axis=tuple(-a for a in axis.axis)) for axis in reversed(joint.axes))
        return joint, (joint.child_frame, joint.parent_frame, axes)

    def add_joint(self, joint: Joint, ends: tuple[str, str, tuple[TransformAxis, ...]], constant: dict[str, float],
                  carried: set[str]) -> None:
        """The URDF chain of `joint` from its inboard frame to its outboard frame along `axes` (`joint_ends`)."""
        inboard, outboard, axes = ends
        parent_body, parent_in_body = self.frame_in_body(inboard)
        child_body, child_in_body = self.frame_in_body(outboard)
        parent_link = self.link_of[parent_body]
        pending = self.link_frames[parent_body] @ parent_in_body     # F in the parent link's frame
        moving = [axis for axis in axes if not _is_constant(axis, constant)]
        body = self.document.bodies[child_body]
        child_link = self.unique(body.name, self.link_names)
        for axis in axes:
            if _is_constant(axis, constant):
                value = evaluate(axis.function, axis.coordinates, constant)
                pending = pending @ _axis_transform(axis, value)
                continue
            last = axis is moving[-1]
            function, inputs = fold_constant_inputs(axis.function, axis.coordinates, constant)
            axis = replace(axis, function=function, coordinates=inputs)   # locked inputs folded
            identity = is_identity(axis.function, axis.coordinates) and axis.coordinates[0] not in carried
            link = child_link if last else self.unique(f"{joint.name}_{axis.name}", self.link_names)
            if identity:
                name = axis.coordinates[0]
                carried.add(name)
            else:
                name = self.unique(f"{joint.name}_{axis.name}", self.joint_names)
                self.add_function(name, axis.function, axis.coordinates)
            coordinate = next((c for c in joint.coordinates if c.name == name), None)
            self.add_urdf_joint(name, "revolute" if axis.rotation else "prismatic", parent_link, link, pending,
                                axis.axis, coordinate.range if coordinate is not None else None)
            if not last:
                self.links.append(f"  <link name={quoteattr(link)}/>")
            parent_link, pending = link, _Transform()
        if not moving:
            origin = pending @ child_in_body.inverse()
            self.add_urdf_joint(self.unique(joint.name, self.joint_names), "fixed", parent_link, child_link, origin,
                                (1.0, 0.0, 0.0), None)
            if parent_link in self.grounded:
                self.grounded[child_link] = self.grounded[parent_link] @ origin
            in_link = _Transform()
        else:
            in_link = pending @ child_in_body.inverse()
        self.link_of[child_body] = child_link
        self.link_frames[child_body] = in_link
        self.body_links[body.name] = BodyLink(child_link, in_link.rotation, in_link.translation)
        for coordinate in joint.coordinates:
            self.carrier_parent[coordinate.name] = (self.link_of[parent_body],
                                                    self.link_frames[parent_body] @ parent_in_body)
        self.body_entries.append((len(self.links), child_link, body, in_link))
        self.links.append("")   # the body's link text, written once its child joints are known (visuals)

    def add_carrier(self, name: str, coordinate) -> None:
        """A joint for a coordinate that no axis carries as itself: it moves a massless link on the parent."""
        parent_link, frame = self.carrier_parent[name]
        link = self.unique(f"{name}_coordinate", self.link_names)
        self.links.append(f"  <link name={quoteattr(link)}/>")
        self.add_urdf_joint(name, "revolute" if self.rotational[name] else "prismatic", parent_link, link, frame,
                            (0.0, 0.0, 1.0), coordinate.range)

    def add_urdf_joint(self, name: str, kind: str, parent: str, child: str, origin: _Transform, axis,
                       limits: tuple[float, float] | None) -> None:
        lines = [f"  <joint name={quoteattr(name)} type=\"{kind}\">", f"    <parent link={quoteattr(parent)}/>",
                 f"    <child link={quoteattr(child)}/>", f"    {origin.origin()}"]
        if kind != "fixed":
            lines.append(f'    <axis xyz="{vector_text(axis)}"/>')
            lower, upper = limits if limits is not None else (-1e3, 1e3)
            lines.append(f'    <limit lower="{number_text(lower)}" upper="{number_text(upper)}" effort="0" '
                         'velocity="0"/>')
        lines.append("  </joint>")
        self.joints.append("\n".join(lines))

    def add_function(self, joint: str, function: OsimFunction, inputs: tuple[str, ...]) -> None:
        spec = function_spec(function, inputs)
        assert spec is not None   # constants are folded by the callers
        kind, attributes = spec
        text = " ".join(f"{key}={quoteattr(value)}" for key, value in attributes.items())
        self.functions.append(f"    <joint_function joint={quoteattr(joint)} type=\"{kind}\" "
                              f"inputs={quoteattr(' '.join(inputs))} {text}/>")

    def body_link(self, link: str, body, in_link: _Transform, children: list[np.ndarray]) -> str:
        # OpenSim (Body::getInertia) resets the inertia of a massless body to zero, whatever the file says
        massless = abs(body.mass) <= MASSLESS and any(body.inertia)
        inertia = (0.0,) * 6 if massless else body.inertia
        tensor = np.array([[inertia[0], inertia[3], inertia[4]], [inertia[3], inertia[1], inertia[5]],
                           [inertia[4], inertia[5], inertia[2]]])
        tensor = in_link.rotation @ tensor @ in_link.rotation.T
        com = in_link.rotation @ np.asarray(body.mass_center) + in_link.translation
        meshes = "".join(f"\n    <!-- OpenSim mesh {_comment(mesh)} scale {vector_text(scale)} -->"
                         for mesh, scale in body.meshes)
        if massless:
            meshes += "\n    <!-- massless body: its inertia is zero, as OpenSim makes it -->"
        visuals = "".join(_visuals(body, in_link, children))
        return (f"  <link name={quoteattr(link)}>{meshes}{visuals}\n    <inertial>\n"
                f'      <origin xyz="{vector_text(com)}" rpy="0 0 0"/>\n      <mass value="{number_text(body.mass)}"/>\n'
                f'      <inertia ixx="{number_text(tensor[0, 0])}" iyy="{number_text(tensor[1, 1])}" '
                f'izz="{number_text(tensor[2, 2])}" ixy="{number_text(tensor[0, 1])}" '
                f'ixz="{number_text(tensor[0, 2])}" iyz="{number_text(tensor[1, 2])}"/>\n'
                f"    </inertial>\n  </link>")

    def urdf(self, independent: tuple[str, ...], coordinates, dependent: tuple[str, ...]) -> str:
        """The URDF text: links, joints and the `<biobullet>` block (`dependent`: loop-dependent coordinates,
        their default values written as the assembly's first guess)."""
        document = self.document
        credits = _comment(document.credits[:2000]) if document.credits else ""
        header = [f"<?xml version=\"1.0\"?>",
                  f"<!-- translated from the OpenSim model {_comment(document.file)} by biobullet "
                  f"(biobullet convert); body frames, joint functions and couplings as in OpenSim -->"]
        if credits:
            header.append(f"<!-- credits of the OpenSim model: {credits} -->")
        block = [f'  <biobullet version="1">', f'    <gravity xyz="{vector_text(document.gravity)}"/>',
                 '    <base type="fixed"/>']
        if independent:
            block.append(f"    <coordinates names={quoteattr(' '.join(independent))}/>")
        for name in independent:
            c = coordinates[name]
            block.append(f"    <initial joint={quoteattr(name)} position=\"{number_text(c.default_value)}\" "
                         f"velocity=\"{number_text(c.default_speed)}\"/>")
        for name in dependent:
            block.append(f"    <initial joint={quoteattr(name)} "
                         f"position=\"{number_text(coordinates[name].default_value)}\"/>")
        block.extend(self.functions)
        block.append("  </biobullet>")
        return "\n".join([*header, f"<robot name={quoteattr(document.name)}>", *self.links, *self.joints,
                          *block, "</robot>", ""])


#: a mass at most Simbody's SignificantReal (ε^(7/8), kg) is massless for OpenSim
MASSLESS = sys.float_info.epsilon ** 0.875
#: visuals: rod radius (m) and the density (kg/m³) that sizes the ball at each mass centre
ROD_RADIUS = 0.012
BALL_DENSITY = 4000.0


def _visuals(body, in_link: "_Transform", children: list[np.ndarray]) -> list[str]:
    """Simple shapes showing the body (OpenSim's .vtp meshes are not shipped): a ball at the mass centre and a
    rod from the body origin to each child joint frame (or to the mass centre of a leaf body), in the link frame."""
    out = []
    com = np.asarray(body.mass_center)
    ends = [p for p in children if np.linalg.norm(p) > 1e-6] or ([com] if np.linalg.norm(com) > 1e-6 else [])
    for end in ends:
        length = float(np.linalg.norm(end))
        z = end / length
        helper = np.array([1.0, 0.0, 0.0]) if abs(z[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
        x = np.cross(helper, z)
        x /= np.linalg.norm(x)
        rod = _Transform(np.column_stack([x, np.cross(z, x), z]), end / 2.0)
        out.append(_visual(in_link @ rod, f'<cylinder radius="{ROD_RADIUS}" length="{number_text(length)}"/>'))
    if body.mass > 0.0:
        radius = max(0.015, 0.5 * (3.0 * body.mass / (4.0 * np.pi * BALL_DENSITY)) ** (1.0 / 3.0))
        out.append(_visual(in_link @ _Transform(translation=com), f'<sphere radius="{number_text(radius)}"/>'))
    return out


def _visual(placement: "_Transform", geometry: str) -> str:
    return (f"\n    <visual>\n      {placement.origin()}\n      <geometry>{geometry}</geometry>\n"
            f'      <material name="bone"><color rgba="0.89 0.85 0.79 1"/></material>\n    </visual>')


def _comment(text: str) -> str:
    """Text safe inside an XML comment (no '--', no control characters)."""
    cleaned = "".join(ch if ch.isprintable() else " " for ch in str(text))
    return re.sub("-(?=-)", "- ", cleaned)   # (str.replace left "--" in "---": a credit "--->" closed the comment)


def translate(document: Document) -> Translation:
    """The URDF text, body map and reports of an OpenSim document (see the module docstring)."""
    return _Builder(document).build()


__all__ = ["BodyLink", "Translation", "translate", "function_spec", "evaluate"]
