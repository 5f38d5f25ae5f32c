"""Interactive 3D viewer in the browser (viser): `biobullet view MODEL [--trajectory RUN.csv]`.

The model's URDF visuals (`render.scene`, the same triangles as the HTML export) hang under one scene node per link;
moving a slider changes one generalized coordinate q_k (angles in degrees — hover for radians —, lengths in
metres; the sliders start at the file's `<initial>` values), and every link is placed from x = model.joint_configuration(q)
(joint functions, loop closures and — for an expanded flexible link — its segments all follow) by the library's
forward kinematics. Toggles show COMs, joint axes, contact points and loop-closure residuals (the two points that
should coincide, joined by a red segment; the largest distance is printed in the panel). Muscle paths are drawn as
lines coloured by activation (`muscle_activations`: blue at 0 to red at 1). With a trajectory: play / pause and a
time slider.

The server listens on 127.0.0.1 only (a model viewer is no reason to open a port to the network); open the printed
URL in a browser on the same machine (or forward the port with ssh -L).
"""
from __future__ import annotations

import math
import string
import threading
import time as _time
from dataclasses import dataclass

import numpy as np

from biobullet.core.errors import ModelError

HOST = "127.0.0.1"
#: the initial browser camera: vertical field of view (deg), the width / height of the 3D view it is fitted to, and
#: how far (in half-heights of the view) the model is moved left, out from under the control panel on the right
VIEW_FOV = 50.0
VIEW_ASPECT = 1.0
PANEL_SHIFT = 0.45


def load_view_model(path: str, *, floating_base: bool | None = None, segments: int = 6):
    """(model, layouts): the model of `path`; a model with `<flexible>` links is expanded into `segments` rigid
    segments per link (flexible.segments) so the bending can be shown — layouts is None otherwise."""
    from biobullet.loader import load_model
    from biobullet.model.bundled import resolve_model_path
    from biobullet.model.urdf import load_description
    path = resolve_model_path(path)
    if path.lower().endswith(".osim"):    # an OpenSim model: no flexible links
        return load_model(path), None
    description = load_description(path, floating_base=floating_base)
    if description.elements_of("flexible"):
        from biobullet.flexible.segments import load_segmented_model
        return load_segmented_model(path, segments=segments, floating_base=floating_base)
    return load_model(path, floating_base=floating_base), None


@dataclass(frozen=True)
class SliderSpec:
    """One slider: a generalized coordinate (or base_x … base_yaw of a floating base) shown in `unit` — "deg" for
    angles, "m" for lengths; lower/upper/initial/step in that unit; `scale` = unit per SI unit (180/π or 1)."""

    name: str
    unit: str
    lower: float
    upper: float
    initial: float
    step: float
    scale: float

    @property
    def label(self) -> str:
        return f"{self.name} ({self.unit})"

    def to_si(self, value: float) -> float:
        """The slider value in rad or m."""
        return float(value) / self.scale

    def hint(self, value: float) -> str:
        """Hover text: the value in SI units (radians for an angle), as the model stores it."""
        return f"{self.name} = {self.to_si(value):.6g} {'rad' if self.unit == 'deg' else 'm'}"


def _angle(name: str, lower: float, upper: float, initial: float) -> SliderSpec:
    scale = 180.0 / math.pi
    span = (upper - lower) * scale
    if span >= 10.0:   # whole tenths of a degree, inside the limits (148.969…° → 148.9°)
        low, high = math.ceil(round(lower * scale * 10, 6)) / 10, math.floor(round(upper * scale * 10, 6)) / 10
        return SliderSpec(name, "deg", low, high, float(np.clip(initial * scale, low, high)), 0.1, scale)
    return SliderSpec(name, "deg", lower * scale, upper * scale, float(np.clip(initial, lower, upper)) * scale,
                      span / 1000.0, scale)


def _length(name: str, lower: float, upper: float, initial: float) -> SliderSpec:
    return SliderSpec(name, "m", lower, upper, float(np.clip(initial, lower, upper)), (upper - lower) / 1000.0, 1.0)


