"""The browser viewer (viser), the self-contained HTML replay (checked in headless Chromium) and the scene they share.

Independent references: PyBullet's own forward kinematics of the same URDF (link frames), the divergence theorem
(mesh volumes → outward, closed triangle meshes), loop closure (the two points of a loop computed from the raw
`<loop>` attributes must coincide once the loop resolver has placed the dependent joints), /proc/net/tcp (the
server's listening address), and pixels of real browser screenshots.
"""
from __future__ import annotations

import base64
import contextlib
import itertools
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import in_process

from biobullet.core.errors import ModelError
from biobullet.integrate.trajectory import Trajectory
from biobullet.loader import load_model
from biobullet.render.scene import (Scene, box_mesh, cylinder_mesh, load_trajectory, read_visuals, sphere_mesh,
                                    trajectory_states)

REPO = Path(__file__).resolve().parents[2]
URDF = sorted((REPO / "urdf").glob("*.urdf"))


def mesh_volume(vertices, faces) -> float:
    """Signed volume by the divergence theorem: positive for a closed mesh with outward normals."""
    a, b, c = (vertices[faces[:, k]] for k in range(3))
    return float(np.einsum("ij,ij->i", a, np.cross(b, c)).sum() / 6.0)


def test_primitive_meshes_are_closed_and_outward():
    assert mesh_volume(*box_mesh((0.1, 0.2, 0.3))) == pytest.approx(0.006, rel=1e-12)
    # inscribed polygons/polyhedra: the volume is below the exact one by a known small amount
    r, length = 0.05, 0.4
    sides = 20
    exact_polygon = 0.5 * sides * np.sin(2 * np.pi / sides) * r ** 2 * length
    assert mesh_volume(*cylinder_mesh(r, length, sides)) == pytest.approx(exact_polygon, rel=1e-12)
    assert 0.93 < mesh_volume(*sphere_mesh(r)) / (4 / 3 * np.pi * r ** 3) < 1.0


@pytest.mark.parametrize("name", ["fourbar_knee", "andrews_squeezer", "prosthesis_fourbar"])
def test_loop_points_coincide_when_the_resolver_closes_the_loops(name):
    model = load_model(REPO / "urdf" / f"{name}.urdf")
    scene = Scene.from_model(model)
    rng = np.random.default_rng(0)
    q0 = model.neutral_configuration()
    for _ in range(5):
        x = model.joint_configuration(q0 + rng.uniform(-0.3, 0.3, model.nq))
        residuals = scene.markers(x).loop_residuals()
        assert len(residuals) == len(model.description.elements_of("loop"))
        assert residuals.max() < 1e-9  # m; the resolver's Newton tolerance is far below
    # and they do NOT coincide if the dependent joints are left at zero (the check can fail)
    x = model.joint_configuration(q0 + 0.3)
    x_open = x.copy()
    x_open[[k for k in range(model.n_joints) if k not in model.coordinate_map.independent]] = 0.0
    assert scene.markers(x_open).loop_residuals().max() > 1e-3


def test_link_frames_agree_with_pybullet():
    import pybullet as p
    from biobullet.bridge.bridge import Bridge
    model = load_model(REPO / "urdf" / "shoulder_rhythm.urdf")
    scene = Scene.from_model(model)
    rng = np.random.default_rng(1)
    with Bridge(model) as bridge:
        names = {p.getJointInfo(bridge.body, j, physicsClientId=bridge.client)[12].decode(): j
                 for j in range(p.getNumJoints(bridge.body, physicsClientId=bridge.client))}
        worst = 0.0
        for _ in range(4):
            x = model.joint_configuration(model.neutral_configuration() + rng.uniform(-0.5, 0.5, model.nq))
            bridge.reset_tree(x, np.zeros(model.n_tangent))
            frames = scene.link_placements(x)
            for link, j in names.items():
                state = p.getLinkState(bridge.body, j, computeForwardKinematics=1, physicsClientId=bridge.client)
                rotation = np.array(p.getMatrixFromQuaternion(state[5])).reshape(3, 3)
                worst = max(worst, np.abs(frames[link][1] - state[4]).max(), np.abs(frames[link][0] - rotation).max())
    assert len(names) >= 10 and worst < 1e-6  # PyBullet stores link frames in float32-ish precision


def test_every_bundled_model_has_visuals():
    for path in URDF:
        model = load_model(path)
        scene = Scene.from_model(model)
        assert scene.visuals, path.name
        assert all(len(v.faces) and v.faces.max() < len(v.vertices) for v in scene.visuals)


