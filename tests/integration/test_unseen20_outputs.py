"""The outputs a user looks at and analyses (hunt17): frames and videos of huge or degenerate requests, the HTML
replay's link poses against PyBullet's, spectra and spectrum maps of a run that diverged.

Each test named after a defect failed on the code before the fix; the pose test is an independent check of what
was already right (the drawn links sit where PyBullet puts them)."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pybullet")

import pybullet as p  # noqa: E402

import biobullet  # noqa: E402
from biobullet.analysis.plots import plot_spectrum_map  # noqa: E402
from biobullet.analysis.spectrum import amplitude_spectrum  # noqa: E402
from biobullet.bridge import Bridge  # noqa: E402
from biobullet.core.errors import ModelError  # noqa: E402
from biobullet.render import render_frames, write_video  # noqa: E402
from biobullet.render.html import export_html  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
ENV = dict(os.environ, PYTHONPATH=str(REPO / "plugin"))


def table(t, positions) -> types.SimpleNamespace:
    return types.SimpleNamespace(t=np.asarray(t, float), positions=np.asarray(positions, float))


@pytest.fixture(scope="module")
def shoulder():
    return biobullet.load_model(REPO / "urdf" / "shoulder_rhythm.urdf")


#: a render request too large for memory, in a child process whose address space is capped at 6 GiB: the old
#: code segfaulted in TinyRenderer ("b3AlignedObjectArray reserve out-of-memory") at 100000 × 100000 pixels, and
#: kept 10⁶ frames of 640 × 480 (858 GiB) in a list until memory ran out; now one ModelError before any work
_HUGE = """
import resource, sys, types
import numpy as np
resource.setrlimit(resource.RLIMIT_AS, (6 << 30, 6 << 30))
import biobullet
from biobullet.core.errors import ModelError
from biobullet.render import render_frames
model = biobullet.load_model(sys.argv[1])
run = types.SimpleNamespace(t=np.array([0.0, 1.0]), positions=np.zeros((2, model.n_joints)))
try:
    render_frames(model, run, width=int(sys.argv[2]), height=int(sys.argv[3]), fps=float(sys.argv[4]))
except ModelError as exc:
    print("refused:", exc)
"""


@pytest.mark.parametrize("width, height, fps, message", [
    (100000, 100000, 1.0, r"argument 'width' is 100000 \(expected an int from 16 to 8192"),
    # 1 s at 10⁶ fps: 10⁶ + 1 frames (both ends) × 640 × 480 × 3 bytes = 858.3 GiB
    (640, 480, 1e6, r"1000001 frames of 640×480 pixels \(1 s at 1e\+06 fps\) take 858\.3 GiB"),
])
def test_a_render_request_too_large_for_memory_is_one_error(width, height, fps, message) -> None:
    done = subprocess.run([sys.executable, "-c", _HUGE, str(REPO / "urdf" / "shoulder_rhythm.urdf"),
                           str(width), str(height), str(fps)], env=ENV, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert re.search("refused: .*" + message, done.stdout), done.stdout


def test_render_frames_of_a_run_with_a_nan_time_is_one_error(shoulder) -> None:
    """t = [0, nan] was numpy's "ValueError: arange: cannot compute length" from the frame times."""
    with pytest.raises(ModelError, match=r"'trajectory.t': the sample times are not finite and non-decreasing"):
        render_frames(shoulder, table([0.0, np.nan], np.zeros((2, shoulder.n_joints))), width=32, height=32)


def test_a_refused_trajectory_leaves_no_pybullet_client_behind(shoulder) -> None:
    """render_frames(model, run with a NaN position) opened its private DIRECT client before reading the run and
    never closed it on the error: the next connection got the next slot. PyBullet reuses the lowest free slot,
    so a free slot before the call is free after it."""
    free = p.connect(p.DIRECT)
    p.disconnect(free)
    diverged = table([0.0, 1.0], [[0.0] * shoulder.n_joints, [np.nan] * shoulder.n_joints])
    with pytest.raises(ModelError, match="non-finite value"):
        render_frames(shoulder, diverged, width=32, height=32)
    again = p.connect(p.DIRECT)
    try:
        assert again == free
    finally:
        p.disconnect(again)