def _leading_blocks(model) -> list[tuple[str, str, int]]:
    """(kind, prefix, index in q) of the leading block of q: the floating base ("free", base_x … base_qw), each
    spherical joint ("spherical", J_qx … J_qw) and planar joint ("planar", J_x, J_y, J_cos, J_sin); 4 or 7 entries
    of q each."""
    names, blocks, k = list(model.coordinate_names), [], 0
    while k < model.base_nq:
        if k == 0 and model.floating_base:
            blocks.append(("free", "base", 0))
            k += 7
        elif names[k].endswith("_qx"):
            blocks.append(("spherical", names[k][:-3], k))
            k += 4
        else:   # planar: J_x, J_y, J_cos, J_sin
            blocks.append(("planar", names[k][:-2], k))
            k += 4
    return blocks


def slider_specs(model) -> list[SliderSpec]:
    """One slider per generalized coordinate, starting at the model's `<initial>` values (`model.initial_state`);
    a floating base gets x, y, z (m) and roll, pitch, yaw (deg, URDF rpy of the initial orientation) instead of its
    quaternion, a spherical joint J its J_roll, J_pitch, J_yaw (deg) and a planar joint J_x, J_y (m) and J_angle
    (deg). Angles in degrees, lengths in metres. Ranges: the URDF limits, else ±180° / ±0.5 m (±1 m around
    the initial base position; a flexible segment's shear joint ±1 cm); an angle range of ≥ 10° is shown in whole
    tenths of a degree, rounded inward."""
    from biobullet.spatial.rotations import matrix_to_rpy, quaternion_to_matrix
    q0, _ = model.initial_state()
    specs = []
    names = list(model.coordinate_names)
    # a multi-DOF joint's quaternion (or cos/sin) is no coordinate of the file: its angles are (StopIteration
    # looking up the joint "shoulder_qx" was `biobullet view` of a model with a spherical joint)
    for kind, prefix, k in _leading_blocks(model):
        if kind == "planar":
            specs += [_length(f"{prefix}_{axis}", float(q0[k + i]) - 1.0, float(q0[k + i]) + 1.0, float(q0[k + i]))
                      for i, axis in enumerate("xy")]
            specs.append(_angle(f"{prefix}_angle", -math.pi, math.pi, math.atan2(q0[k + 3], q0[k + 2])))
            continue
        if kind == "free":
            specs += [_length(name, float(q0[j]) - 1.0, float(q0[j]) + 1.0, float(q0[j]))
                      for j, name in enumerate(("base_x", "base_y", "base_z"))]
            k += 3
        rpy = matrix_to_rpy(quaternion_to_matrix(q0[k:k + 4]))
        specs += [_angle(f"{prefix}_{angle}", -math.pi, math.pi, value)
                  for angle, value in zip(("roll", "pitch", "yaw"), rpy)]
    for k, name in enumerate(names[model.base_nq:], model.base_nq):
        joint = model.description.joint(name)
        limited = joint.lower is not None and joint.upper is not None and joint.upper > joint.lower
        if joint.type == "prismatic":
            lower, upper = (float(joint.lower), float(joint.upper)) if limited else \
                ((-0.01, 0.01) if "__shear" in name else (-0.5, 0.5))   # a shear joint moves by millimetres
            specs.append(_length(name, lower, upper, float(q0[k])))
        else:
            lower, upper = (float(joint.lower), float(joint.upper)) if limited else (-math.pi, math.pi)
            specs.append(_angle(name, lower, upper, float(q0[k])))
    return specs


def q_from_sliders(model, values, specs: list[SliderSpec] | None = None) -> np.ndarray:
    """Generalized positions q (rad, m) from slider values (order and units of `slider_specs(model)`)."""
    from biobullet.conventions import matrix_to_quaternion
    from biobullet.spatial.rotations import rpy_to_matrix
    specs = specs if specs is not None else slider_specs(model)
    values = np.array([spec.to_si(v) for spec, v in zip(specs, values)], float)
    q, used = [], 0
    for kind, _, _ in _leading_blocks(model):
        if kind == "planar":
            x, y, angle = values[used:used + 3]
            q += [x, y, math.cos(angle), math.sin(angle)]
            used += 3
            continue
        if kind == "free":
            q += list(values[used:used + 3])
            used += 3
        # roll, pitch, yaw sliders are URDF rpy: R = Rz(yaw) Ry(pitch) Rx(roll)
        q += list(matrix_to_quaternion(rpy_to_matrix(values[used:used + 3])))
        used += 3
    return np.concatenate([np.asarray(q, float), values[used:]])


