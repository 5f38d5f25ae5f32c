"""What a model looks like: its URDF visual geometry as triangle meshes, and where everything is at a configuration.

Shared by the interactive viewer (`render.viewer`, viser) and the self-contained HTML export (`render.html`), so both
draw exactly the same thing. Units: metres; rotations are 3×3 matrices (world ← link); colours are RGBA in [0, 1].

* `Scene.from_model(model)` reads the `<visual>` elements of the model's URDF (box, cylinder, sphere, mesh with
  `package://` or relative file names; `<material>` colours, named at robot level or inline) into `Visual`s, each
  with its triangles in its link frame. Links of a flexible link expanded into rigid segments
  (`flexible.segments`) get one slab per segment, so the bending shows.
* `Scene.link_placements(x)` — world placement of every URDF link at the tree configuration x (forward kinematics of
  `algorithms.kinematics`; x = `model.joint_configuration(q)` so joint functions and loops follow q).
* `Scene.markers(x)` — COMs, joint axes, contact points and loop-closure residuals (the two points of each loop that
  should coincide, and their distance).

URDF files come from strangers: the XML is only read (ElementTree), never executed; mesh paths must name existing
files (ModelError naming file, element and attribute otherwise).
"""
from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

import numpy as np

from biobullet.core.attributes import floats, vector3
from biobullet.core.errors import ModelError, SourceRef, shown
from biobullet.model.meshes import resolve_mesh_path
from biobullet.spatial.rotations import rpy_to_matrix

DEFAULT_COLOR = (0.62, 0.64, 0.68, 1.0)


def up_direction(gravity) -> np.ndarray:
    """The unit "up" of a scene: −gravity, or +z for a model without gravity."""
    gravity = np.asarray(gravity, float)
    norm = float(np.linalg.norm(gravity))
    return -gravity / norm if norm > 0 else np.array([0.0, 0.0, 1.0])