@pytest.mark.parametrize("fps", ["30", None])
def test_an_fps_that_is_not_a_number_is_one_error(shoulder, tmp_path, fps) -> None:
    """fps="30" or None was numpy's "ufunc 'isfinite' not supported for the input types" (a TypeError) in
    render_frames, export_html and write_video."""
    run = table([0.0, 1.0], np.zeros((2, shoulder.n_joints)))
    expected = rf"argument 'fps' is {re.escape(repr(fps))} \(expected a positive number\)"
    with pytest.raises(ModelError, match=expected):
        render_frames(shoulder, run, width=32, height=32, fps=fps)
    with pytest.raises(ModelError, match=expected):
        export_html(shoulder, run, tmp_path / "replay.html", fps=fps)
    with pytest.raises(ModelError, match=expected):
        write_video([np.zeros((16, 16, 3), np.uint8)], tmp_path / "clip.gif", fps=fps)
    assert not list(tmp_path.iterdir())


def _pybullet_link_frames(bridge: Bridge, x: np.ndarray) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """World (R, p) of every URDF link frame as PyBullet places it at tree configuration x."""
    bridge.map.state_to_pybullet(x, np.zeros(bridge.model.n_tangent))
    out = {}
    for name, index in bridge.map.link_index.items():
        if index < 0:   # the base: PyBullet reports its inertial frame; the URDF link frame is offset from it
            position, orientation = p.getBasePositionAndOrientation(bridge.body, physicsClientId=bridge.client)
            info = p.getDynamicsInfo(bridge.body, -1, physicsClientId=bridge.client)
            position, orientation = p.multiplyTransforms(position, orientation,
                                                         *p.invertTransform(info[3], info[4]))
        else:
            state = p.getLinkState(bridge.body, index, computeForwardKinematics=1, physicsClientId=bridge.client)
            position, orientation = state[4], state[5]
        out[name] = (np.array(p.getMatrixFromQuaternion(orientation)).reshape(3, 3), np.array(position))
    return out


@pytest.mark.parametrize("source", ["humanoid.urdf", "andrews_squeezer.urdf", "spherical", "arm26"])
def test_the_replay_draws_every_link_where_pybullet_puts_it(source, tmp_path) -> None:
    """Floating base (humanoid), closed loops (Andrews' squeezer), two spherical joints on a floating base (ball
    arm: the replay took x = [base pose, elbow], dropping the joints' quaternions, and drew the upper arm, forearm
    and hand wrong, 1.8 off in a rotation entry), an OpenSim model with muscles (arm26): the link poses embedded in the HTML replay, at two states of a run, equal PyBullet's
    link frames at the same states to 6e-6 (the page stores 5 decimals: ±5e-6; PyBullet's own poses ~2e-7)."""
    if source == "spherical":
        from spherical_arms import ARM
        (tmp_path / "arm.urdf").write_text(ARM)
        model = biobullet.load_model(tmp_path / "arm.urdf", floating_base=True)
    else:
        model = biobullet.load_model(source if source == "arm26" else REPO / "urdf" / source)
    base = ["base_x", "base_y", "base_z", "base_qx", "base_qy", "base_qz", "base_qw"] if model.floating_base else []
    if source == "spherical":   # the column names of a simulated ball arm's Trajectory.position_names
        base += [f"{joint}_{c}" for joint in ("shoulder", "wrist") for c in ("qx", "qy", "qz", "qw")]
    names = base + list(model.joint_names)
    assert len(names) == model.n_config
    rng = np.random.default_rng(17)
    x0 = np.asarray(model.joint_configuration(model.neutral_configuration()), float)
    states = np.array([x0, x0 + 0.3 * rng.standard_normal(x0.shape)])
    for k, name in enumerate(names):   # unit quaternions
        if name.endswith("_qx"):
            states[:, k:k + 4] /= np.linalg.norm(states[:, k:k + 4], axis=1, keepdims=True)
    run = types.SimpleNamespace(t=np.array([0.0, 1.0]), positions=states, position_names=names)
    page = Path(export_html(model, run, tmp_path / "replay.html", fps=1.0)).read_text()
    data = json.loads(re.search(r'<script id="data" type="application/json">(.*?)</script>', page, re.S).group(1))
    assert data["times"] == [0.0, 1.0]
    from biobullet.render.scene import Scene
    drawn = sorted({v.link for v in Scene.from_model(model).visuals})   # the page's link order
    poses = np.asarray(data["poses"]).reshape(2, len(drawn), 12)
    bridge = Bridge(model)
    try:
        for k, x in enumerate(states):
            truth = _pybullet_link_frames(bridge, x)
            for j, name in enumerate(drawn):
                rotation, position = truth[name]
                np.testing.assert_allclose(poses[k, j, :9].reshape(3, 3), rotation, atol=6e-6, err_msg=name)
                np.testing.assert_allclose(poses[k, j, 9:], position, atol=6e-6, err_msg=name)
    finally:
        bridge.close()


