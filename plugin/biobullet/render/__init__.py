"""biobullet.render: offscreen frames of a model moving along a trajectory (PyBullet TinyRenderer) and video files.

`render_frames(bridge_or_model, trajectory, width=640, height=480, fps=30, camera=None)` → list of H×W×3 uint8;
`write_video(frames, path, fps=30)` → MP4 (imageio-ffmpeg, H.264) or GIF, written atomically; `side_by_side`
composes panels rendered at the same instants; `coverage(frame, background)` measures how much of a frame the
model takes (the framing rule of the studies' videos: ≥ 8 % of the pixels, bounding box ≥ 25 % of each panel). `export_html(model, trajectory, "out.html")`: a self-contained replay
page. The browser viewer is `render.viewer` (`biobullet view`), the geometry both share `render.scene`.
"""
from __future__ import annotations

from biobullet.core.lazy import lazy_attributes

__all__ = ["Camera", "Coverage", "coverage", "render_frames", "write_video", "frame_camera", "fit_camera", "motion_points", "choose_direction",
           "side_by_side", "write_png", "export_html"]


__getattr__ = lazy_attributes(__name__, {
    **dict.fromkeys(("render_frames", "Camera", "Coverage", "coverage", "frame_camera", "fit_camera", "motion_points",
                     "choose_direction"), ".frames"),
    **dict.fromkeys(("write_video", "side_by_side", "write_png"), ".video"),
    "export_html": ".html"})
