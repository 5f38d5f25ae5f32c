"""Offscreen frames: PyBullet's TinyRenderer (works in DIRECT mode, no display), a camera that fills the frame with
the model over the whole trajectory, a grid-textured ground with shadows (the grid cell is the scale cue) and a
title/time overlay (Pillow, which matplotlib depends on)."""
from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass

import numpy as np

from biobullet.core.errors import ModelError
from biobullet.render.scene import frame_with_z, trajectory_states, up_direction

MAX_SIDE = 8192                  # pixels per side of a frame (8K)
MAX_FRAME_BYTES = 4 * 2**30      # the frames `render_frames` returns are held in memory together


@dataclass(frozen=True)
class Camera:
    """Look-at camera: world target (m), distance (m), unit direction target → eye, up vector, vertical fov (deg)."""

    target: tuple[float, float, float]
    distance: float
    direction: tuple[float, float, float]
    up: tuple[float, float, float]
    fov: float = 40.0

    @property
    def eye(self) -> np.ndarray:
        return np.asarray(self.target) + self.distance * np.asarray(self.direction)


def _unit(v) -> np.ndarray:
    v = np.asarray(v, dtype=float)
    return v / np.linalg.norm(v)


def _default_axes(gravity: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(up, viewing direction): up = −gravity (z if none); view from an oblique front-side-above direction."""
    up = up_direction(gravity)
    frame = frame_with_z(up)   # two horizontal axes: frame[:, 0] and −frame[:, 1] (= frame[:, 0] × up)
    return up, _unit(frame[:, 0] - 0.75 * frame[:, 1] + 0.45 * up)


def frame_camera(lower, upper, gravity, *, aspect: float = 4 / 3, fov: float = 40.0, margin: float = 1.15,
                 **overrides) -> Camera:
    """A camera whose view contains the box [lower, upper] (m); `overrides` replace Camera fields."""
    lower, upper = np.asarray(lower, float), np.asarray(upper, float)
    up, direction = _default_axes(np.asarray(gravity, float))
    radius = max(0.5 * float(np.linalg.norm(upper - lower)), 0.05)
    half = np.radians(fov) / 2
    half_narrow = min(half, np.arctan(np.tan(half) * aspect))
    fields = dict(target=tuple(0.5 * (lower + upper)), distance=margin * radius / np.sin(half_narrow),
                  direction=tuple(direction), up=tuple(up), fov=fov)
    unknown = set(overrides) - set(fields)
    if unknown:
        raise ModelError(f"unknown camera fields {sorted(unknown)}", attribute="camera",
                         expected="target, distance, direction, up, fov")
    fields.update({k: v for k, v in overrides.items() if v is not None})
    fields["direction"] = tuple(_unit(fields["direction"]))
    return Camera(**fields)


def fit_camera(points, gravity, *, aspect: float = 16 / 9, fov: float = 40.0, margin: float = 1.08,
               **overrides) -> Camera:
    """A camera whose view is filled by `points` (n×3 world, m — e.g. every visual vertex over the whole motion).

    Unlike `frame_camera` (bounding sphere, which leaves a slender model small), the points are projected on the
    view plane of the viewing direction and the distance is the smallest that keeps their projection inside the
    frame (`margin` ≥ 1 leaves a border), accounting for perspective by the depth of each point. `overrides` replace
    Camera fields (direction, up, fov, target, distance)."""
    points = np.asarray(points, float).reshape(-1, 3)
    up, direction = _default_axes(np.asarray(gravity, float))
    unknown = set(overrides) - {"target", "distance", "direction", "up", "fov"}
    if unknown:
        raise ModelError(f"unknown camera fields {sorted(unknown)}", attribute="camera",
                         expected="target, distance, direction, up, fov")
    fov = float(overrides.get("fov") or fov)
    direction = _unit(overrides.get("direction") or direction)
    up = _unit(overrides.get("up") or up)
    right = np.cross(up, direction)
    if np.linalg.norm(right) < 1e-9:
        right = np.cross([1.0, 0.0, 0.0] if abs(direction[0]) < 0.9 else [0.0, 1.0, 0.0], direction)
    right = _unit(right)
    view_up = np.cross(direction, right)
    u, w, depth = points @ right, points @ view_up, points @ direction
    centre_u, centre_w = 0.5 * (u.min() + u.max()), 0.5 * (w.min() + w.max())
    target = centre_u * right + centre_w * view_up + 0.5 * (depth.min() + depth.max()) * direction
    if overrides.get("target") is not None:
        target = np.asarray(overrides["target"], float)
    tan_v = np.tan(np.radians(fov) / 2)
    tan_h = tan_v * aspect

    def needed(target: np.ndarray) -> float:
        # a point at depth offset e toward the eye, lateral offset a, needs distance ≥ a/tan + e
        t_u, t_w, t_d = target @ right, target @ view_up, target @ direction
        return max(float(np.max(np.abs(u - t_u) * margin / tan_h + (depth - t_d))),
                   float(np.max(np.abs(w - t_w) * margin / tan_v + (depth - t_d))), 1e-3)

    if overrides.get("target") is None:
        # centre the PERSPECTIVE image (near points look bigger): shift the target until the projected extents
        # are symmetric, refitting the distance each time (converges in a few steps)
        for _ in range(4):
            distance = needed(target)
            eye = target + distance * direction
            z = (eye @ direction) - depth
            x, y = (u - eye @ right) / z, (w - eye @ view_up) / z
            shift_x, shift_y = 0.5 * (x.min() + x.max()), 0.5 * (y.min() + y.max())
            target = target + distance * (shift_x * right + shift_y * view_up)
    distance = float(overrides.get("distance") or needed(target))
    return Camera(target=tuple(target), distance=distance, direction=tuple(direction), up=tuple(up), fov=fov)


def choose_direction(points, gravity, *, aspect: float = 16 / 9, fov: float = 40.0,
                     elevations=(25.0, 35.0), azimuths: int = 12) -> tuple[float, float, float]:
    """The viewing direction (unit, target → eye) among oblique views — `elevations` (deg above the ground plane)
    × `azimuths` evenly spaced around the up axis — for which `fit_camera` comes closest, i.e. the moving model
    fills most of the frame. A planar motion is then seen at an angle rather than face-on across its whole sweep."""
    up, _ = _default_axes(np.asarray(gravity, float))
    helper = np.array([1.0, 0.0, 0.0]) if abs(up[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    e1 = _unit(helper - up * (helper @ up))
    e2 = np.cross(up, e1)
    best, best_distance = None, np.inf
    for elevation in np.radians(np.asarray(elevations, float)):
        for azimuth in np.linspace(0.0, 2 * np.pi, int(azimuths), endpoint=False):
            direction = np.cos(elevation) * (np.cos(azimuth) * e1 + np.sin(azimuth) * e2) + np.sin(elevation) * up
            distance = fit_camera(points, gravity, aspect=aspect, fov=fov, direction=tuple(direction)).distance
            if distance < best_distance - 1e-12:
                best, best_distance = direction, distance
    return tuple(float(c) for c in best)


def motion_points(model, trajectory, links=None) -> np.ndarray:
    """World points (n×3, m) the camera must see: every visual vertex (or link origin, for a model without
    visuals) at up to 60 instants of `trajectory`; `links` (names) keeps only those links' visuals — a close-up of
    part of the model. Fit one camera to several runs with
    `fit_camera(np.vstack([motion_points(m, r) for m, r in runs]), gravity)` so side-by-side panels share a scale."""
    t = np.asarray(trajectory.t, float)
    return _points(model, trajectory_states(model, trajectory, np.linspace(t[0], t[-1], min(len(t), 60))), links)


def _points(model, states: np.ndarray, links=None) -> np.ndarray:
    from biobullet.render.scene import Scene
    scene = Scene.from_model(model)
    picks = states[np.unique(np.linspace(0, len(states) - 1, min(len(states), 60)).astype(int))]
    if links is not None:
        unknown = sorted(set(links) - set(model.link_names))
        if unknown:
            raise ModelError(f"unknown links {unknown}", file=model.file, attribute="links",
                             expected=f"link names of the model: {', '.join(model.link_names)}")
        keep = [k for k, v in enumerate(scene.visuals) if v.link in set(links)]
        if not keep:
            raise ModelError(f"links {sorted(links)} have no visual geometry", file=model.file, attribute="links")
        return np.vstack([np.vstack([scene.visual_vertices(x)[k] for k in keep]) for x in picks])
    if scene.visuals:
        return np.vstack([np.vstack(scene.visual_vertices(x)) for x in picks])
    return np.vstack([[pl[1] for pl in scene.link_placements(x).values()] for x in picks])


def _overlay(image: np.ndarray, text: str) -> np.ndarray:
    """`text` (one or more lines) in the top-left corner on a white box; font height ≈ 1/24 of the image."""
    from PIL import Image, ImageDraw
    picture = Image.fromarray(image)
    draw = ImageDraw.Draw(picture)
    size = max(10, image.shape[0] // 24)
    try:
        from PIL import ImageFont
        font = ImageFont.load_default(size=size)
    except (TypeError, OSError):  # older Pillow: fixed-size bitmap font
        from PIL import ImageFont
        font = ImageFont.load_default()
    margin = max(4, size // 2)
    box = draw.multiline_textbbox((margin, margin), text, font=font)
    draw.rectangle((box[0] - 3, box[1] - 3, box[2] + 3, box[3] + 3), fill=(255, 255, 255))
    draw.multiline_text((margin, margin), text, fill=(0, 0, 0), font=font)
    return np.asarray(picture)


def _ground_body(client: int, centre: np.ndarray, up: np.ndarray, height: float, half: float, spacing: float,
                 directory: str) -> int:
    """A square ground quad (side 2·half, m) at `height` along `up` under `centre`, textured with a grid of
    `spacing` (m) — the scale cue. Files (OBJ + PNG) go to `directory`."""
    import pybullet as p
    from PIL import Image, ImageDraw

    from biobullet.conventions import matrix_to_quaternion
    cells = max(1, int(round(2 * half / spacing)))
    half = 0.5 * cells * spacing
    pixels = 1024
    image = Image.new("RGB", (pixels, pixels), (236, 238, 241))
    draw = ImageDraw.Draw(image)
    for k in range(cells + 1):
        position = round(k * (pixels - 1) / cells)
        width = 3 if k % 5 == 0 else 1
        draw.line([(position, 0), (position, pixels)], fill=(175, 180, 188), width=width)
        draw.line([(0, position), (pixels, position)], fill=(175, 180, 188), width=width)
    texture_file = os.path.join(directory, "grid.png")
    image.save(texture_file)
    mesh_file = os.path.join(directory, "ground.obj")
    with open(mesh_file, "w") as handle:
        handle.write(f"v {-half} {-half} 0\nv {half} {-half} 0\nv {half} {half} 0\nv {-half} {half} 0\n"
                     "vt 0 0\nvt 1 0\nvt 1 1\nvt 0 1\nvn 0 0 1\nf 1/1/1 2/2/1 3/3/1\nf 1/1/1 3/3/1 4/4/1\n")
    shape = p.createVisualShape(p.GEOM_MESH, fileName=mesh_file, physicsClientId=client)
    rotation = frame_with_z(up)
    position = centre - (centre @ up - height) * up
    body = p.createMultiBody(baseMass=0, baseVisualShapeIndex=shape, basePosition=position.tolist(),
                             baseOrientation=matrix_to_quaternion(rotation).tolist(), physicsClientId=client)
    texture = p.loadTexture(texture_file, physicsClientId=client)
    p.changeVisualShape(body, -1, textureUniqueId=texture, rgbaColor=[1, 1, 1, 1], physicsClientId=client)
    return body


def render_frames(bridge_or_model, trajectory, *, width: int = 640, height: int = 480, fps: float = 30,
                  camera: Camera | dict | None = None, overlay: bool = True, title: str | None = None,
                  ground: bool = True, shadows: bool = True, link_colors=None, companions=(),
                  hide_model: bool = False, muscle_activations=None) -> list[np.ndarray]:
    """Frames (height × width × 3 uint8) of the model along `trajectory` at `fps` frames per second of model time.

    bridge_or_model: a `Bridge` (its PyBullet state is saved and restored) or a `Model` (a private DIRECT
    connection is used). camera: None = fit the model's visuals over the WHOLE trajectory into the frame
    (`fit_camera`); a dict overrides fields of that automatic camera; or a `Camera`. overlay: draw
    the title, "t = … s" and the grid's cell size (the scale cue) in the top-left corner. ground: a grid-textured
    ground plane just under the lowest point of the motion (normal = −gravity). shadows: PyBullet's shadow mapping.
    link_colors: {link name: (r, g, b[, a])} recolours those links (0–1). companions: further
    (model, trajectory, link_colors) drawn in the same scene at the same instants — an overlay of variants.
    hide_model: draw the scene without the models (ground, grid, overlay only): the background that
    `coverage` compares a frame with. A model with `<muscle>`s gets its muscle paths drawn over the picture,
    coloured by activation (`scene.activation_colors`): muscle_activations = a scalar, one value per muscle, an
    array (frames × muscles), a function of time returning one value per muscle, or None: the activations the
    trajectory recorded (`Trajectory.muscles`), else 0. The frames are held in memory together: sides up to
    MAX_SIDE pixels and at most MAX_FRAME_BYTES of frames (else a ModelError before any work).
    """
    from biobullet.bridge.bridge import Bridge
    from biobullet.model.model import Model
    from biobullet.render.html import nice_spacing, spacing_label
    from biobullet.render.video import check_fps
    for name, value in (("width", width), ("height", height)):
        if not isinstance(value, (int, np.integer)) or not 16 <= value <= MAX_SIDE:
            raise ModelError(f"argument {name!r} is {value!r}", attribute=name,
                             expected=f"an int from 16 to {MAX_SIDE} (pixels)")
    fps = check_fps(fps)
    # the sample times decide the frame count: checked before any work (a NaN time was numpy's "arange: cannot
    # compute length"), and the frames, all kept in memory, must fit in MAX_FRAME_BYTES (10⁶ frames exhausted it)
    t = np.asarray(getattr(trajectory, "t", []), float)
    if t.ndim != 1 or len(t) == 0:
        raise ModelError("the trajectory has no samples", attribute="trajectory")
    if not np.all(np.isfinite(t)) or np.any(np.diff(t) < 0):
        raise ModelError("the sample times are not finite and non-decreasing", attribute="trajectory.t",
                         expected="times of a run, in order")
    count = max(1, int(np.ceil((t[-1] - t[0]) * fps + 0.5)))   # len(times) below
    if count * width * height * 3 > MAX_FRAME_BYTES:
        raise ModelError(f"{count} frames of {width}×{height} pixels ({(t[-1] - t[0]):g} s at {fps:g} fps) take "
                         f"{count * width * height * 3 / 2**30:.1f} GiB", attribute="fps",
                         expected=f"frames within {MAX_FRAME_BYTES // 2**30} GiB: a lower fps or resolution, or "
                                  "render the run in pieces")
    if isinstance(bridge_or_model, Bridge):
        model = bridge_or_model.model
    elif isinstance(bridge_or_model, Model):
        model = bridge_or_model
    else:
        raise ModelError(f"argument 'bridge_or_model' is {type(bridge_or_model).__name__}",
                         attribute="bridge_or_model", expected="a biobullet Bridge or Model")
    times = np.arange(t[0], t[-1] + 0.5 / fps, 1.0 / fps).clip(max=t[-1])
    bridge, owned = (bridge_or_model, False) if isinstance(bridge_or_model, Bridge) else (Bridge(model), True)
    model = bridge.model   # a model with <flexible> links: the bridge's, expanded into rigid segments
    try:
        states = trajectory_states(model, trajectory, times)
    except BaseException:   # a refused run closes the private client (it was left open)
        if owned:
            bridge.close()
        raise
    import pybullet as p
    client = bridge.client
    actors = [(bridge, states, link_colors)]
    saved = p.saveState(physicsClientId=client)
    floor, restore = None, []
    try:
        for other, other_trajectory, other_colors in companions:
            other_states = trajectory_states(other, other_trajectory, times)   # a bad run: no body left behind
            actors.append((Bridge(other, client), other_states, other_colors))
        gravity = np.asarray(model.gravity, float)
        up = up_direction(gravity)
        points = np.vstack([_points(actor.model, states) for actor, states, _ in actors])
        lower, upper = points.min(axis=0), points.max(axis=0)
        radius = max(0.5 * float(np.linalg.norm(upper - lower)), 0.02)
        spacing = nice_spacing(radius / 4)
        for actor, _, colors in actors:
            restore += _recolour(actor, colors or {})
        with tempfile.TemporaryDirectory(prefix="biobullet-ground-") as directory:
            if ground:
                floor = _ground_body(client, 0.5 * (lower + upper), up, float((points @ up).min()) - 1e-3,
                                     8.0 * radius, spacing, directory)   # far edge well beyond the model
            if not isinstance(camera, Camera):
                camera = fit_camera(points, gravity, aspect=width / height, **(camera or {}))
            view = p.computeViewMatrix(camera.eye.tolist(), list(camera.target), list(camera.up),
                                       physicsClientId=client)
            near = max(camera.distance * 0.01, 1e-3)
            projection = p.computeProjectionMatrixFOV(camera.fov, width / height, near, camera.distance * 10,
                                                      physicsClientId=client)
            # light from above, a little to the side of the camera: shadows fall visibly onto the ground
            side = np.cross(up, np.asarray(camera.direction))
            light = (2.0 * up + 0.6 * (side / max(np.linalg.norm(side), 1e-9)) + 0.4 * np.asarray(camera.direction))
            away = (camera.eye + 100.0 * camera.distance * np.asarray(camera.direction)).tolist()  # behind the eye
            from biobullet.render.scene import Scene, frame_activations, trajectory_activations
            if muscle_activations is None:   # a run with muscles: its own activations
                muscle_activations = trajectory_activations(model, trajectory)
            scene = Scene(model=model, visuals=[], links=tuple(model.link_names)) if model.description.muscles \
                else None
            frames = []
            for k, time in enumerate(times):
                for actor, states, _ in actors:
                    actor.map.state_to_pybullet(states[k], np.zeros(actor.model.n_tangent))
                    if hide_model:
                        p.resetBasePositionAndOrientation(actor.body, away, [0, 0, 0, 1], physicsClientId=client)
                rgba = p.getCameraImage(width, height, view, projection, renderer=p.ER_TINY_RENDERER,
                                        shadow=int(bool(shadows)), lightDirection=light.tolist(),
                                        lightDistance=5 * camera.distance,   # shadow map covers the ground
                                        physicsClientId=client)[2]
                image = np.ascontiguousarray(np.asarray(rgba, dtype=np.uint8).reshape(height, width, 4)[:, :, :3])
                if scene is not None and not hide_model:
                    image = _draw_muscles(image, scene.muscle_paths(actors[0][1][k]),
                                          frame_activations(muscle_activations, k, time), view, projection)
                if overlay:
                    text = (f"{title}\n" if title else "") + f"t = {time:6.3f} s"
                    if ground:
                        text += f"   grid {spacing_label(spacing)}"
                    image = _overlay(image, text)
                frames.append(image)
        return frames
    finally:
        for body, link, shape_rgba in restore:
            p.changeVisualShape(body, link, rgbaColor=shape_rgba, physicsClientId=client)
        for actor, _, _ in actors[1:]:   # companions: closing a bridge removes the body it loaded into the client
            actor.close()                 # (a second removeBody made PyBullet print "Remove body failed")
        if floor is not None:
            p.removeBody(floor, physicsClientId=client)
        p.restoreState(saved, physicsClientId=client)
        p.removeState(saved, physicsClientId=client)
        if owned:
            bridge.close()


def _draw_muscles(image: np.ndarray, polylines: list[np.ndarray], activations, view, projection) -> np.ndarray:
    """The muscle polylines (world, m) drawn over `image` through PyBullet's view and projection matrices
    (column-major 4 × 4), coloured by activation; on top of the picture (no occlusion test)."""
    if not polylines:
        return image
    from PIL import Image, ImageDraw

    from biobullet.render.scene import activation_colors
    height, width = image.shape[:2]
    transform = np.asarray(projection, float).reshape(4, 4).T @ np.asarray(view, float).reshape(4, 4).T
    colors = activation_colors(activations, len(polylines))
    picture = Image.fromarray(image)
    draw = ImageDraw.Draw(picture)
    line_width = max(2, int(round(width / 160)))
    for polyline, color in zip(polylines, colors):
        if len(polyline) < 2:
            continue
        clip = np.hstack([polyline, np.ones((len(polyline), 1))]) @ transform.T
        if np.any(clip[:, 3] <= 1e-9):   # a point behind the camera: skip the path rather than draw it wrong
            continue
        ndc = clip[:, :3] / clip[:, 3:4]
        pixels = [((x + 1.0) * 0.5 * width, (1.0 - y) * 0.5 * height) for x, y in ndc[:, :2]]
        draw.line(pixels, fill=tuple(int(round(255 * c)) for c in color), width=line_width, joint="curve")
    return np.asarray(picture)


def _recolour(bridge, colors) -> list[tuple[int, int, list[float]]]:
    """Give the links named in `colors` ({name: rgb(a), 0–1}) that colour; returns (body, link, old rgba) to undo."""
    import pybullet as p
    index = bridge.map.link_index
    unknown = sorted(set(colors) - set(index))
    if unknown:
        raise ModelError(f"unknown links {unknown} in link_colors", file=bridge.model.file, attribute="link_colors",
                         expected=f"link names of the model: {', '.join(sorted(index))}")
    undo = []
    for shape in p.getVisualShapeData(bridge.body, physicsClientId=bridge.client):
        link = shape[1]
        name = next((n for n, i in index.items() if i == link), None)
        if name in colors:
            rgba = [float(c) for c in colors[name]][:4]
            undo.append((bridge.body, link, list(shape[7])))
            p.changeVisualShape(bridge.body, link, rgbaColor=rgba + [1.0] * (4 - len(rgba)),
                                physicsClientId=bridge.client)
    return undo


@dataclass(frozen=True)
class Coverage:
    """How much of a frame the model takes: `pixels` = fraction of the pixels that differ from the background,
    `box` = fraction of the frame covered by the bounding box of those pixels (both 0–1)."""

    pixels: float
    box: float


def coverage(frame, background, *, threshold: int = 24) -> Coverage:
    """Measure the model in `frame` (H×W×3) against `background` (the same view without the model, e.g.
    `render_frames(..., hide_model=True)`): a pixel is the model's where any channel differs by more than
    `threshold` (of 255). Render both without shadows to count the model's segments only."""
    frame, background = np.asarray(frame, int), np.asarray(background, int)
    if frame.shape != background.shape or frame.ndim != 3:
        raise ModelError(f"frame {frame.shape} and background {background.shape} differ", attribute="background",
                         expected="two H×W×3 images of the same size")
    mask = np.abs(frame - background).max(axis=2) > threshold
    if not mask.any():
        return Coverage(0.0, 0.0)
    rows, cols = np.flatnonzero(mask.any(axis=1)), np.flatnonzero(mask.any(axis=0))
    box = (rows[-1] - rows[0] + 1) * (cols[-1] - cols[0] + 1)
    return Coverage(float(mask.mean()), float(box / mask.size))