def test_the_spectrum_of_a_run_that_diverged_is_refused() -> None:
    """A run whose signal turns NaN (or inf) at t = 7 s: `amplitude_spectrum` over [4, 10) returned NaN in every
    bin without a word. Over the finite part it still gives the closed form: sin(2πt) has amplitude 1 at f·T = 1."""
    t = np.linspace(0.0, 10.0, 1001)
    for bad in (np.nan, np.inf):
        y = np.sin(2 * np.pi * t)
        y[700:] = bad
        with pytest.raises(ValueError, match=r"not finite in the window \[4, 10\) \(first at t = 7;"):
            amplitude_spectrum(t, y, 1.0)
        frequency, amplitude = amplitude_spectrum(t, y, 1.0, t_end=6.0)
        assert abs(amplitude[np.argmin(np.abs(frequency - 1.0))] - 1.0) < 1e-12


def test_a_spectrum_map_with_a_diverged_row_names_it(tmp_path) -> None:
    """One NaN row (the run at k = 2 diverged): matplotlib's "Invalid vmin or vmax", naming nothing."""
    frequency = np.array([0.0, 0.5, 1.0])
    amplitudes = np.array([[1.0, 0.1, 0.2], [np.nan, np.nan, np.nan]])
    with pytest.raises(ValueError, match=r"amplitudes are not finite at parameter 2 \(row 1; 1 row\(s\) in all\)"):
        plot_spectrum_map([1.0, 2.0], frequency, amplitudes, tmp_path / "map.png")
    assert not (tmp_path / "map.png").exists()


def test_the_viewer_of_a_model_with_spherical_joints_turns_them_with_angle_sliders(tmp_path) -> None:
    """`biobullet view` of the ball arm (floating base, spherical shoulder and wrist) was a bare StopIteration:
    the sliders looked up a joint named "shoulder_qx". Now each spherical joint has roll/pitch/yaw sliders (deg,
    URDF rpy): moving them puts the upper arm where PyBullet puts it with the shoulder's quaternion from
    `getQuaternionFromEuler` of the same angles (float32 poses: 1e-6)."""
    pytest.importorskip("viser")
    import socket

    import viser.transforms as vtf

    from biobullet.render.viewer import Viewer
    from spherical_arms import ARM
    (tmp_path / "arm.urdf").write_text(ARM)
    model = biobullet.load_model(tmp_path / "arm.urdf", floating_base=True)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    viewer = Viewer(model, port=port)
    try:
        labels = [spec.label for spec in viewer.slider_specs]
        assert labels[6:] == ["shoulder_roll (deg)", "shoulder_pitch (deg)", "shoulder_yaw (deg)",
                              "wrist_roll (deg)", "wrist_pitch (deg)", "wrist_yaw (deg)", "elbow (deg)"]
        angles = {"shoulder_roll (deg)": 20.0, "shoulder_pitch (deg)": -35.0, "shoulder_yaw (deg)": 50.0}
        for slider, label in zip(viewer.sliders, labels):
            slider.value = angles.get(label, slider.value)
        viewer._from_sliders()   # what a slider's callback does
        q0, _ = model.initial_state()
        x = np.asarray(model.joint_configuration(q0), float)
        x[7:11] = p.getQuaternionFromEuler(np.radians(list(angles.values())))   # shoulder_qx … qw
        bridge = Bridge(model)
        try:
            rotation, position = _pybullet_link_frames(bridge, x)["upper"]
        finally:
            bridge.close()
        handle = viewer._links["upper"]
        np.testing.assert_allclose(vtf.SO3(np.array(handle.wxyz)).as_matrix(), rotation, atol=1e-6)
        np.testing.assert_allclose(np.array(handle.position), position, atol=1e-6)
    finally:
        viewer.close()


