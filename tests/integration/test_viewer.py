"""The browser viewer (viser), the self-contained HTML replay (checked in headless Chromium) and the scene they share.

Independent references: PyBullet's own forward kinematics of the same URDF (link frames), the divergence theorem
(mesh volumes → outward, closed triangle meshes), loop closure (the two points of a loop computed from the raw
`<loop>` attributes must coincide once the loop resolver has placed the dependent joints), /proc/net/tcp (the
server's listening address), and pixels of real browser screenshots.
"""
from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

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
    return Trajectory(t=t, joint_names=model.joint_names, position_names=names,
                      velocity_names=tuple(n + "_dot" for n in names), positions=x, velocities=np.zeros_like(x))


def test_trajectory_states_from_generalized_columns_match_the_full_ones(tmp_path):
    model = load_model(REPO / "urdf" / "fourbar_knee.urdf")
    run = _synthetic_run(model)
    run.to_csv(tmp_path / "run.csv")
    full = load_trajectory(tmp_path / "run.csv")
    times = np.linspace(0, 1, 7)
    x_full = trajectory_states(model, full, times)
    keep = [full.position_names.index(n) for n in model.coordinate_names]
    reduced = Trajectory(t=full.t, joint_names=(), position_names=model.coordinate_names, velocity_names=(),
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
        viewer.sliders[k].value = viewer.sliders[k].value + 0.8
        viewer._from_sliders()   # what the slider's callback does
        q = np.array([s.value for s in viewer.sliders])
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


def _screenshot(browser: str, url: str, out: Path, profile: Path) -> np.ndarray:
    from PIL import Image
    subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                    "--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars",
                    f"--user-data-dir={profile}", f"--screenshot={out}", "--window-size=800,600", url],
                   check=True, capture_output=True, timeout=120)
    return np.asarray(Image.open(out).convert("RGB"), dtype=int)


def test_html_replay_draws_the_model_in_headless_chromium(tmp_path):
    browser = _browser()
    if browser is None:
        pytest.skip("no Chromium/Chrome installed (CI installs Debian's chromium in `make test`)")
    model = load_model(REPO / "urdf" / "fourbar_knee.urdf")
    _synthetic_run(model).to_csv(tmp_path / "run.csv")
    page = tmp_path / "knee.html"
    result = subprocess.run([sys.executable, "-m", "biobullet", "view", str(REPO / "urdf" / "fourbar_knee.urdf"),
                             "--trajectory", str(tmp_path / "run.csv"), "--html", str(page)],
                            capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=str(REPO / "plugin")))
    assert result.returncode == 0, result.stderr
    text = page.read_text()
    assert "http://" not in text.replace("http://www.w3.org", "") and "https://" not in text  # nothing to fetch
    url = page.resolve().as_uri()
    empty = _screenshot(browser, url + "#t=0.5&hide=model", tmp_path / "empty.png", tmp_path / "profile")
    early = _screenshot(browser, url + "#t=0.1", tmp_path / "early.png", tmp_path / "profile")
    late = _screenshot(browser, url + "#t=0.5", tmp_path / "late.png", tmp_path / "profile")
    canvas = slice(0, 560)   # above the 40-px control bar

    def differs(a, b) -> np.ndarray:
        return np.abs(a[canvas] - b[canvas]).max(axis=2) > 24

    model_fraction = differs(late, empty).mean()
    change_fraction = differs(late, early).mean()
    # the slender knee (0.67 m tall, 4 cm wide; the camera fits its motion to the canvas height) covers 3.3 % of
    # the 800×560 canvas with its shadow (measured); 1 % is ~4500 pixels, far above anything but a drawn model.
    # sin(π t) turns the knee from 0.18 to 0.6 rad between the two times: measured 3.1 % of the pixels change;
    # 0.5 % requires visible motion.
    assert model_fraction > 0.01, model_fraction
    assert change_fraction > 0.005, change_fraction


def test_view_cli_errors_are_one_line(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(REPO / "plugin"))
    bad = tmp_path / "bad.csv"
    bad.write_text("t,nothing\n0,1\n")
    result = subprocess.run([sys.executable, "-m", "biobullet", "view", str(REPO / "urdf" / "arm7.urdf"),
                             "--trajectory", str(bad), "--html", str(tmp_path / "x.html")],
                            capture_output=True, text=True, env=env)
    assert result.returncode == 2 and "lacks columns" in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "x.html").exists()


def test_floating_base_sliders_give_the_urdf_rpy_rotation():
    from biobullet.render.viewer import q_from_sliders, slider_ranges
    from biobullet.spatial.rotations import quaternion_to_matrix, rpy_to_matrix
    model = load_model(REPO / "urdf" / "humanoid.urdf")
    assert model.floating_base
    names = [r[0] for r in slider_ranges(model)]
    assert names[:6] == ["base_x", "base_y", "base_z", "base_roll", "base_pitch", "base_yaw"]
    values = np.array([r[3] for r in slider_ranges(model)])
    values[3:6] = (0.3, -0.7, 1.9)
    q = q_from_sliders(model, values)
    np.testing.assert_allclose(quaternion_to_matrix(q[3:7]), rpy_to_matrix((0.3, -0.7, 1.9)), atol=1e-14)


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


HOSTILE_NAMES = ("<!--<script>", "</script><script>document.title='injected'</script>", "]]>\u2028&amp;")


def test_html_replay_data_is_inert_and_the_page_script_runs_with_hostile_names(tmp_path):
    """Names that open a comment in the script data state (`<!--<script>`), close the data block (`</script>`),
    end a CDATA section or hold a JavaScript line terminator reach the page's JSON: the page's own script must
    still run (it writes the time label and draws), and nothing else may (Chromium's DOM after scripts ran)."""
    browser = _browser()
    if browser is None:
        pytest.skip("no Chromium/Chrome installed (CI installs Debian's chromium in `make test`)")
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
    export_html(model, _synthetic_run(model), page)
    text = page.read_text()
    data = text[text.index('<script id="data"'):]
    data = data[data.index(">") + 1:data.index("</script>")]
    assert not set(data) & set("<>&\u2028\u2029")   # every JSON-in-HTML context is escaped
    dom = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                          "--disable-component-update", "--disable-sync", "--no-first-run",
                          f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=3000", "--dump-dom",
                          page.resolve().as_uri() + "#t=0.5"], check=True, capture_output=True, text=True,
                         timeout=120).stdout
    assert re.search(r'<span id="label">t = 0\.5\d* s</span>', dom), dom[-2000:]   # the page's script ran
    assert dom.count("<script") == 2 and "<title>injected</title>" not in dom   # no script of the data ran
    shot = _screenshot(browser, page.resolve().as_uri() + "#t=0.5", tmp_path / "shot.png", tmp_path / "profile")
    empty = _screenshot(browser, page.resolve().as_uri() + "#t=0.5&hide=model", tmp_path / "empty.png",
                        tmp_path / "profile")
    # the knee is drawn (3.3 % of the canvas, measured on the unrenamed model: see the test above)
    assert (np.abs(shot[:560] - empty[:560]).max(axis=2) > 24).mean() > 0.01