STL = """solid t
facet normal 0 0 -1
outer loop
vertex 0 0 0
vertex 0 1 0
vertex 1 0 0
endloop
endfacet
facet normal 0 -1 0
outer loop
vertex 0 0 0
vertex 1 0 0
vertex 0 0 1
endloop
endfacet
facet normal -1 0 0
outer loop
vertex 0 0 0
vertex 0 0 1
vertex 0 1 0
endloop
endfacet
facet normal 1 1 1
outer loop
vertex 1 0 0
vertex 0 1 0
vertex 0 0 1
endloop
endfacet
endsolid t
"""


def _mesh_urdf(filename: str) -> str:
    return (f'<robot name="m"><link name="a"><inertial><mass value="1"/><inertia ixx="1" ixy="0" ixz="0" iyy="1" '
            f'iyz="0" izz="1"/></inertial><visual><origin xyz="0 0 1"/><geometry><mesh filename="{filename}" '
            f'scale="2 2 2"/></geometry></visual></link></robot>')


def test_package_mesh_paths_are_resolved(tmp_path):
    pytest.importorskip("trimesh")
    (tmp_path / "my_robot" / "meshes").mkdir(parents=True)
    (tmp_path / "my_robot" / "meshes" / "tet.stl").write_text(STL)
    (tmp_path / "my_robot" / "urdf").mkdir()
    urdf = tmp_path / "my_robot" / "urdf" / "m.urdf"
    urdf.write_text(_mesh_urdf("package://my_robot/meshes/tet.stl"))
    (visual,) = read_visuals(str(urdf))
    # unit tetrahedron scaled by 2 (volume 8/6), lifted by the visual origin
    assert mesh_volume(visual.vertices - [0, 0, 1], visual.faces) == pytest.approx(8 / 6, rel=1e-9)
    assert visual.vertices[:, 2].min() == pytest.approx(1.0)
    urdf.write_text(_mesh_urdf("package://my_robot/meshes/missing.stl"))
    with pytest.raises(ModelError) as info:
        read_visuals(str(urdf))
    assert info.value.attribute == "filename" and "missing.stl" in str(info.value)


def _synthetic_run(model, t_end: float = 1.0, samples: int = 41) -> Trajectory:
    """A smooth motion of the generalized coordinates; every tree coordinate from the model (no integration)."""
    t = np.linspace(0.0, t_end, samples)
    q0 = model.neutral_configuration()
    qs = [q0 + 0.6 * np.sin(np.pi * tk / t_end) * np.ones(model.nq) for tk in t]
    x = np.array([model.joint_configuration(q) for q in qs])
    if model.floating_base:
        x[:, 3:7] /= np.linalg.norm(x[:, 3:7], axis=1, keepdims=True)
    from biobullet.model.model import BASE_POSITION_NAMES
    names = (BASE_POSITION_NAMES if model.floating_base else ()) + tuple(model.joint_names)
    return Trajectory(t=t, position_names=names,
                      velocity_names=tuple(n + "_dot" for n in names), positions=x, velocities=np.zeros_like(x))


def test_trajectory_states_from_generalized_columns_match_the_full_ones(tmp_path):
    model = load_model(REPO / "urdf" / "fourbar_knee.urdf")
    run = _synthetic_run(model)
    run.to_csv(tmp_path / "run.csv")
    full = load_trajectory(tmp_path / "run.csv")
    times = np.linspace(0, 1, 7)
    x_full = trajectory_states(model, full, times)
    keep = [full.position_names.index(n) for n in model.coordinate_names]
    reduced = Trajectory(t=full.t, position_names=model.coordinate_names, velocity_names=(),
                         positions=full.positions[:, keep], velocities=np.zeros((len(full.t), 0)))
    x_reduced = trajectory_states(model, reduced, times)
    # the dependent joints: linear interpolation of samples vs the loop solved at the interpolated q — close, not equal
    assert np.abs(x_full - x_reduced).max() < 5e-3
    assert np.abs(x_full[:, list(model.coordinate_map.independent)]
                  - x_reduced[:, list(model.coordinate_map.independent)]).max() < 1e-12
    with pytest.raises(ModelError, match="lacks columns"):
        trajectory_states(load_model(REPO / "urdf" / "arm7.urdf"), full, times)


# ---------------------------------------------------------------------------------------------- viser server
def _listening_addresses(port: int) -> set[str]:
    """Local addresses (hex, as in /proc/net/tcp*) of sockets listening on `port`."""
    out = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        if not os.path.exists(table):
            continue
        for line in Path(table).read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            address, _, hex_port = local.rpartition(":")
            if state == "0A" and int(hex_port, 16) == port:
                out.add(address)
    return out


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_viewer_serves_every_bundled_model_on_loopback_only():
    pytest.importorskip("viser")
    from biobullet.render.viewer import Viewer, load_view_model
    for path in URDF:
        model, layouts = load_view_model(str(path))
        viewer = Viewer(model, layouts=layouts, port=_free_port())
        try:
            addresses = _listening_addresses(viewer.port)
            assert addresses and addresses <= {"0100007F", "0000000000000000FFFF00000100007F"}, (path.name, addresses)
            assert len(viewer.sliders) == model.nq - (1 if model.floating_base else 0)  # quaternion → roll/pitch/yaw
            for toggle in viewer.toggles.values():
                toggle.value = True
            viewer.refresh()
        finally:
            viewer.close()


