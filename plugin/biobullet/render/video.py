"""Frames → MP4 (imageio-ffmpeg, H.264, yuv420p) or GIF, written to a temporary file and renamed (atomic)."""
from __future__ import annotations

import os

import numpy as np

from biobullet.core.atomic import atomic_write
from biobullet.core.errors import ModelError

FORMATS = (".mp4", ".gif")
GIF_MAX_FPS = 50.0   # a GIF delay of 2/100 s: the shortest one browsers honour


def check_fps(fps) -> float:
    """`fps` (frames per second) as a float; a ModelError naming the argument unless a finite positive number
    (a string or None was a bare TypeError from numpy)."""
    if isinstance(fps, bool) or not isinstance(fps, (int, float, np.integer, np.floating)) \
            or not np.isfinite(fps) or fps <= 0:
        raise ModelError(f"argument 'fps' is {fps!r}", attribute="fps", expected="a positive number")
    return float(fps)


def _is_path(value) -> bool:
    return isinstance(value, (str, bytes, os.PathLike))


def write_video(frames, path, fps: float = 30) -> str:
    """Write `frames` (sequence of H×W×3 uint8, all the same size) to `path` (.mp4 or .gif); returns the path.

    Picture writers take the pixels first, then the path: `write_video(frames, path, fps)`,
    `write_png(image, path)`; the swapped order is a TypeError saying so.

    MP4: H.264 at `fps`; odd frame sizes are padded by one pixel (yuv420p needs even sizes). GIF: one frame
    per 1/fps s (GIF stores delays in 1/100 s, so fps is rounded to that); above GIF_MAX_FPS only every k-th
    frame is kept, so that the clip still plays in real time.
    """
    if _is_path(frames) and not _is_path(path):
        raise TypeError("write_video(frames, path, fps): the frames come first, then the path")
    path = os.fspath(path)
    extension = os.path.splitext(path)[1].lower()
    if extension not in FORMATS:
        raise ModelError(f"cannot write {path!r}", attribute="path", expected="a file name ending in .mp4 or .gif")
    fps = check_fps(fps)
    frames = [np.asarray(f) for f in frames]
    if not frames:
        raise ModelError("no frames to write", attribute="frames")
    shape = frames[0].shape
    if len(shape) != 3 or shape[2] != 3 or any(f.shape != shape for f in frames):
        raise ModelError("frames differ in size or are not H×W×3", attribute="frames",
                         expected="equal-size H×W×3 uint8 images")
    frames = [np.asarray(f, dtype=np.uint8) for f in frames]
    def write(tmp: str) -> None:
        if extension == ".mp4":
            _write_mp4(frames, tmp, fps)
        else:
            import imageio.v2 as imageio
            # a delay under 2/100 s is stored as 0 or 1 and browsers play it at 10 fps: a 1000 fps clip ran 100×
            # slow; keeping every step-th frame keeps the clip's duration
            step = int(np.ceil(fps / GIF_MAX_FPS - 1e-9))
            imageio.mimsave(tmp, frames[::step], format="GIF", duration=1000.0 * step / fps, loop=0)
    atomic_write(path, write, keep_suffix=True)   # ffmpeg picks the container from the name
    return path


def write_png(image, path) -> str:
    """One H×W×3 uint8 image as an optimised PNG, written atomically; returns the path (pixels first, like
    `write_video`; the swapped order is a TypeError saying so)."""
    from PIL import Image
    if _is_path(image) and not _is_path(path):
        raise TypeError("write_png(image, path): the image comes first, then the path (as in write_video)")
    image = np.asarray(image)
    if image.ndim != 3 or image.shape[2] != 3:
        raise ModelError(f"image has shape {image.shape}", attribute="image", expected="an H×W×3 uint8 image")
    atomic_write(path, lambda tmp: Image.fromarray(np.asarray(image, np.uint8)).save(tmp, format="PNG",
                                                                                    optimize=True))
    return os.fspath(path)


def side_by_side(panels, *, gap: int = 4) -> list[np.ndarray]:
    """Frame lists (one per panel, each rendered at the same instants) → one list of frames with the panels next
    to each other, separated by `gap` white pixels. Panels must have the same number of frames (that is what
    keeps them in sync) and the same height."""
    panels = [list(panel) for panel in panels]
    if not panels or any(len(panel) != len(panels[0]) for panel in panels):
        raise ModelError(f"panels have {[len(panel) for panel in panels]} frames", attribute="panels",
                         expected="the same number of frames in every panel (rendered at the same times)")
    if any(frame.shape[0] != panels[0][0].shape[0] for panel in panels for frame in panel):
        raise ModelError("panels differ in height", attribute="panels", expected="equal-height frames")
    out = []
    for frames in zip(*panels):
        separator = np.full((frames[0].shape[0], gap, 3), 255, np.uint8)
        pieces = [frames[0]]
        for frame in frames[1:]:
            pieces += [separator, frame]
        out.append(np.hstack(pieces))
    return out


def _write_mp4(frames: list[np.ndarray], path: str, fps: float) -> None:
    import imageio.v2 as imageio
    height, width = frames[0].shape[:2]
    pad = ((0, height % 2), (0, width % 2), (0, 0))
    writer = imageio.get_writer(path, format="FFMPEG", mode="I", fps=fps, codec="libx264",
                                pixelformat="yuv420p", macro_block_size=1, quality=8,
                                ffmpeg_log_level="error")
    try:
        for frame in frames:
            writer.append_data(np.pad(frame, pad, mode="edge") if any(p[1] for p in pad) else frame)
    finally:
        writer.close()