def frame_with_z(z) -> np.ndarray:
    """A rotation whose third column is the unit vector along z, its first the world x (or y, for z near x) made
    perpendicular to z."""
    z = np.asarray(z, float) / np.linalg.norm(z)
    helper = np.array([1.0, 0.0, 0.0]) if abs(z[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    x = helper - z * (helper @ z)
    x /= np.linalg.norm(x)
    return np.column_stack([x, np.cross(z, x), z])


#: muscle path colours (RGB, 0–1) at activation 0 (blue) and 1 (red); between them linearly
MUSCLE_RESTING = (0.20, 0.35, 0.90)
MUSCLE_ACTIVE = (0.90, 0.08, 0.08)


def activation_colors(activations, count: int) -> np.ndarray:
    """RGB (count × 3, 0–1) of muscle paths at `activations` (None = 0, a scalar, or one value per muscle; clipped
    to [0, 1]): MUSCLE_RESTING at 0 to MUSCLE_ACTIVE at 1."""
    a = np.zeros(count) if activations is None else np.broadcast_to(np.asarray(activations, float), (count,))
    a = np.clip(np.nan_to_num(a), 0.0, 1.0)[:, None]
    return (1.0 - a) * np.asarray(MUSCLE_RESTING) + a * np.asarray(MUSCLE_ACTIVE)


def frame_activations(activations, k: int, time: float):
    """The muscle activations of frame k at `time` (s): `activations` is None, a scalar, one value per muscle, an
    array (frames × muscles; row k), or a function of time returning one of those."""
    if callable(activations):
        return activations(time)
    if activations is not None and np.ndim(activations) == 2:
        return np.asarray(activations, float)[min(k, len(activations) - 1)]
    return activations


def trajectory_activations(model, trajectory):
    """The activations a run recorded (`Trajectory.muscles["activation"]`), as a function of time returning one
    value per muscle of `model` (linear between samples; muscles the run did not record, and samples before the
    muscles entered, at 0); None when the trajectory carries no activations."""
    records = getattr(trajectory, "muscles", None) or {}
    if "activation" not in records or not model.description.muscles:
        return None
    from biobullet.muscles.api import names
    recorded = tuple(getattr(trajectory, "muscle_names", ()))
    t = np.asarray(trajectory.t, float)
    values = np.nan_to_num(np.asarray(records["activation"], float))
    columns = [recorded.index(name) if name in recorded else -1 for name in names(model)]

    def at(time: float) -> np.ndarray:
        return np.array([np.interp(time, t, values[:, c]) if c >= 0 else 0.0 for c in columns])
    return at


@dataclass(frozen=True)
class Visual:
    """One `<visual>`: triangles (`vertices` n×3 in the LINK frame, m, `faces` m×3 int) and an RGBA colour."""

    link: str
    kind: str  # box | cylinder | sphere | mesh | segment
    vertices: np.ndarray
    faces: np.ndarray
    color: tuple[float, float, float, float]


@dataclass(frozen=True)
class Markers:
    """World positions (m) at one configuration. axes: (origin, unit axis) per movable joint; loops: (point on
    link_a, point on link_b) per loop, whose distance is the loop's residual."""

    coms: np.ndarray
    com_names: tuple[str, ...]
    axes: list[tuple[np.ndarray, np.ndarray]]
    axis_names: tuple[str, ...]
    contacts: np.ndarray
    contact_names: tuple[str, ...]
    loops: list[tuple[np.ndarray, np.ndarray]]
    loop_names: tuple[str, ...]

    def loop_residuals(self) -> np.ndarray:
        """Distance (m) between the two points of each loop (0 for a closed loop)."""
        return np.array([float(np.linalg.norm(b - a)) for a, b in self.loops])


@dataclass
class Scene:
    model: object
    visuals: list[Visual]
    links: tuple[str, ...] = field(default=())

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_model(cls, model, *, layouts: dict | None = None) -> "Scene":
        """Visuals of `model` (a `biobullet.Model`); `layouts` = the SegmentLayouts of `load_segmented_model` for a
        model whose flexible links were expanded (their visuals are replaced by one slab per segment)."""
        file = model.file
        visuals = read_visuals(file, model.description.translated_urdf)
        known = set(model.link_names)
        visuals = [v for v in visuals if v.link in known]
        for lay in (layouts or {}).values():
            visuals += _segment_visuals(file, lay)
        scene = cls(model=model, visuals=visuals, links=tuple(model.link_names))
        if not visuals:  # a model without <visual>s: a ball at every link origin, so there is something to see
            x = model.joint_configuration(model.neutral_configuration())
            origins = np.array([p for _, p in scene.link_placements(x).values()])
            radius = max(0.03 * float(np.ptp(origins, axis=0).max()), 0.01)
            ball = sphere_mesh(radius, rings=6, sectors=10)
            scene.visuals = [Visual(link=name, kind="sphere", vertices=ball[0], faces=ball[1], color=DEFAULT_COLOR)
                             for name in model.link_names]
        return scene

    # ------------------------------------------------------------------ kinematics
    def link_placements(self, x: np.ndarray) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """World (R, p) of every URDF link at tree configuration x (see `Model.joint_configuration`)."""
        from biobullet.algorithms.kinematics import body_placements, frame_placement
        placements = body_placements(self.model, np.asarray(x, float))
        return {name: frame_placement(self.model, x, name, placements) for name in self.links}

    def visual_vertices(self, x: np.ndarray) -> list[np.ndarray]:
        """World vertices of every visual at x (same order as `visuals`)."""
        frames = self.link_placements(x)
        out = []
        for visual in self.visuals:
            r, p = frames[visual.link]
            out.append(visual.vertices @ r.T + p)
        return out

    def markers(self, x: np.ndarray) -> Markers:
        frames = self.link_placements(x)
        description = self.model.description

        def world(link: str, local) -> np.ndarray:
            r, p = frames[link]
            return r @ np.asarray(local, float) + p

        com_links = [link for link in description.links if link.inertial is not None and link.inertial.mass > 0
                     and link.name in frames]
        coms = np.array([world(link.name, link.inertial.com) for link in com_links]).reshape(-1, 3)
        axes, axis_names = [], []
        for joint in description.joints:
            if joint.movable and joint.child in frames:
                r, p = frames[joint.child]
                axes.append((p, r @ np.asarray(joint.axis, float)))
                axis_names.append(joint.name)
        contacts, contact_names = [], []
        for element in description.elements_of("contact"):
            link = element.get("link")
            if link in frames:
                contacts.append(world(link, vector3(element.source, element.attributes, "xyz")))
                contact_names.append(element.get("name") or link)
        loops, loop_names = [], []
        for element in description.elements_of("loop"):
            a, b = element.get("link_a"), element.get("link_b")
            if a in frames and b in frames:
                loops.append((world(a, vector3(element.source, element.attributes, "xyz_a")),
                              world(b, vector3(element.source, element.attributes, "xyz_b"))))
                loop_names.append(element.get("name") or f"{a}-{b}")
        return Markers(coms=coms, com_names=tuple(link.name for link in com_links), axes=axes,
                       axis_names=tuple(axis_names), contacts=np.array(contacts).reshape(-1, 3),
                       contact_names=tuple(contact_names), loops=loops, loop_names=tuple(loop_names))

    def muscle_paths(self, x: np.ndarray) -> list[np.ndarray]:
        """World polylines of the model's muscles at x (`biobullet.muscles.path_polylines`; [] without muscles)."""
        if not self.model.description.muscles:
            return []
        from biobullet.muscles.api import path_polylines
        return path_polylines(self.model, np.asarray(x, float))

    def bounds(self, xs) -> tuple[np.ndarray, np.ndarray]:
        """World AABB (lower, upper) of every visual over the configurations `xs` (m)."""
        points = [np.vstack(self.visual_vertices(x)) for x in xs if self.visuals]
        if not points:
            points = [np.array([p for _, p in self.link_placements(x).values()]) for x in xs]
        points = np.vstack(points)
        return points.min(axis=0), points.max(axis=0)


# ---------------------------------------------------------------------------------------------- URDF visuals
def read_visuals(file: str, text: str | None = None) -> list[Visual]:
    """Every `<visual>` of the URDF `file` (triangles in the link frame); `text`: the URDF text of a model
    translated from another format (`file` is then that format's file)."""
    try:
        robot = ET.parse(file).getroot() if text is None else ET.fromstring(text)
    except (ET.ParseError, OSError) as exc:
        raise ModelError(f"cannot read the model's visuals ({exc})", file=file) from None
    materials = {m.get("name"): _rgba(file, m) for m in robot.findall("material") if m.get("name")}
    out: list[Visual] = []
    for link in robot.findall("link"):
        name = link.get("name", "")
        for number, visual in enumerate(link.findall("visual"), 1):
            where = f'<link name="{name}"> <visual> number {number}'
            geometry = visual.find("geometry")
            shapes = [child for child in geometry if child.tag != "material"] if geometry is not None else []
            if not shapes:
                raise ModelError("visual without geometry", file=file, element=where, expected="<geometry>")
            shape = shapes[0]
            origin, origin_source = visual.find("origin"), SourceRef(file, where + " <origin>")
            rotation = rpy_to_matrix(vector3(origin_source, origin, "rpy"))
            translation = vector3(origin_source, origin, "xyz")
            vertices, faces, kind = _shape_mesh(file, where, shape)
            color = DEFAULT_COLOR
            material = visual.find("material")
            if material is not None:
                color = _rgba(file, material) or materials.get(material.get("name")) or DEFAULT_COLOR
            out.append(Visual(link=name, kind=kind, vertices=vertices @ rotation.T + translation,
                              faces=faces, color=color))
    return out


def _rgba(file: str, material: ET.Element):
    """A material's colour (four numbers in [0, 1]), or None without one."""
    color = material.find("color")
    if color is None or color.get("rgba") is None:
        return None
    where = f'<material name="{material.get("name", "")}"> <color>'
    return tuple(floats(SourceRef(file, where), color, "rgba", count=4, at_least=0.0, at_most=1.0).tolist())


def _sizes(file: str, where: str, shape: ET.Element, attribute: str, count: int = 1) -> np.ndarray:
    return floats(SourceRef(file, f"{where} <{shape.tag}>"), shape, attribute, count=count, non_negative=True)


def _shape_mesh(file: str, where: str, shape: ET.Element) -> tuple[np.ndarray, np.ndarray, str]:
    if shape.tag == "box":
        return (*box_mesh(_sizes(file, where, shape, "size", 3)), "box")
    if shape.tag == "sphere":
        return (*sphere_mesh(float(_sizes(file, where, shape, "radius")[0])), "sphere")
    if shape.tag in ("cylinder", "capsule"):
        radius = float(_sizes(file, where, shape, "radius")[0])
        length = float(_sizes(file, where, shape, "length")[0])
        return (*cylinder_mesh(radius, length), "cylinder")
    if shape.tag == "mesh":
        path = resolve_mesh_path(file, where, shape.get("filename"))
        # (PyBullet reads the first three numbers of the scale; a negative one mirrors the mesh)
        scale = floats(SourceRef(file, f"{where} <mesh>"), shape, "scale", np.ones(3), min_count=3, max_count=4)[:3]
        vertices, faces = _load_mesh(file, where, path)
        return vertices * scale, faces, "mesh"
    raise ModelError(f"unknown geometry <{shape.tag}>", file=file, element=where,
                     expected="<box>, <cylinder>, <sphere> or <mesh>")


def _load_mesh(file: str, where: str, path: str) -> tuple[np.ndarray, np.ndarray]:
    try:
        import trimesh  # a dependency of viser (the `viewer` extra)
    except ImportError:
        raise ModelError("reading mesh files needs trimesh (pip install 'biobullet[viewer]')", file=file,
                         element=f"{where} <mesh>") from None
    try:
        mesh = trimesh.load(path, force="mesh")
    except Exception as exc:  # noqa: BLE001  (any parser failure is a bad input file)
        raise ModelError(f"cannot read mesh {path!r} ({exc})", file=file, element=f"{where} <mesh>",
                         attribute="filename") from None
    vertices, faces = np.asarray(mesh.vertices, float), np.asarray(mesh.faces, np.int64)
    # a truncated or zero-filled file parses as no triangles: it would be drawn as nothing, silently
    if len(faces) == 0 or not np.all(np.isfinite(vertices)):
        raise ModelError(f"mesh {path!r} has {'no triangles' if len(faces) == 0 else 'a non-finite vertex'}",
                         file=file, element=f"{where} <mesh>", attribute="filename",
                         expected="a mesh file with finite triangles")
    return vertices, faces


# ---------------------------------------------------------------------------------------------- primitives
def box_mesh(size) -> tuple[np.ndarray, np.ndarray]:
    """Box centred at the origin, edges `size` (m); 8 vertices, 12 outward-facing triangles."""
    sx, sy, sz = 0.5 * np.asarray(size, float)
    vertices = np.array([[x, y, z] for x in (-sx, sx) for y in (-sy, sy) for z in (-sz, sz)])
    faces = np.array([[0, 1, 3], [0, 3, 2], [4, 6, 7], [4, 7, 5], [0, 4, 5], [0, 5, 1],
                      [2, 3, 7], [2, 7, 6], [0, 2, 6], [0, 6, 4], [1, 5, 7], [1, 7, 3]])
    return vertices, faces


def cylinder_mesh(radius: float, length: float, sides: int = 20) -> tuple[np.ndarray, np.ndarray]:
    """Cylinder along z centred at the origin (URDF convention)."""
    angle = np.linspace(0, 2 * np.pi, sides, endpoint=False)
    ring = np.column_stack([radius * np.cos(angle), radius * np.sin(angle)])
    bottom = np.column_stack([ring, np.full(sides, -0.5 * length)])
    top = np.column_stack([ring, np.full(sides, 0.5 * length)])
    vertices = np.vstack([bottom, top, [[0, 0, -0.5 * length], [0, 0, 0.5 * length]]])
    faces = []
    for k in range(sides):
        n = (k + 1) % sides
        faces += [[k, n, sides + n], [k, sides + n, sides + k],
                  [2 * sides, n, k], [2 * sides + 1, sides + k, sides + n]]
    return vertices, np.array(faces)


def sphere_mesh(radius: float, rings: int = 10, sectors: int = 16) -> tuple[np.ndarray, np.ndarray]:
    """UV sphere centred at the origin."""
    vertices = [[0.0, 0.0, radius]]
    for i in range(1, rings):
        polar = np.pi * i / rings
        for j in range(sectors):
            azimuth = 2 * np.pi * j / sectors
            vertices.append([radius * np.sin(polar) * np.cos(azimuth), radius * np.sin(polar) * np.sin(azimuth),
                             radius * np.cos(polar)])
    vertices.append([0.0, 0.0, -radius])
    last = len(vertices) - 1
    faces = []
    for j in range(sectors):
        faces.append([0, 1 + j, 1 + (j + 1) % sectors])
        base = 1 + (rings - 2) * sectors
        faces.append([last, base + (j + 1) % sectors, base + j])
    for i in range(rings - 2):
        for j in range(sectors):
            a, b = 1 + i * sectors + j, 1 + i * sectors + (j + 1) % sectors
            c, d = a + sectors, b + sectors
            faces += [[a, c, d], [a, d, b]]
    return np.array(vertices), np.array(faces)


def _segment_visuals(file: str, lay) -> list[Visual]:
    """One slab per rigid body of an expanded flexible link (frame at the body's start, beam axis x)."""
    depth = width = max(0.02, 0.02 * lay.length)
    color = (0.85, 0.45, 0.15, 1.0)
    out = []
    for (a, b), name in zip(lay.bodies, lay.body_names()):
        vertices, faces = box_mesh((b - a, depth, width))
        out.append(Visual(link=name, kind="segment", vertices=vertices + [0.5 * (b - a), 0, 0], faces=faces,
                          color=color))
    return out


__all__ = ["Scene", "Visual", "Markers", "read_visuals", "resolve_mesh_path", "box_mesh", "cylinder_mesh",
           "sphere_mesh"]


# ---------------------------------------------------------------------------------------------- trajectories
def load_trajectory(path):
    """A trajectory file: `.csv` (layout of `biobullet simulate`) or `.npz` (`Trajectory.to_npz`)."""
    from biobullet.integrate.trajectory import Trajectory
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise ModelError("not a file (a folder)" if os.path.isdir(path) else "no such trajectory file", file=path,
                         expected="a trajectory file: .csv of `biobullet simulate`, or .npz")
    extension = os.path.splitext(path)[1].lower()
    if extension == ".csv":
        try:
            return Trajectory.from_csv(path)
        except ValueError as exc:
            raise ModelError(f"not a biobullet trajectory CSV ({exc})", file=path) from None
    if extension == ".npz":
        try:
            return Trajectory.from_npz(path)
        except (KeyError, ValueError, OSError) as exc:
            raise ModelError(f"not a biobullet trajectory .npz ({exc})", file=path) from None
    raise ModelError("unknown trajectory format", file=path, expected="a .csv or .npz file")


def trajectory_states(model, trajectory, times) -> np.ndarray:
    """Tree configurations x (len(times) × n_config) of `trajectory` at `times` (s), linear interpolation between
    samples (quaternions of the base and of spherical joints, and planar cos/sin pairs, renormalised). Columns are
    matched by name: every tree coordinate (base pose and multi-DOF joints, then every 1-DOF joint), or else only the generalized coordinates q, from which the dependent joints are computed
    with `model.joint_configuration` (joint functions, loops)."""
    t = np.asarray(trajectory.t, float)
    times = np.asarray(times, float)
    if t.ndim != 1 or len(t) == 0:
        raise ModelError("the trajectory has no samples", attribute="trajectory")
    meta = getattr(trajectory, "meta", None)
    file = meta.get("file") if isinstance(meta, dict) else None
    if not np.all(np.isfinite(t)) or np.any(np.diff(t) < 0):
        raise ModelError("the sample times are not finite and non-decreasing", file=file, attribute="t",
                         expected="times of a run, in order")
    # every named column the trajectory carries: its positions (all tree coordinates, or — for a bridge record —
    # the joints only) and its generalized coordinates q when present
    names = list(getattr(trajectory, "position_names", None) or getattr(trajectory, "joint_names", ()) or ())
    positions = np.asarray(trajectory.positions, float).reshape(len(t), -1)
    # the leading block of x: the base pose and every multi-DOF joint (a spherical joint's shoulder_qx … _qw), named
    # as in q (it was the base only: a spherical arm's x lost its quaternions and the links were drawn wrong)
    base = list(model.coordinate_names[:model.base_nq])
    if not names:  # an unnamed table (e.g. SimpleNamespace(t=…, positions=…)): URDF joint order, base first if any
        if positions.shape[1] == model.n_joints:
            names = list(model.joint_names)
        elif positions.shape[1] == model.n_config:
            names = base + list(model.joint_names)
    q_names = list(getattr(trajectory, "coordinate_names", ()) or ())
    q_table = getattr(trajectory, "q", None)
    if q_table is not None and q_names and np.shape(q_table) == (len(t), len(q_names)):
        extra = [k for k, name in enumerate(q_names) if name not in names]
        names += [q_names[k] for k in extra]
        positions = np.column_stack([positions, np.asarray(q_table, float)[:, extra]])
    tree = base + list(model.joint_names)
    # a flexible link expanded into segments by the viewer, replaying a run of the rigid model: segments straight
    flexible = [name for name in model.joint_names if ("__bend" in name or "__shear" in name) and name not in names]
    if flexible:
        names += flexible
        positions = np.column_stack([positions, np.zeros((len(t), len(flexible)))])

    def interpolate(columns: list[int]) -> np.ndarray:
        bad = [names[c] for c in columns if not np.all(np.isfinite(positions[:, c]))]
        if bad:
            raise ModelError(f"column {shown(bad[0])} has a non-finite value", file=file, attribute="trajectory",
                             expected="finite positions (a run that diverged is not replayed)")
        return np.column_stack([np.interp(times, t, positions[:, c]) for c in columns]) if columns else \
            np.zeros((len(times), 0))

    if all(name in names for name in tree):
        x = interpolate([names.index(name) for name in tree])
    elif all(name in names for name in model.coordinate_names):
        q = interpolate([names.index(name) for name in model.coordinate_names])
        _unit_blocks(base, q)
        x = np.array([model.joint_configuration(row, float(time)) for row, time in zip(q, times)])
    else:
        missing = [name for name in tree if name not in names]
        raise ModelError(f"the trajectory lacks columns {missing[:6]}{' …' if len(missing) > 6 else ''}",
                         file=file, attribute="trajectory",
                         expected=f"a trajectory of {model.name} (columns named after its joints)")
    _unit_blocks(base, x)
    return x


def _unit_blocks(names: list[str], values: np.ndarray) -> None:
    """Interpolated unit quaternions (NAME_qx … NAME_qw) and planar (NAME_cos, NAME_sin) pairs among the leading
    columns `names` of `values` (rows = instants) back to unit length, in place."""
    for k, name in enumerate(names):
        size = 4 if name.endswith("_qx") else 2 if name.endswith("_cos") else 0
        if size:
            values[:, k:k + size] /= np.linalg.norm(values[:, k:k + size], axis=1, keepdims=True)