def test_dependent_links_follow_the_slider():
    pytest.importorskip("viser")
    from biobullet.render.viewer import Viewer
    model = load_model(REPO / "urdf" / "shoulder_rhythm.urdf")
    viewer = Viewer(model, port=_free_port())
    try:
        import viser.transforms as vtf
        handles = {name: viewer._links[name] for name in ("clavicle", "scapula")}
        before = {name: vtf.SO3(np.array(h.wxyz)).as_matrix() for name, h in handles.items()}
        k = model.coordinate_names.index("elevation")
        viewer.sliders[k].value = viewer.sliders[k].value + 45.0   # degrees
        viewer._from_sliders()   # what the slider's callback does
        q = model.initial_state()[0]
        q[k] += np.radians(45.0)
        expected = viewer.scene.link_placements(model.joint_configuration(q))
        # clavicle and scapula are driven by the rhythm's joint functions only: they turned, to where the model
        # puts them
        for name, handle in handles.items():
            after = vtf.SO3(np.array(handle.wxyz)).as_matrix()
            assert np.abs(after - before[name]).max() > 1e-2, name
            np.testing.assert_allclose(after, expected[name][0], atol=1e-6)
            np.testing.assert_allclose(np.array(handle.position), expected[name][1], atol=1e-6)
    finally:
        viewer.close()


# ---------------------------------------------------------------------------------------------- HTML in Chromium
def _browser() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        if shutil.which(name):
            return shutil.which(name)
    return None


def _need_browser() -> str:
    browser = _browser()
    if browser is None:
        pytest.skip("no Chromium/Chrome installed (CI installs Debian's chromium in `make test`)")
    return browser


