"""Muscle paths in the pictures: a video frame (TinyRenderer + the paths drawn over it) shows each muscle in its
activation colour where its path projects; the HTML replay carries the paths and colours per frame."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pybullet")

import biobullet  # noqa: E402
import biobullet.muscles as muscles  # noqa: E402
from biobullet.bridge.simulation import simulate_bridge  # noqa: E402
from biobullet.render import render_frames  # noqa: E402
from biobullet.render.frames import Camera  # noqa: E402
from biobullet.render.scene import MUSCLE_ACTIVE, MUSCLE_RESTING  # noqa: E402

REPO = Path(__file__).resolve().parents[3]
DELTOID = """<muscle name="DELT2" max_isometric_force="1000" optimal_fiber_length="0.11" tendon_slack_length="0.03">
  <point link="scapula" xyz="-0.010 0.000 0.025"/>
  <point link="humerus" xyz="0.005 -0.100 0.015"/>
  <wrap name="head" type="sphere" link="humerus" xyz="0 0 0" radius="0.025" quadrant="+z"/>
</muscle>
"""


@pytest.fixture(scope="module")
def shoulder(tmp_path_factory):
    text = (REPO / "urdf" / "shoulder_rhythm.urdf").read_text().replace("</biobullet>", DELTOID + "</biobullet>")
    path = tmp_path_factory.mktemp("muscle") / "shoulder_deltoid.urdf"
    path.write_text(text)
    return biobullet.load_model(path)


def _pixel(point, camera: Camera, width: int, height: int) -> tuple[int, int]:
    """Where a world point lands: OpenGL look-at and perspective written out here (not PyBullet's matrices)."""
    forward = np.asarray(camera.target) - camera.eye
    forward /= np.linalg.norm(forward)
    side = np.cross(forward, camera.up)
    side /= np.linalg.norm(side)
    up = np.cross(side, forward)
    relative = np.asarray(point) - camera.eye
    x, y, depth = relative @ side, relative @ up, relative @ forward
    focal = 1.0 / np.tan(np.radians(camera.fov) / 2)
    ndc_x, ndc_y = focal * x / (depth * width / height), focal * y / depth
    return int((ndc_x + 1) * 0.5 * width), int((1 - ndc_y) * 0.5 * height)


def test_a_frame_shows_the_muscle_in_its_activation_colour(shoulder):
    swing = simulate_bridge(shoulder, 0.02, 2e-3)
    x = shoulder.joint_configuration(swing.q[0])
    polyline = muscles.path_polylines(shoulder, x)[0]
    segment = int(np.argmax(np.linalg.norm(np.diff(polyline, axis=0), axis=1)))
    middle = 0.5 * (polyline[segment] + polyline[segment + 1])
    camera = Camera(target=tuple(middle), distance=0.6, direction=(0.0, 0.3, 1.0) / np.linalg.norm([0, 0.3, 1]),
                    up=(0.0, 1.0, 0.0), fov=40.0)
    width, height = 320, 240
    column, row = _pixel(middle, camera, width, height)
    assert (column, row) == (width // 2, height // 2)   # the target is the image centre (sanity of the oracle)
    colours = {}
    for activation in (0.0, 1.0):
        frame = render_frames(shoulder, swing, width=width, height=height, fps=10, camera=camera, overlay=False,
                              ground=False, shadows=False, muscle_activations=activation)[0]
        window = frame[row - 1:row + 2, column - 1:column + 2].reshape(-1, 3).astype(int)
        colours[activation] = window
    for activation, expected in ((0.0, MUSCLE_RESTING), (1.0, MUSCLE_ACTIVE)):
        target = np.round(255 * np.asarray(expected)).astype(int)
        assert np.min(np.abs(colours[activation] - target).sum(axis=1)) <= 3, (activation, colours[activation])