def test_a_figure_to_a_file_matplotlib_cannot_write_is_one_error(tmp_path) -> None:
    """`Trajectory.plot(path="run.xyz")` and the analysis/sweep plots (`core.atomic.save_figure`) raised
    matplotlib's "ValueError: Format 'xyz' is not supported"; `plot(columns=[])` drew an empty figure with
    matplotlib's "No artists with labels" warning. Now one BiobulletError each, and no file."""
    from biobullet.core.errors import BiobulletError
    from biobullet.integrate.trajectory import Trajectory
    t = np.linspace(0.0, 1.0, 11)
    run = Trajectory(t=t, position_names=("j1",), velocity_names=("j1",), positions=np.sin(t)[:, None],
                     velocities=np.cos(t)[:, None])
    with pytest.raises(BiobulletError, match=r"run\.xyz': matplotlib has no format 'xyz' \(use .*png"):
        run.plot(path=tmp_path / "run.xyz")
    with pytest.raises(ModelError, match="columns is empty: nothing to plot"):
        run.plot(columns=[])
    with pytest.raises(BiobulletError, match=r"map\.xyz': matplotlib has no format 'xyz'"):
        plot_spectrum_map([1.0, 2.0], np.array([0.0, 0.5, 1.0]), np.ones((2, 3)), tmp_path / "map.xyz")
    assert not list(tmp_path.iterdir())
    assert run.plot(path=tmp_path / "run.PNG") and (tmp_path / "run.PNG").read_bytes()[:4] == b"\x89PNG"


PLANAR = """<robot name="sled">
  <link name="ground"/>
  <link name="puck"><inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/>
    </inertial><visual><geometry><box size="0.2 0.1 0.05"/></geometry></visual></link>
  <joint name="slide" type="planar"><parent link="ground"/><child link="puck"/><axis xyz="0 0 1"/></joint>
</robot>
"""


def test_a_planar_joint_has_x_y_angle_sliders_and_replays_at_unit_length(tmp_path) -> None:
    """A planar joint (q = x, y, cos, sin): the sliders were a StopIteration (no joint "slide_x"); now x, y (m)
    and angle (deg), 90° giving (cos, sin) = (0, 1). Replayed halfway between 0° and 90°, the interpolated
    (cos, sin) is brought back to unit length: the puck is turned by exactly 45° (closed form)."""
    from biobullet.render.scene import Scene, trajectory_states
    from biobullet.render.viewer import q_from_sliders, slider_specs
    (tmp_path / "sled.urdf").write_text(PLANAR)
    model = biobullet.load_model(tmp_path / "sled.urdf")
    specs = slider_specs(model)
    assert [spec.label for spec in specs] == ["slide_x (m)", "slide_y (m)", "slide_angle (deg)"]
    np.testing.assert_allclose(q_from_sliders(model, [0.1, 0.2, 90.0], specs), [0.1, 0.2, 0.0, 1.0], atol=1e-15)
    run = types.SimpleNamespace(t=np.array([0.0, 1.0]), positions=np.array([[0.0, 0.0, 1.0, 0.0],
                                                                              [0.5, 0.0, 0.0, 1.0]]),
                                position_names=("slide_x", "slide_y", "slide_cos", "slide_sin"))
    x = trajectory_states(model, run, np.array([0.5]))[0]
    rotation, position = Scene.from_model(model).link_placements(x)["puck"]
    c = np.sqrt(0.5)
    np.testing.assert_allclose(rotation, [[c, -c, 0.0], [c, c, 0.0], [0.0, 0.0, 1.0]], atol=1e-12)
    np.testing.assert_allclose(position, [0.25, 0.0, 0.0], atol=1e-12)