class Chromium:
    """One headless Chromium (800×600) driven over the DevTools protocol: every page opens in a fresh tab of the
    same browser, so a test pays Chromium's start once, not once per screenshot, and a live page (the viser viewer)
    is shot again after each update instead of being loaded again. webgl: software WebGL (SwiftShader); else the
    GPU is off."""

    def __init__(self, browser: str, profile: Path, *, webgl: bool = False) -> None:
        from websockets.sync.client import connect   # (viser's own dependency: the viewer extra brings it)
        graphics = (["--use-gl=angle", "--use-angle=swiftshader", "--enable-unsafe-swiftshader"] if webgl
                    else ["--disable-gpu"])
        profile.mkdir(parents=True, exist_ok=True)
        port_file = profile / "DevToolsActivePort"   # Chromium writes its debugging port and path here
        port_file.unlink(missing_ok=True)
        self.process = subprocess.Popen(
            [browser, "--headless", "--no-sandbox", *graphics, "--disable-background-networking",
             "--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars",
             f"--user-data-dir={profile}", "--remote-debugging-port=0", "--window-size=800,600", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        while not (port_file.exists() and len(port_file.read_text().split()) == 2):
            assert self.process.poll() is None and time.monotonic() < deadline, "Chromium did not start"
            time.sleep(0.05)
        port, path = port_file.read_text().split()
        self.socket = connect(f"ws://127.0.0.1:{port}{path}", max_size=None, open_timeout=60)
        self.ids = itertools.count(1)
        self.events: list[dict] = []

    def __enter__(self) -> "Chromium":
        return self

    def __exit__(self, *exc) -> None:
        self.socket.close()
        self.process.terminate()
        self.process.wait(timeout=60)

    def call(self, method: str, session: str | None = None, **params):
        """One DevTools command (of the tab `session`, or of the browser); the events that arrive meanwhile are
        kept for `wait_event`."""
        number = next(self.ids)
        self.socket.send(json.dumps({"id": number, "method": method, "params": params}
                                    | ({"sessionId": session} if session else {})))
        while True:
            message = json.loads(self.socket.recv(timeout=120))
            if message.get("id") == number:
                assert "error" not in message, (method, message["error"])
                return message["result"]
            self.events.append(message)

    def wait_event(self, method: str, session: str) -> None:
        while not any(e.get("method") == method and e.get("sessionId") == session for e in self.events):
            self.events.append(json.loads(self.socket.recv(timeout=120)))
        self.events.clear()

    @contextlib.contextmanager
    def page(self, url: str):
        """A fresh 800×600 tab showing `url` after its load event and a drawn frame; yields its session."""
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        try:
            self.call("Page.enable", session)
            self.call("Emulation.setDeviceMetricsOverride", session, width=800, height=600, deviceScaleFactor=1,
                      mobile=False)
            self.events.clear()
            self.call("Page.navigate", session, url=url)
            self.wait_event("Page.loadEventFired", session)
            self.evaluate(session, "new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)))")
            yield session
        finally:
            self.call("Target.closeTarget", targetId=target)

    def evaluate(self, session: str, expression: str):
        """The value of a JavaScript expression in the tab (a promise is awaited)."""
        reply = self.call("Runtime.evaluate", session, expression=expression, awaitPromise=True, returnByValue=True)
        assert "exceptionDetails" not in reply, reply["exceptionDetails"]
        return reply["result"].get("value")

    def capture(self, session: str, out: Path) -> np.ndarray:
        """A screenshot of the tab (written to `out` too, for a look when a check fails)."""
        from PIL import Image
        out.write_bytes(base64.b64decode(self.call("Page.captureScreenshot", session, format="png")["data"]))
        return np.asarray(Image.open(out).convert("RGB"), dtype=int)

    def screenshot(self, url: str, out: Path) -> np.ndarray:
        with self.page(url) as session:
            return self.capture(session, out)


@pytest.fixture(scope="module")
def chromium(tmp_path_factory):
    """The module's headless Chromium (GPU off) for the self-contained HTML pages."""
    with Chromium(_need_browser(), tmp_path_factory.mktemp("chromium")) as session:
        yield session


CANVAS = slice(0, 560)   # the 800×600 window above the 40-px control bar


def _model_mask(shot: np.ndarray, empty: np.ndarray) -> np.ndarray:
    """Pixels of the canvas where the model is drawn: they differ from the same view without the model."""
    return np.abs(shot[CANVAS] - empty[CANVAS]).max(axis=2) > 24


def _replay_shots(chromium, page: Path, times, tmp_path, *, shadows: bool = False):
    url = page.resolve().as_uri()
    suffix = "" if shadows else "&shadows=0"
    empty = chromium.screenshot(url + f"#t={times[0]}&hide=model", tmp_path / "empty.png")
    shots = [chromium.screenshot(url + f"#t={t}{suffix}", tmp_path / f"t{k}.png") for k, t in enumerate(times)]
    return empty, shots


def test_html_replay_draws_the_model_in_headless_chromium(chromium, tmp_path):
    model = load_model(REPO / "urdf" / "fourbar_knee.urdf")
    _synthetic_run(model).to_csv(tmp_path / "run.csv")
    page = tmp_path / "knee.html"
    result = subprocess.run([sys.executable, "-m", "biobullet", "view", str(REPO / "urdf" / "fourbar_knee.urdf"),
                             "--trajectory", str(tmp_path / "run.csv"), "--html", str(page)],
                            capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=str(REPO / "plugin")))
    assert result.returncode == 0, result.stderr
    text = page.read_text()
    assert "http://" not in text.replace("http://www.w3.org", "") and "https://" not in text  # nothing to fetch
    times = (0.1, 0.5, 0.9)
    empty, shots = _replay_shots(chromium, page, times, tmp_path)
    masks = [_model_mask(shot, empty) for shot in shots]
    # the slender knee (0.67 m tall, 4 cm wide) is fitted to the canvas height over its whole motion: its own
    # pixels (no shadows) measured 1.9–2.3 % of the 800×560 canvas; 1.2 % is ~5400 pixels, far above anything
    # but a drawn model. Its bounding box spans ≥ 70 % of the canvas height at every time (fit: 1/1.08 = 93 %)
    # and never touches the canvas edge (nothing leaves the frame).
    for t, mask in zip(times, masks):
        rows, columns = np.nonzero(mask)
        assert mask.mean() > 0.012, (t, mask.mean())
        assert (rows.max() - rows.min()) / mask.shape[0] > 0.7, t
        assert rows.min() > 2 and rows.max() < mask.shape[0] - 3 and columns.min() > 2 and columns.max() < 797, t
    # sin(π t) turns the knee between the times: the pictures change
    assert (masks[0] ^ masks[1]).mean() > 0.005
    # readable: the model's pixels are not near-black (the dark thigh is lifted, shaded faces differ)
    knee = shots[1][CANVAS][masks[1]]
    assert np.median(knee.mean(axis=1)) > 90 and knee.mean(axis=1).std() > 4
    # drop shadows: with them on, the ground under the model darkens beyond the model's own pixels
    shadowed = chromium.screenshot(page.resolve().as_uri() + "#t=0.5", tmp_path / "shadow.png")
    darker = (empty[CANVAS].sum(axis=2) - shadowed[CANVAS].sum(axis=2) > 60) & ~masks[1]
    assert darker.mean() > 0.003, darker.mean()


def _swing_run(model, samples: int = 21) -> Trajectory:
    """The shoulder raised from 0 to 150° elevation in the 0°/90° planes while the elbow flexes: the hand travels
    through the whole reachable space, so a camera fitted to one pose would lose it."""
    t = np.linspace(0.0, 1.0, samples)
    names = list(model.coordinate_names)
    q = np.tile(model.neutral_configuration(), (samples, 1))
    q[:, names.index("elevation")] = np.radians(150.0) * t
    q[:, names.index("plane_of_elevation")] = np.radians(90.0) * t
    q[:, names.index("elbow_flexion")] = np.radians(120.0) * np.sin(np.pi * t)
    x = np.array([model.joint_configuration(row) for row in q])
    return Trajectory(t=t, position_names=tuple(model.joint_names),
                      velocity_names=tuple(n + "_dot" for n in model.joint_names), positions=x,
                      velocities=np.zeros_like(x))


def test_html_replay_camera_keeps_the_whole_motion_in_the_frame(chromium, tmp_path):
    """Shoulder sweep (hand from hanging to overhead): at every sampled time the model's pixels fill a fitted share
    of the canvas and the forearm and hand never touch its edge."""
    from biobullet.render.html import export_html
    model = load_model(REPO / "urdf" / "shoulder_rhythm.urdf")
    page = Path(export_html(model, _swing_run(model), tmp_path / "swing.html", fps=20))
    times = (0.0, 0.5, 1.0)
    empty, shots = _replay_shots(chromium, page, times, tmp_path)
    union = np.zeros_like(_model_mask(shots[0], empty))
    for t, shot in zip(times, shots):
        mask = _model_mask(shot, empty)
        rows, columns = np.nonzero(mask)
        # measured 3.7–4.9 % of the canvas (thorax box + arm; the hand's path from hanging to overhead sets the
        # scale); 3 % = 13 400 pixels
        assert mask.mean() > 0.03, (t, mask.mean())
        assert rows.min() > 2 and rows.max() < mask.shape[0] - 3 and columns.min() > 2 and columns.max() < 797, t
        union |= mask
    rows, columns = np.nonzero(union)
    # fitted: over the motion the model spans most of the canvas in one direction (the fit: 1/1.08 = 93 %)
    assert max((rows.max() - rows.min()) / union.shape[0], (columns.max() - columns.min()) / union.shape[1]) > 0.8


def _pierced_box_urdf(back) -> str:
    """A blue 20-cm cube pierced by a red rod (1 cm radius, 50 cm) through its centre, tilted 25° from the page's
    default viewing direction `back` (target → eye): 15 cm of rod stick out TOWARD the camera, in front of the cube's
    faces, though the rod's triangles have their centres inside the cube."""
    back = np.asarray(back, float) / np.linalg.norm(back)
    side = np.cross(back, [0.0, 0.0, 1.0])
    side /= np.linalg.norm(side)
    axis = np.cos(np.radians(25)) * back + np.sin(np.radians(25)) * side
    # rpy whose z column is `axis` (R = Rz(yaw) Ry(pitch)): pitch = acos(a_z), yaw = atan2(a_y, a_x)
    pitch, yaw = float(np.arccos(axis[2])), float(np.arctan2(axis[1], axis[0]))
    inertial = ('<inertial><mass value="1"/><inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/>'
                '</inertial>')
    return (f'<robot name="pierced"><material name="blue"><color rgba="0.1 0.2 0.9 1"/></material>'
            f'<material name="red"><color rgba="0.95 0.1 0.1 1"/></material>'
            f'<link name="cube">{inertial}<visual><origin xyz="0 0 0.5"/><geometry><box size="0.2 0.2 0.2"/>'
            f'</geometry><material name="blue"/></visual></link>'
            f'<link name="rod">{inertial}<visual><geometry><cylinder radius="0.01" length="0.5"/></geometry>'
            f'<material name="red"/></visual></link>'
            f'<joint name="spin" type="revolute"><parent link="cube"/><child link="rod"/>'
            f'<origin xyz="0 0 0.5" rpy="0 {pitch} {yaw}"/><axis xyz="0 0 1"/>'
            f'<limit lower="-3" upper="3" effort="1" velocity="1"/></joint></robot>')


def test_html_replay_depth_is_per_pixel(chromium, tmp_path):
    """Depth decided per pixel, not per triangle: the part of the rod in front of the cube is drawn over the cube
    (a painter's sort of whole triangles, by their centres inside the cube, hides it behind the cube's faces), and
    the part inside the cube is hidden (nothing red where the rod runs inside)."""
    from biobullet.render.html import export_html
    az, el = -0.9, 0.35   # the page's default view (cam.az, cam.el), up = z: e1 = x, e2 = y
    back = (np.cos(el) * np.cos(az), np.cos(el) * np.sin(az), np.sin(el))
    (tmp_path / "pierced.urdf").write_text(_pierced_box_urdf(back))
    model = load_model(tmp_path / "pierced.urdf")
    t = np.linspace(0.0, 1.0, 3)
    x = np.outer(t, [0.5])   # the rod spins about its own axis: the picture does not change
    run = Trajectory(t=t, position_names=("spin",), velocity_names=("spin_dot",),
                     positions=x, velocities=np.zeros_like(x))
    page = Path(export_html(model, run, tmp_path / "pierced.html"))
    image = chromium.screenshot(page.resolve().as_uri() + "#t=0.5&shadows=0", tmp_path / "pierced.png")[CANVAS]
    red = (image[:, :, 0] - image[:, :, 2] > 80)
    blue = (image[:, :, 2] - image[:, :, 0] > 80)
    assert blue.mean() > 0.05
    # red over the cube: red pixels with the cube (blue) within 60 px above and below them in their column
    rows, columns = np.nonzero(red)
    inside = [(r, c) for r, c in zip(rows, columns)
              if blue[max(r - 60, 0):r, c].any() and blue[r + 1:r + 61, c].any()]
    assert len(inside) > 500, len(inside)
    # no streaks: across the stub, each column is red from edge to edge (a per-triangle sort lets the cube's faces
    # cut blue stripes through the rod where the rod's long side triangles have their centres behind a face)
    streaked = [c for c in set(c for _, c in inside)
                if blue[rows[columns == c].min():rows[columns == c].max() + 1, c].any()]
    assert not streaked, len(streaked)
    # and the rod does not show through the cube: only the 15-cm stub in front of it is drawn; the whole 50-cm
    # rod (3.3× longer) would reach across the picture
    extent = np.hypot(rows.max() - rows.min(), columns.max() - columns.min())
    assert extent < 0.6 * image.shape[1], extent


def test_viewer_draws_the_model_in_headless_chromium(tmp_path):
    """The viser viewer in a real browser (software WebGL): with a trajectory, at three times, the model's pixels
    (the page against the same page with every link hidden) fill a measured share of the 3D view left of the
    control panel — the initial camera is fitted to the whole motion and moved out from under the panel."""
    pytest.importorskip("viser")
    from biobullet.render.viewer import Viewer
    browser = _need_browser()
    model = load_model(REPO / "urdf" / "shoulder_rhythm.urdf")
    viewer = Viewer(model, trajectory=_swing_run(model), port=_free_port())
    view = (slice(150, 600), slice(0, 460))   # below the notice toast, left of the control panel (800×600)
    # the page stays open and gets each update over viser's websocket: a marker text sent after the update shows
    # that the page has it (messages arrive in order); the shot is taken once two successive captures agree
    marker = viewer.server.gui.add_markdown("")
    try:
        with Chromium(browser, tmp_path / "profile", webgl=True) as chromium, \
                chromium.page(f"http://127.0.0.1:{viewer.port}") as tab:
            def settled_shot(name: str) -> np.ndarray:
                marker.content = f"shown: {name}"
                deadline = time.monotonic() + 120
                while not chromium.evaluate(tab, f"document.body.innerText.includes('shown: {name}')"):
                    assert time.monotonic() < deadline, f"the page never showed {name}"
                    time.sleep(0.1)
                shot = chromium.capture(tab, tmp_path / f"{name}.png")
                while True:
                    again = chromium.capture(tab, tmp_path / f"{name}.png")
                    if np.array_equal(again[view], shot[view]):
                        return again
                    assert time.monotonic() < deadline, f"the page never settled on {name}"
                    shot = again
            shots = []
            for t in (0.0, 0.5, 1.0):
                viewer.show_time(t)
                shots.append(settled_shot(f"t={t}"))
            for handle in viewer._links.values():
                handle.visible = False
            empty = settled_shot("empty")
    finally:
        viewer.close()
    masks = [np.abs(shot[view] - empty[view]).max(axis=2) > 24 for shot in shots]
    fractions = [mask.mean() for mask in masks]
    # measured 9–14 % (arm, thorax and their soft shadow; 2 % with the unfitted camera this replaced, half hidden
    # under the panel); 5 % is ~10 000 pixels
    assert min(fractions) > 0.05, fractions
    assert (masks[0] ^ masks[2]).mean() > 0.01   # the arm moved between the times


def test_view_cli_errors_are_one_line(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("t,nothing\n0,1\n")
    # in this process (tests/in_process.py); `view --html` end to end: test_html_replay_draws_the_model_in_headless_chromium
    result = in_process.cli("view", str(REPO / "urdf" / "arm7.urdf"), "--trajectory", str(bad),
                            "--html", str(tmp_path / "x.html"))
    assert result.returncode == 2 and "lacks columns" in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "x.html").exists()


def test_segmented_view_of_a_rigid_run_keeps_the_segments_straight():
    from biobullet.render.viewer import load_view_model
    path = REPO / "urdf" / "elastic_robot_3link.urdf"
    rigid = load_model(path)
    model, layouts = load_view_model(str(path), segments=3)
    run = _synthetic_run(rigid, samples=5)
    x = trajectory_states(model, run, run.t)
    bend = [k for k, name in enumerate(model.joint_names) if "__" in name]
    assert bend and np.all(x[:, bend] == 0.0)
    rigid_columns = [model.joint_names.index(name) for name in rigid.joint_names]
    np.testing.assert_allclose(x[:, rigid_columns], run.positions, atol=1e-12)


def test_html_export_of_every_bundled_model(tmp_path):
    import json
    from biobullet.render.html import export_html
    from biobullet.render.viewer import load_view_model
    for path in URDF:
        model, layouts = load_view_model(str(path), segments=2)
        rigid = load_model(path)
        page = Path(export_html(model, _synthetic_run(rigid, samples=3), tmp_path / f"{path.stem}.html", fps=4,
                                layouts=layouts))
        text = page.read_text()
        data = json.loads(text.split('type="application/json">', 1)[1].split("</script>", 1)[0])
        assert len(data["times"]) == 5 and len(data["poses"]) == 5 * data["links"] * 12, path.name
        assert page.stat().st_size < 2_000_000


def test_a_model_without_visuals_is_drawn_as_balls(tmp_path):
    from biobullet.render.html import export_html
    inertial = ('<inertial><origin xyz="0 0 0.25"/><mass value="1"/>'
                '<inertia ixx="0.02" ixy="0" ixz="0" iyy="0.02" iyz="0" izz="0.01"/></inertial>')
    (tmp_path / "bare.urdf").write_text(
        f'<robot name="bare"><link name="a">{inertial}</link><link name="b">{inertial}</link>'
        '<joint name="j" type="revolute"><parent link="a"/><child link="b"/><origin xyz="0 0 0.5"/>'
        '<axis xyz="0 1 0"/><limit lower="-2" upper="2" effort="1" velocity="1"/></joint></robot>')
    model = load_model(tmp_path / "bare.urdf")
    scene = Scene.from_model(model)
    assert {v.link for v in scene.visuals} == set(model.link_names)
    export_html(model, _synthetic_run(model, samples=3), tmp_path / "bare.html")


HOSTILE_NAMES = ("<!--<script>", "</script><script>document.title='injected'</script>", "]]>&amp;")


def test_html_replay_data_is_inert_and_the_page_script_runs_with_hostile_names(chromium, tmp_path):
    """Names that open a comment in the script data state (`<!--<script>`), close the data block (`</script>`),
    or end a CDATA section reach the page's JSON, and a title holding a JavaScript line terminator (a model file may
    not: the loader refuses such names): the page's own script must still run (it writes the time label and
    draws), and nothing else may (Chromium's DOM after scripts ran)."""
    from xml.sax.saxutils import quoteattr
    source = (REPO / "urdf" / "fourbar_knee.urdf").read_text()
    for old, new in (('robot name="fourbar_knee"', f"robot name={quoteattr(HOSTILE_NAMES[0] + HOSTILE_NAMES[1])}"),
                     ('"posterior_link"', quoteattr(HOSTILE_NAMES[1])),
                     ('"anterior_link"', quoteattr(HOSTILE_NAMES[2]))):
        source = source.replace(old, new)
    path = tmp_path / "hostile.urdf"
    path.write_text(source)
    model = load_model(path)
    assert HOSTILE_NAMES[1] in model.link_names
    page = tmp_path / "hostile.html"
    from biobullet.render.html import export_html
    export_html(model, _synthetic_run(model), page, title=HOSTILE_NAMES[0] + "\u2028" + HOSTILE_NAMES[1])
    text = page.read_text()
    data = text[text.index('<script id="data"'):]
    data = data[data.index(">") + 1:data.index("</script>")]
    assert not set(data) & set("<>&\u2028\u2029")   # every JSON-in-HTML context is escaped
    with chromium.page(page.resolve().as_uri() + "#t=0.5") as tab:
        dom = chromium.evaluate(tab, "document.documentElement.outerHTML")
    assert re.search(r'<span id="label">t = 0\.5\d* s</span>', dom), dom[-2000:]   # the page's script ran
    assert dom.count("<script") == 2 and "<title>injected</title>" not in dom   # no script of the data ran
    shot = chromium.screenshot(page.resolve().as_uri() + "#t=0.5", tmp_path / "shot.png")
    empty = chromium.screenshot(page.resolve().as_uri() + "#t=0.5&hide=model", tmp_path / "empty.png")
    # the knee is drawn (3.3 % of the canvas, measured on the unrenamed model: see the test above)
    assert (np.abs(shot[:560] - empty[:560]).max(axis=2) > 24).mean() > 0.01


DELTOID = """<muscle name="DELT2" max_isometric_force="1000" optimal_fiber_length="0.11" tendon_slack_length="0.03">
  <point link="scapula" xyz="-0.010 0.000 0.025"/>
  <point link="humerus" xyz="0.005 -0.100 0.015"/>
  <wrap name="head" type="sphere" link="humerus" xyz="0 0 0" radius="0.025" quadrant="+z"/>
</muscle>
"""


def test_html_replay_draws_muscles_by_activation_in_headless_chromium(chromium, tmp_path):
    """The shoulder with a deltoid: the replay draws the muscle in its activation colour (blue at 0, red at 1, at
    the frame asked for; a function of time), and nothing of either colour without the muscle."""
    from biobullet.render.html import export_html
    from biobullet.render.scene import MUSCLE_ACTIVE, MUSCLE_RESTING
    text = (REPO / "urdf" / "shoulder_rhythm.urdf").read_text()
    (tmp_path / "deltoid.urdf").write_text(text.replace("</biobullet>", DELTOID + "</biobullet>"))
    model = load_model(tmp_path / "deltoid.urdf")
    bare = load_model(REPO / "urdf" / "shoulder_rhythm.urdf")
    run = _swing_run(model)
    export_html(model, run, tmp_path / "muscle.html", fps=10, muscle_activations=lambda t: [float(t > 0.5)])
    export_html(bare, run, tmp_path / "bare.html", fps=10)

    def count(shot, colour) -> int:   # canvas pixels within a few levels of the colour
        target = np.round(255 * np.asarray(colour)).astype(int)
        return int((np.abs(shot[CANVAS] - target).sum(axis=2) <= 12).sum())

    early, late, plain = (chromium.screenshot((tmp_path / name).resolve().as_uri() + f"#t={t}&shadows=0",
                                              tmp_path / f"{name}{t}.png")
                          for name, t in (("muscle.html", 0.2), ("muscle.html", 0.8), ("bare.html", 0.2)))
    # the deltoid is ~12 cm long, drawn ≥ 2 px wide in an 800 × 560 canvas fitted to the whole arm: ≥ 60 pixels
    assert count(early, MUSCLE_RESTING) > 60 and count(early, MUSCLE_ACTIVE) == 0
    assert count(late, MUSCLE_ACTIVE) > 60 and count(late, MUSCLE_RESTING) == 0
    assert count(plain, MUSCLE_RESTING) == 0 and count(plain, MUSCLE_ACTIVE) == 0


def test_viewer_draws_muscle_paths_by_activation(tmp_path):
    """The viewer's muscle lines follow the slider (the path where the model puts it at the new q) and take the
    activation colour."""
    pytest.importorskip("viser")
    import biobullet.muscles as muscles
    from biobullet.render.scene import MUSCLE_ACTIVE
    from biobullet.render.viewer import Viewer
    text = (REPO / "urdf" / "shoulder_rhythm.urdf").read_text()
    (tmp_path / "deltoid.urdf").write_text(text.replace("</biobullet>", DELTOID + "</biobullet>"))
    model = load_model(tmp_path / "deltoid.urdf")
    viewer = Viewer(model, port=_free_port(), muscle_activations=1.0)
    try:
        k = model.coordinate_names.index("elevation")
        viewer.sliders[k].value = viewer.sliders[k].value + 60.0   # degrees
        viewer._from_sliders()   # what the slider's callback does
        q = model.initial_state()[0]
        q[k] += np.radians(60.0)
        path = muscles.path_polylines(model, model.joint_configuration(q))[0]
        segments, colors = viewer.muscle_segments
        np.testing.assert_allclose(segments[:, 0], path[:-1], atol=1e-6)
        np.testing.assert_allclose(segments[:, 1], path[1:], atol=1e-6)
        assert np.all(colors == np.round(255 * np.asarray(MUSCLE_ACTIVE)).astype(np.uint8))
        # the drawn path is as long as the model's (an arc drawn as a chord: ≤ 1 mm shorter)
        drawn = float(np.linalg.norm(segments[:, 1] - segments[:, 0], axis=1).sum())
        assert -1e-6 <= muscles.lengths(model, q)[0] - drawn <= 1e-3   # float32 vertices: 1e-6
    finally:
        viewer.close()
