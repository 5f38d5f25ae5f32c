"""Offscreen frames: PyBullet's TinyRenderer (works in DIRECT mode, no display), a camera that frames the model
over the whole trajectory, and a time overlay (Pillow, which matplotlib depends on)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from biobullet.core.errors import ModelError


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
    up = _unit(-gravity) if np.linalg.norm(gravity) > 0 else np.array([0.0, 0.0, 1.0])
    helper = np.array([1.0, 0.0, 0.0]) if abs(up[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    h1 = _unit(helper - up * (helper @ up))
    h2 = np.cross(h1, up)
    return up, _unit(h1 + 0.75 * h2 + 0.45 * up)


def _visual_radius(shape_type: int, dimensions) -> float:
    import pybullet as p
    d = np.asarray(dimensions, dtype=float)
    if shape_type == p.GEOM_SPHERE:
        return float(d[0])
    if shape_type == p.GEOM_BOX:
        return float(0.5 * np.linalg.norm(d))
    if shape_type in (p.GEOM_CYLINDER, p.GEOM_CAPSULE):
        return float(np.hypot(d[1], 0.5 * d[0]) + (d[1] if shape_type == p.GEOM_CAPSULE else 0.0))
    return 0.1  # meshes: a rough 10 cm


def body_bounds(client: int, body: int) -> tuple[np.ndarray, np.ndarray]:
    """World AABB (lower, upper) of the body now: PyBullet's getAABB per link united with visual extents
    (the bundled models have no collision shapes, so getAABB alone only covers the link origins)."""
    import pybullet as p
    from biobullet.spatial.rotations import quaternion_to_matrix
    points = []
    n = p.getNumJoints(body, physicsClientId=client)
    frames = {-1: p.getBasePositionAndOrientation(body, physicsClientId=client)}
    for link in range(n):
        s = p.getLinkState(body, link, computeForwardKinematics=1, physicsClientId=client)
        frames[link] = (s[0], s[1])
    for link in range(-1, n):
        try:
            lower, upper = p.getAABB(body, link, physicsClientId=client)
            points += [lower, upper]
        except p.error:
            pass
        points.append(frames[link][0])
    for shape in p.getVisualShapeData(body, physicsClientId=client):
        link, shape_type, dims, local = shape[1], shape[2], shape[3], shape[5]
        position, orientation = frames.get(link, frames[-1])
        centre = np.asarray(position) + quaternion_to_matrix(orientation) @ np.asarray(local)
        radius = _visual_radius(shape_type, dims)
        points += [centre - radius, centre + radius]
    points = np.asarray(points, dtype=float)
    return points.min(axis=0), points.max(axis=0)


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


def _tree_states(model, trajectory, times: np.ndarray) -> np.ndarray:
    """Tree configurations x at `times`, linearly interpolated (base quaternion renormalised)."""
    t = np.asarray(trajectory.t, float)
    positions = np.asarray(trajectory.positions, float)
    if positions.ndim != 2 or positions.shape != (len(t), model.n_joints):
        raise ModelError(f"trajectory positions have shape {positions.shape}", attribute="trajectory",
                         expected=f"({len(t)}, {model.n_joints}) (one column per joint of {model.name})")
    columns = [positions]
    if model.floating_base:
        columns.insert(0, np.asarray(trajectory.q, float)[:, :7])
    full = np.hstack(columns)
    out = np.column_stack([np.interp(times, t, full[:, k]) for k in range(full.shape[1])])
    if model.floating_base:
        out[:, 3:7] /= np.linalg.norm(out[:, 3:7], axis=1, keepdims=True)
    return out


def _overlay(image: np.ndarray, text: str) -> np.ndarray:
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
    box = draw.textbbox((margin, margin), text, font=font)
    draw.rectangle((box[0] - 3, box[1] - 3, box[2] + 3, box[3] + 3), fill=(255, 255, 255))
    draw.text((margin, margin), text, fill=(0, 0, 0), font=font)
    return np.asarray(picture)


def render_frames(bridge_or_model, trajectory, *, width: int = 640, height: int = 480, fps: float = 30,
                  camera: Camera | dict | None = None, overlay: bool = True) -> list[np.ndarray]:
    """Frames (height × width × 3 uint8) of the model along `trajectory` at `fps` frames per second of model time.

    bridge_or_model: a `Bridge` (its PyBullet state is saved and restored) or a `Model` (a private DIRECT
    connection is used). camera: None = frame the model over the whole trajectory; a dict overrides fields of
    that automatic camera; or a `Camera`. overlay: draw "t = … s" in the top-left corner.
    """
    from biobullet.bridge.bridge import Bridge
    from biobullet.model.model import Model
    for name, value in (("width", width), ("height", height)):
        if not isinstance(value, (int, np.integer)) or value < 16:
            raise ModelError(f"argument {name!r} is {value!r}", attribute=name, expected="an int ≥ 16 (pixels)")
    if not np.isfinite(fps) or fps <= 0:
        raise ModelError(f"argument 'fps' is {fps!r}", attribute="fps", expected="a positive number")
    if isinstance(bridge_or_model, Bridge):
        bridge, owned = bridge_or_model, False
    elif isinstance(bridge_or_model, Model):
        bridge, owned = Bridge(bridge_or_model), True
    else:
        raise ModelError(f"argument 'bridge_or_model' is {type(bridge_or_model).__name__}",
                         attribute="bridge_or_model", expected="a biobullet Bridge or Model")
    import pybullet as p
    model, client = bridge.model, bridge.client
    t = np.asarray(getattr(trajectory, "t", []), float)
    if t.ndim != 1 or len(t) == 0:
        raise ModelError("the trajectory has no samples", attribute="trajectory")
    times = np.arange(t[0], t[-1] + 0.5 / fps, 1.0 / fps).clip(max=t[-1])
    states = _tree_states(model, trajectory, times)
    saved = p.saveState(physicsClientId=client)
    try:
        zero = np.zeros(model.n_tangent)
        if not isinstance(camera, Camera):
            lowers, uppers = [], []
            for x in states[np.unique(np.linspace(0, len(states) - 1, min(len(states), 60)).astype(int))]:
                bridge.map.state_to_pybullet(x, zero)
                lower, upper = body_bounds(client, bridge.body)
                lowers.append(lower)
                uppers.append(upper)
            camera = frame_camera(np.min(lowers, axis=0), np.max(uppers, axis=0), model.gravity,
                                  aspect=width / height, **(camera or {}))
        view = p.computeViewMatrix(camera.eye.tolist(), list(camera.target), list(camera.up),
                                   physicsClientId=client)
        near = max(camera.distance * 0.01, 1e-3)
        projection = p.computeProjectionMatrixFOV(camera.fov, width / height, near, camera.distance * 10,
                                                  physicsClientId=client)
        frames = []
        for time, x in zip(times, states):
            bridge.map.state_to_pybullet(x, zero)
            rgba = p.getCameraImage(width, height, view, projection, renderer=p.ER_TINY_RENDERER,
                                    physicsClientId=client)[2]
            image = np.ascontiguousarray(np.asarray(rgba, dtype=np.uint8).reshape(height, width, 4)[:, :, :3])
            frames.append(_overlay(image, f"t = {time:6.3f} s") if overlay else image)
        return frames
    finally:
        p.restoreState(saved, physicsClientId=client)
        p.removeState(saved, physicsClientId=client)
        if owned:
            bridge.close()