def test_a_gif_above_50_fps_still_plays_in_real_time(tmp_path) -> None:
    """100 frames at 1000 fps (0.1 s): each GIF delay was stored as 0/100 s, which browsers play at 10 fps — the
    clip ran 100× slow. Read back by Pillow: every delay is ≥ 2/100 s (the shortest browsers honour) and the
    delays add up to the clip's 100 ms."""
    from PIL import Image
    frames = [np.full((16, 16, 3), 2 * k, np.uint8) for k in range(100)]
    with Image.open(write_video(frames, tmp_path / "fast.gif", 1000.0)) as gif:
        delays = []
        for k in range(gif.n_frames):
            gif.seek(k)
            delays.append(gif.info.get("duration", 0))
    assert min(delays) >= 20 and sum(delays) == 100, delays


def test_the_poincare_section_of_a_run_that_diverged_names_the_time() -> None:
    """sin(2πt) turning NaN at t = 7 s: `poincare_samples(..., method="linear")` returned NaN sections without a
    word (and "cubic" SciPy's "`y` must contain only finite values", naming no time). Sections before the
    divergence are still the closed form sin(2πn) = 0."""
    from biobullet.analysis.poincare import poincare_samples
    t = np.linspace(0.0, 10.0, 1001)
    y = np.sin(2 * np.pi * t)
    y[700:] = np.nan
    for method in ("linear", "cubic"):
        with pytest.raises(ValueError, match=r"y is not finite at t = 7 \(a run that diverged"):
            poincare_samples(t, y, 1.0, method=method)
    times, values = poincare_samples(t, y, 1.0, t_end=6.5, method="linear")
    np.testing.assert_allclose(times, np.arange(7.0))
    np.testing.assert_allclose(values, 0.0, atol=1e-12)


def test_render_frames_of_a_model_with_flexible_links_uses_the_bridge_model() -> None:
    """The elastic robot (three <flexible> links): its bridge loads the model expanded into rigid segments, and the
    frames are posed from that model's configuration (straight segments for a run of the rigid model): 1 s at
    2 fps is 3 frames, and the arm has moved between the first and the last."""
    model = biobullet.load_model(REPO / "urdf" / "elastic_robot_3link.urdf")
    run = types.SimpleNamespace(t=np.array([0.0, 1.0]), position_names=model.joint_names,
                                positions=np.array([np.zeros(model.n_config), np.full(model.n_config, 0.5)]))
    frames = render_frames(model, run, width=160, height=120, fps=2.0, overlay=False, shadows=False)
    assert len(frames) == 3
    changed = (np.abs(frames[0].astype(int) - frames[-1].astype(int)).max(axis=2) > 40).mean()
    assert changed > 0.002, changed   # a thin arm (1.25 cm links) in a frame fitted to its whole sweep


def test_a_sweep_result_named_like_a_parameter_keeps_both_in_summary_csv(tmp_path) -> None:
    """A point function returning "value" (here 9.5) for the parameter "value" = 3: summary.csv had two "value"
    columns, both 9.5 — the swept parameter was lost. Now the result is the column "result:value"."""
    import csv

    from biobullet.sweep.config import load_config
    from biobullet.sweep.store import write_summaries
    config = load_config({"name": "clash", "function": "demo.sleep", "fixed": {"duration": 0.0},
                          "sweep": [{"path": "value", "values": [3.0]}]})
    record = {"id": "p1", "status": "ok", "params": {"duration": 0.0, "value": 3.0},
              "result": {"value": 9.5, "square": 9.0, "duration": 0.25}, "error": None}
    csv_path, _ = write_summaries(tmp_path, config, [record], {})
    with open(csv_path, newline="") as handle:
        rows = list(csv.reader(handle))
    assert rows[0] == ["id", "status", "value", "duration", "result:value", "square", "result:duration", "error"]
    assert rows[1] == ["p1", "ok", "3.0", "0.0", "9.5", "9.0", "0.25", ""]
