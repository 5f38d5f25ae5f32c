"""biobullet.render: offscreen frames of a model moving along a trajectory (PyBullet TinyRenderer) and video files.

`render_frames(bridge_or_model, trajectory, width=640, height=480, fps=30, camera=None)` → list of H×W×3 uint8;
`write_video(frames, path, fps=30)` → MP4 (imageio-ffmpeg, H.264) or GIF, written atomically.
"""
from __future__ import annotations

__all__ = ["Camera", "render_frames", "write_video", "frame_camera"]


def __getattr__(name: str):
    if name in ("render_frames", "Camera", "frame_camera"):
        from biobullet.render import frames
        return getattr(frames, name)
    if name == "write_video":
        from biobullet.render.video import write_video
        return write_video
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
