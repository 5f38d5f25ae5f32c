"""Offscreen rendering (TinyRenderer in DIRECT mode) and video files."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pybullet")

import biobullet  # noqa: E402
from biobullet.bridge import Bridge  # noqa: E402
from biobullet.bridge.simulation import simulate_bridge  # noqa: E402
from biobullet.core.errors import ModelError  # noqa: E402
from biobullet.render import render_frames, write_video  # noqa: E402
from biobullet.render.frames import frame_camera  # noqa: E402

REPO = Path(__file__).resolve().parents[3]
FPS = 20


@pytest.fixture(scope="module")
def shoulder():
    return biobullet.load_model(REPO / "urdf" / "shoulder_rhythm.urdf")


@pytest.fixture(scope="module")
def swing(shoulder):
    return simulate_bridge(shoulder, 0.5, 2e-3)


@pytest.fixture(scope="module")
def frames(shoulder, swing):
    return render_frames(shoulder, swing, width=160, height=120, fps=FPS)


def test_frames_cover_the_trajectory_at_fps(frames, swing):
    assert len(frames) == int(round(swing.t[-1] * FPS)) + 1 == 11
    assert all(f.shape == (120, 160, 3) and f.dtype == np.uint8 for f in frames)


def test_frames_are_not_blank_and_the_arm_moves(frames):
    for frame in frames:
        assert frame.astype(float).std() > 10.0  # a blank (uniform) frame has std 0
        assert (frame.min(axis=2) < 200).mean() > 0.01  # at least 1 % of pixels are not background
    first, last = frames[0].astype(int), frames[-1].astype(int)
    body = first[30:, :]  # below the time overlay
    changed = np.abs(first[30:, :] - last[30:, :]).max(axis=2) > 40
    assert changed.mean() > 0.005, "the arm region does not change between the first and last frame"
    assert body.std() > 10.0


def test_time_overlay_is_drawn(shoulder, swing):
    plain = render_frames(shoulder, swing, width=160, height=120, fps=FPS, overlay=False)[0]
    marked = render_frames(shoulder, swing, width=160, height=120, fps=FPS, overlay=True)[0]
    corner = np.abs(plain[:20, :80].astype(int) - marked[:20, :80].astype(int)).max(axis=2)
    assert (corner > 100).sum() > 20
    np.testing.assert_array_equal(plain[60:], marked[60:])


def test_render_restores_the_bridge_state(shoulder, swing):
    with Bridge(shoulder) as bridge:
        bridge.step()
        before = bridge.state()
        render_frames(bridge, swing, width=64, height=48, fps=5)
        after = bridge.state()
    np.testing.assert_array_equal(before[1], after[1])
    np.testing.assert_array_equal(before[2], after[2])


def test_camera_frames_a_box():
    camera = frame_camera([-1, -1, -1], [1, 1, 1], [0, 0, -9.81], fov=40)
    assert np.allclose(camera.target, 0) and np.isclose(np.linalg.norm(camera.direction), 1)
    assert camera.distance * np.sin(np.radians(20)) >= np.sqrt(3)  # the bounding sphere fits the fov
    moved = frame_camera([-1, -1, -1], [1, 1, 1], [0, 0, -9.81], target=(0, 0, 2))
    assert moved.target == (0, 0, 2)
    with pytest.raises(ModelError, match="camera"):
        frame_camera([0, 0, 0], [1, 1, 1], [0, 0, -1], zoom=2)


def test_mp4_reads_back_with_the_right_frame_count(frames, tmp_path):
    import imageio.v2 as imageio
    path = write_video(frames, tmp_path / "swing.mp4", fps=FPS)
    reader = imageio.get_reader(path)
    try:
        decoded = [frame for frame in reader]
        assert reader.get_meta_data()["fps"] == pytest.approx(FPS)
    finally:
        reader.close()
    assert len(decoded) == len(frames)
    assert decoded[0].shape == frames[0].shape
    assert np.abs(decoded[5].astype(float) - frames[5]).mean() < 8.0  # lossy, but the same picture
    assert sorted(p.name for p in tmp_path.iterdir()) == ["swing.mp4"]  # atomic: no temporary left


def test_gif_and_odd_sizes(frames, tmp_path):
    import imageio.v2 as imageio
    gif = write_video(frames, tmp_path / "swing.gif", fps=FPS)
    assert len(imageio.mimread(gif)) == len(frames)
    odd = [f[:119, :159] for f in frames[:3]]
    reader = imageio.get_reader(write_video(odd, tmp_path / "odd.mp4", fps=FPS))
    assert reader.count_frames() == 3
    reader.close()


@pytest.mark.parametrize("args, argument", [
    (dict(frames=[], path="a.mp4"), "frames"),
    (dict(path="a.avi"), "path"),
    (dict(path="a.mp4", fps=0), "fps"),
])
def test_write_video_bad_input(frames, tmp_path, args, argument):
    args = dict(frames=frames, **args) if "frames" not in args else args
    args["path"] = tmp_path / args["path"]
    with pytest.raises(ModelError) as info:
        write_video(args.pop("frames"), args.pop("path"), **args)
    assert info.value.attribute == argument


def test_render_bad_input(shoulder, swing):
    with pytest.raises(ModelError, match="bridge_or_model"):
        render_frames("shoulder.urdf", swing)
    with pytest.raises(ModelError, match="width"):
        render_frames(shoulder, swing, width=4)
