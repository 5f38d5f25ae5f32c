"""Interactive 3D viewer in the browser (viser): `biobullet view MODEL [--trajectory RUN.csv]`.

The model's URDF visuals (`render.scene`, the same triangles as the HTML export) hang under one scene node per link;
moving a slider changes one generalized coordinate q_k, and every link is placed from x = model.joint_configuration(q)
(joint functions, loop closures and — for an expanded flexible link — its segments all follow) by the library's
forward kinematics. Toggles show COMs, joint axes, contact points and loop-closure residuals (the two points that
should coincide, joined by a red segment; the largest distance is printed in the panel). With a trajectory: play /
pause and a time slider.

The server listens on 127.0.0.1 only (a model viewer is no reason to open a port to the network); open the printed
URL in a browser on the same machine (or forward the port with ssh -L).
"""
from __future__ import annotations

import math
import threading
import time as _time

import numpy as np

from biobullet.core.errors import ModelError

HOST = "127.0.0.1"
BASE_ANGLES = ("base_roll", "base_pitch", "base_yaw")


def load_view_model(path: str, *, floating_base: bool | None = None, segments: int = 6):
    """(model, layouts): the model of `path`; a model with `<flexible>` links is expanded into `segments` rigid
    segments per link (flexible.segments) so the bending can be shown — layouts is None otherwise."""
    from biobullet.loader import load_model
    from biobullet.model.urdf import load_description
    if path.lower().endswith(".osim"):    # an OpenSim model: no flexible links
        return load_model(path), None
    description = load_description(path, floating_base=floating_base)
    if description.elements_of("flexible"):
        from biobullet.flexible.segments import load_segmented_model
        return load_segmented_model(path, segments=segments, floating_base=floating_base)
    return load_model(path, floating_base=floating_base), None


def slider_ranges(model) -> list[tuple[str, float, float, float]]:
    """(label, lower, upper, initial) per slider: one per generalized coordinate; a floating base gets x, y, z (m)
    and roll, pitch, yaw (rad) instead of its quaternion. Ranges: the URDF limits, else ±π (rad) / ±0.5 m."""
    q0 = model.neutral_configuration()
    ranges = []
    names = list(model.coordinate_names)
    start = 7 if model.floating_base else 0
    if model.floating_base:
        for k, name in enumerate(("base_x", "base_y", "base_z")):
            ranges.append((name, float(q0[k]) - 1.0, float(q0[k]) + 1.0, float(q0[k])))
        ranges += [(name, -math.pi, math.pi, 0.0) for name in BASE_ANGLES]
    for k, name in enumerate(names[start:], start):
        joint = model.description.joint(name)
        if joint.lower is not None and joint.upper is not None and joint.upper > joint.lower:
            lower, upper = float(joint.lower), float(joint.upper)
        elif joint.type == "prismatic":  # a flexible segment's shear joint moves by millimetres
            lower, upper = (-0.01, 0.01) if "__shear" in name else (-0.5, 0.5)
        else:
            lower, upper = -math.pi, math.pi
        ranges.append((name, lower, upper, float(np.clip(q0[k], lower, upper))))
    return ranges


def q_from_sliders(model, values) -> np.ndarray:
    """Generalized positions q from slider values (order of `slider_ranges`)."""
    values = np.asarray(values, float)
    if not model.floating_base:
        return values.copy()
    roll, pitch, yaw = values[3:6]
    # quaternion (x, y, z, w) of R = Rz(yaw) Ry(pitch) Rx(roll), the URDF rpy convention
    cr, sr, cp, sp, cy, sy = (math.cos(roll / 2), math.sin(roll / 2), math.cos(pitch / 2), math.sin(pitch / 2),
                              math.cos(yaw / 2), math.sin(yaw / 2))
    quaternion = [sr * cp * cy - cr * sp * sy, cr * sp * cy + sr * cp * sy, cr * cp * sy - sr * sp * cy,
                  cr * cp * cy + sr * sp * sy]
    return np.concatenate([values[:3], quaternion, values[6:]])