def markdown_text(text: str) -> str:
    """`text` shown literally in viser's markdown, which renders raw HTML unsanitised: every ASCII punctuation
    character backslash-escaped (no tag, entity, link or emphasis), line breaks made spaces."""
    return "".join(" " if c in "\r\n" else "\\" + c if c in string.punctuation else c for c in text)


class Viewer:
    """A running viser server showing one model. `set_configuration(q)` / `show(x)` move it; `close()` stops it."""

    def __init__(self, model, *, trajectory=None, layouts=None, port: int = 8080, fps: float = 30.0,
                 muscle_activations=None) -> None:
        try:
            import viser
            import viser.transforms as vtf
        except ImportError:
            raise ModelError("the viewer needs viser (pip install 'biobullet[viewer]')", attribute="view") from None
        from biobullet.render.html import nice_spacing, spacing_label
        from biobullet.render.scene import Scene, frame_with_z, trajectory_states, up_direction
        self.model, self.scene = model, Scene.from_model(model, layouts=layouts)
        self._so3 = vtf.SO3
        self.server = viser.ViserServer(host=HOST, port=port, verbose=False)
        self.port = self.server.get_port()
        self._lock = threading.Lock()
        scene_api, gui = self.server.scene, self.server.gui

        # everything hangs under /world, which turns the model's up (−gravity) into viser's +z: the browser's
        # orbit controls and the fitted camera below then work in viser's own frame
        up = up_direction(model.gravity)
        to_viser = frame_with_z(up).T
        scene_api.add_frame("/world", show_axes=False, wxyz=self._so3.from_matrix(to_viser).wxyz)
        # geometry: one node per link carrying its visuals (vertices in the link frame)
        self._links = {}
        # scene nodes are numbered, not named after links: viser nests a path "a/b" under the node "a"
        node = {name: f"/world/model/link_{k}" for k, name in enumerate(sorted({v.link for v in self.scene.visuals}))}
        for name, path in node.items():
            self._links[name] = scene_api.add_frame(path, show_axes=False)
        for k, visual in enumerate(self.scene.visuals):
            scene_api.add_mesh_simple(f"{node[visual.link]}/visual_{k}", visual.vertices.astype(np.float32),
                                      visual.faces.astype(np.uint32),
                                      color=tuple(int(255 * c) for c in visual.color[:3]))
        # ground grid under the model at its initial pose (where the sliders start), with a scale cue
        q0 = model.initial_state()[0]
        self.trajectory = trajectory
        xs = [model.joint_configuration(q0)]
        if trajectory is not None:
            t = np.asarray(trajectory.t, float)
            self.times = np.linspace(t[0], t[-1], int(min(3000, max(2, (t[-1] - t[0]) * fps + 1))))
            self.states = trajectory_states(model, trajectory, self.times)
            xs = list(self.states[np.unique(np.linspace(0, len(self.states) - 1, 40).astype(int))])
        lower, upper = self.scene.bounds(xs)
        radius = max(0.5 * float(np.linalg.norm(upper - lower)), 0.02)
        spacing = nice_spacing(radius / 4)
        centre = 0.5 * (lower + upper)
        ground = min(float((np.vstack(self.scene.visual_vertices(x)) @ up).min()) for x in xs) \
            if self.scene.visuals else float(centre @ up - radius)
        grid_rotation = self._so3.from_matrix(frame_with_z(up))
        scene_api.add_grid("/world/ground", width=8 * radius, height=8 * radius, cell_size=spacing,
                           section_size=5 * spacing, plane="xy", wxyz=grid_rotation.wxyz,
                           position=centre - (centre @ up - ground) * up, shadow_opacity=0.2)
        gui.add_markdown(f"**{markdown_text(model.name)}** — grid cell {spacing_label(spacing)}")
        # the browser's camera: an oblique view fitted to the model over the whole motion (render.frames.fit_camera,
        # in viser's frame), moved so the model sits left of the control panel
        from biobullet.render.frames import fit_camera
        points = np.vstack([np.vstack(self.scene.visual_vertices(x)) for x in xs]) if self.scene.visuals else \
            np.vstack([lower, upper])
        camera = fit_camera(points @ to_viser.T, np.array([0.0, 0.0, -1.0]),   # (the model's up is viser's +z)
                            aspect=VIEW_ASPECT, fov=VIEW_FOV, margin=1.1)
        right = np.cross([0.0, 0.0, 1.0], camera.direction)
        right /= max(np.linalg.norm(right), 1e-12)
        shift = PANEL_SHIFT * camera.distance * math.tan(math.radians(VIEW_FOV) / 2) * right
        self.server.initial_camera.fov = math.radians(VIEW_FOV)
        self.server.initial_camera.look_at = tuple(float(c) for c in np.asarray(camera.target) + shift)
        self.server.initial_camera.position = tuple(float(c) for c in camera.eye + shift)
        self.server.initial_camera.up = (0.0, 0.0, 1.0)

        # markers (toggled); muscle paths (always, coloured by activation: `scene.frame_activations` of
        # `muscle_activations` at the shown time), their segments and colours kept in `muscle_segments`
        if muscle_activations is None and trajectory is not None:   # a run with muscles: its own activations
            from biobullet.render.scene import trajectory_activations
            muscle_activations = trajectory_activations(model, trajectory)
        self.muscle_activations = muscle_activations
        self.muscle_segments = (np.zeros((0, 2, 3), np.float32), np.zeros((0, 2, 3), np.uint8))
        self._markers = {}
        self.toggles = {key: gui.add_checkbox(label, False) for key, label in
                        (("coms", "show COMs"), ("axes", "show joint axes"), ("contacts", "show contact points"),
                         ("loops", "show constraint residuals"))}
        self._residual_text = gui.add_markdown("")
        self._marker_size = 0.04 * radius
        for handle in self.toggles.values():
            handle.on_update(lambda _event: self.refresh())

        # sliders: one per generalized coordinate, in degrees / metres, at the model's <initial> values; hovering
        # shows the value in radians
        self.sliders, self.slider_specs = [], slider_specs(model)
        with gui.add_folder("coordinates"):
            for spec in self.slider_specs:
                slider = gui.add_slider(spec.label, min=spec.lower, max=spec.upper, step=spec.step,
                                        initial_value=spec.initial, hint=spec.hint(spec.initial))
                slider.on_update(lambda _event, slider=slider, spec=spec: self._slider_moved(slider, spec))
                self.sliders.append(slider)
        self._t = 0.0
        self._playing = False
        self._thread = None
        if trajectory is not None:
            with gui.add_folder("trajectory"):
                self.time_slider = gui.add_slider("time (s)", min=float(self.times[0]),
                                                  max=float(self.times[-1]) if len(self.times) > 1 else
                                                  float(self.times[0]) + 1e-9,
                                                  step=max((self.times[-1] - self.times[0]) / 1000, 1e-9),
                                                  initial_value=float(self.times[0]))
                self.play_button = gui.add_button("play / pause")
            self.time_slider.on_update(lambda _event: self.show_time(self.time_slider.value))
            self.play_button.on_click(lambda _event: self.toggle_play())
            self.show_time(float(self.times[0]))
        else:
            self._from_sliders()

    # ------------------------------------------------------------------ updates
    def _slider_moved(self, slider, spec: SliderSpec) -> None:
        slider.hint = spec.hint(slider.value)
        self._from_sliders()

    def _from_sliders(self) -> None:
        if self._playing:
            return
        self.set_configuration(q_from_sliders(self.model, [s.value for s in self.sliders], self.slider_specs))

    def set_configuration(self, q, t: float = 0.0) -> np.ndarray:
        """Show generalized positions q (dependent joints from the model); returns the tree configuration x."""
        x = self.model.joint_configuration(np.asarray(q, float), t)
        self.show(x)
        return x

    def show_time(self, t: float) -> None:
        """Show the trajectory at time t (s), the nearest stored frame."""
        k = int(np.argmin(np.abs(self.times - t)))
        self._t = float(self.times[k])
        self.show(self.states[k])

    def show(self, x) -> None:
        """Place every link at tree configuration x and redraw the enabled markers."""
        with self._lock:
            self._x = np.asarray(x, float)
            frames = self.scene.link_placements(self._x)
            with self.server.atomic():
                for name, handle in self._links.items():
                    r, p = frames[name]
                    handle.wxyz = self._so3.from_matrix(r).wxyz
                    handle.position = p
                self._draw_markers()

    def refresh(self) -> None:
        self.show(self._x)

    def _draw_markers(self) -> None:
        scene_api = self.server.scene
        for handle in self._markers.values():
            handle.remove()
        self._markers = {}
        markers = self.scene.markers(self._x)
        size = self._marker_size
        if self.toggles["coms"].value and len(markers.coms):
            self._markers["coms"] = scene_api.add_point_cloud("/world/markers/coms", markers.coms.astype(np.float32),
                                                              colors=(20, 20, 20), point_size=size,
                                                              point_shape="circle")
        if self.toggles["axes"].value and markers.axes:
            segments = np.array([[o - 2 * size * a, o + 2 * size * a] for o, a in markers.axes], np.float32)
            self._markers["axes"] = scene_api.add_line_segments("/world/markers/axes", segments, colors=(30, 90, 220),
                                                                thickness=3, thickness_units="screen")
        if self.toggles["contacts"].value and len(markers.contacts):
            self._markers["contacts"] = scene_api.add_point_cloud(
                "/world/markers/contacts", markers.contacts.astype(np.float32), colors=(0, 160, 60), point_size=size,
                point_shape="diamond")
        self._draw_muscles(scene_api)
        text = ""
        if markers.loops:
            residuals = markers.loop_residuals()
            text = f"loop residual max {residuals.max():.2e} m"
            if self.toggles["loops"].value:
                segments = np.array([[a, b] for a, b in markers.loops], np.float32)
                self._markers["loops"] = scene_api.add_line_segments("/world/markers/loops", segments,
                                                                     colors=(220, 30, 30), thickness=4,
                                                                     thickness_units="screen")
                self._markers["loop_points"] = scene_api.add_point_cloud(
                    "/world/markers/loop_points", segments.reshape(-1, 3), colors=(220, 30, 30), point_size=size * 0.7,
                    point_shape="circle")
        self._residual_text.content = text

    def _draw_muscles(self, scene_api) -> None:
        from biobullet.render.scene import activation_colors, frame_activations
        polylines = self.scene.muscle_paths(self._x)
        if not polylines:
            return
        k = int(np.argmin(np.abs(self.times - self._t))) if self.trajectory is not None else 0
        colors = np.round(255 * activation_colors(frame_activations(self.muscle_activations, k, self._t),
                                                  len(polylines))).astype(np.uint8)
        segments = [np.stack([line[:-1], line[1:]], axis=1) for line in polylines if len(line) > 1]
        segment_colors = [np.broadcast_to(color, (len(line) - 1, 2, 3))
                          for line, color in zip(polylines, colors) if len(line) > 1]
        if not segments:
            return
        self.muscle_segments = (np.concatenate(segments).astype(np.float32),
                                np.concatenate(segment_colors).astype(np.uint8))
        self._markers["muscles"] = scene_api.add_line_segments("/world/markers/muscles", self.muscle_segments[0],
                                                               colors=self.muscle_segments[1], thickness=5,
                                                               thickness_units="screen")

    # ------------------------------------------------------------------ playback
    def toggle_play(self) -> None:
        self._playing = not self._playing
        if self._playing and (self._thread is None or not self._thread.is_alive()):
            self._thread = threading.Thread(target=self._play, daemon=True)
            self._thread.start()

    def _play(self) -> None:
        start_wall, start_t = _time.monotonic(), self._t
        while self._playing:
            t = start_t + (_time.monotonic() - start_wall)
            if t > self.times[-1]:
                start_wall, start_t, t = _time.monotonic(), float(self.times[0]), float(self.times[0])
            self.show_time(t)
            self.time_slider.value = self._t
            _time.sleep(1 / 30)

    def close(self) -> None:
        self._playing = False
        self.server.stop()


def serve(path: str, *, trajectory: str | None = None, port: int = 8080, floating_base: bool | None = None,
          segments: int = 6) -> None:
    """`biobullet view`: load, serve on 127.0.0.1:port until Ctrl-C."""
    import sys
    from biobullet.render.scene import load_trajectory
    model, layouts = load_view_model(path, floating_base=floating_base, segments=segments)
    run = load_trajectory(trajectory) if trajectory else None
    viewer = Viewer(model, trajectory=run, layouts=layouts, port=port)
    print(f"biobullet view: {model.name} at http://{HOST}:{viewer.port} (Ctrl-C to stop)", file=sys.stderr)
    try:
        while True:
            _time.sleep(1.0)
    finally:
        viewer.close()


__all__ = ["Viewer", "serve", "load_view_model", "SliderSpec", "slider_specs", "q_from_sliders", "HOST"]