class Viewer:
    """A running viser server showing one model. `set_configuration(q)` / `show(x)` move it; `close()` stops it."""

    def __init__(self, model, *, trajectory=None, layouts=None, port: int = 8080, fps: float = 30.0) -> None:
        try:
            import viser
            import viser.transforms as vtf
        except ImportError:
            raise ModelError("the viewer needs viser (pip install 'biobullet[viewer]')", attribute="view") from None
        from biobullet.render.html import nice_spacing, spacing_label
        from biobullet.render.scene import Scene, trajectory_states
        self.model, self.scene = model, Scene.from_model(model, layouts=layouts)
        self._so3 = vtf.SO3
        self.server = viser.ViserServer(host=HOST, port=port, verbose=False)
        self.port = self.server.get_port()
        self._lock = threading.Lock()
        scene_api, gui = self.server.scene, self.server.gui

        # geometry: one node per link carrying its visuals (vertices in the link frame)
        self._links = {}
        for name in sorted({v.link for v in self.scene.visuals}):
            self._links[name] = scene_api.add_frame(f"/model/{name}", show_axes=False)
        for k, visual in enumerate(self.scene.visuals):
            scene_api.add_mesh_simple(f"/model/{visual.link}/visual_{k}", visual.vertices.astype(np.float32),
                                      visual.faces.astype(np.uint32),
                                      color=tuple(int(255 * c) for c in visual.color[:3]))
        # ground grid under the model at its neutral pose, with a scale cue
        q0 = model.neutral_configuration()
        self.trajectory = trajectory
        xs = [model.joint_configuration(q0)]
        if trajectory is not None:
            t = np.asarray(trajectory.t, float)
            self.times = np.linspace(t[0], t[-1], int(min(3000, max(2, (t[-1] - t[0]) * fps + 1))))
            self.states = trajectory_states(model, trajectory, self.times)
            xs = list(self.states[np.unique(np.linspace(0, len(self.states) - 1, 40).astype(int))])
        lower, upper = self.scene.bounds(xs)
        gravity = np.asarray(model.gravity, float)
        up = -gravity / np.linalg.norm(gravity) if np.linalg.norm(gravity) > 0 else np.array([0.0, 0.0, 1.0])
        radius = max(0.5 * float(np.linalg.norm(upper - lower)), 0.02)
        spacing = nice_spacing(radius / 4)
        centre = 0.5 * (lower + upper)
        ground = min(float((np.vstack(self.scene.visual_vertices(x)) @ up).min()) for x in xs) \
            if self.scene.visuals else float(centre @ up - radius)
        grid_rotation = self._so3.from_matrix(_frame_with_z(up))
        scene_api.add_grid("/ground", width=8 * radius, height=8 * radius, cell_size=spacing,
                           section_size=5 * spacing, plane="xy", wxyz=grid_rotation.wxyz,
                           position=centre - (centre @ up - ground) * up, shadow_opacity=0.2)
        gui.add_markdown(f"**{model.name}** — grid cell {spacing_label(spacing)}")
        # the browser's camera: "up" is the model's up (−gravity), looking at the motion from an oblique side
        scene_api.set_up_direction(tuple(float(c) for c in up))
        helper = np.array([1.0, 0.0, 0.0]) if abs(up[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
        side = helper - up * (helper @ up)
        side /= np.linalg.norm(side)
        view = side + 0.75 * np.cross(side, up) + 0.45 * up
        self.server.initial_camera.look_at = tuple(float(c) for c in centre)
        self.server.initial_camera.position = tuple(float(c) for c in centre + 3.0 * radius * view / np.linalg.norm(view))
        self.server.initial_camera.up = tuple(float(c) for c in up)

        # markers (toggled)
        self._markers = {}
        self.toggles = {key: gui.add_checkbox(label, False) for key, label in
                        (("coms", "show COMs"), ("axes", "show joint axes"), ("contacts", "show contact points"),
                         ("loops", "show constraint residuals"))}
        self._residual_text = gui.add_markdown("")
        self._marker_size = 0.04 * radius
        for handle in self.toggles.values():
            handle.on_update(lambda _event: self.refresh())

        # sliders: one per generalized coordinate
        self.sliders = []
        with gui.add_folder("coordinates"):
            for name, lower, upper, initial in slider_ranges(model):
                slider = gui.add_slider(name, min=lower, max=upper, step=(upper - lower) / 1000,
                                        initial_value=initial)
                slider.on_update(lambda _event: self._from_sliders())
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
    def _from_sliders(self) -> None:
        if self._playing:
            return
        self.set_configuration(q_from_sliders(self.model, [s.value for s in self.sliders]))

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
            self._markers["coms"] = scene_api.add_point_cloud("/markers/coms", markers.coms.astype(np.float32),
                                                              colors=(20, 20, 20), point_size=size,
                                                              point_shape="circle")
        if self.toggles["axes"].value and markers.axes:
            segments = np.array([[o - 2 * size * a, o + 2 * size * a] for o, a in markers.axes], np.float32)
            self._markers["axes"] = scene_api.add_line_segments("/markers/axes", segments, colors=(30, 90, 220),
                                                                thickness=3, thickness_units="screen")
        if self.toggles["contacts"].value and len(markers.contacts):
            self._markers["contacts"] = scene_api.add_point_cloud(
                "/markers/contacts", markers.contacts.astype(np.float32), colors=(0, 160, 60), point_size=size,
                point_shape="diamond")
        text = ""
        if markers.loops:
            residuals = markers.loop_residuals()
            text = f"loop residual max {residuals.max():.2e} m"
            if self.toggles["loops"].value:
                segments = np.array([[a, b] for a, b in markers.loops], np.float32)
                self._markers["loops"] = scene_api.add_line_segments("/markers/loops", segments,
                                                                     colors=(220, 30, 30), thickness=4,
                                                                     thickness_units="screen")
                self._markers["loop_points"] = scene_api.add_point_cloud(
                    "/markers/loop_points", segments.reshape(-1, 3), colors=(220, 30, 30), point_size=size * 0.7,
                    point_shape="circle")
        self._residual_text.content = text

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


def _frame_with_z(z) -> np.ndarray:
    """A rotation whose third column is the unit vector z."""
    z = np.asarray(z, float) / np.linalg.norm(z)
    helper = np.array([1.0, 0.0, 0.0]) if abs(z[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    x = helper - z * (helper @ z)
    x /= np.linalg.norm(x)
    return np.column_stack([x, np.cross(z, x), z])


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


__all__ = ["Viewer", "serve", "load_view_model", "slider_ranges", "q_from_sliders", "HOST"]
