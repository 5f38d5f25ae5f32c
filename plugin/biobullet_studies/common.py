"""Small helpers shared by scenarios: bundled model paths, atomic writes, progress messages."""
from __future__ import annotations

import os
import sys

import numpy as np

from biobullet.core import atomic
from biobullet.model.bundled import bundled_model, bundled_models  # noqa: F401  (re-exported for the studies)


def write_atomic(path: str | os.PathLike[str], data: str | bytes) -> None:
    """Write a file so that readers never see a half-written one (see `biobullet.core.atomic`)."""
    if isinstance(data, bytes):
        atomic.write_bytes(path, data)
    else:
        atomic.write_text(path, data)


def write_json(path: str | os.PathLike[str], payload: dict) -> None:
    atomic.write_json(path, payload)


def save_figure(figure, path: str | os.PathLike[str], dpi: int = 120) -> None:
    """Save a matplotlib figure atomically (tight bounding box)."""
    atomic.save_figure(figure, path, dpi=dpi, bbox_inches="tight")


def motion_limits(points, margin: float = 0.06) -> list[tuple[float, float]]:
    """Axis limits holding every point (n×d, m) of a video's WHOLE motion, so all its frames share one view framed
    on the motion (not on the first frame, and not on fixed numbers): per axis [min − margin·L, max + margin·L],
    L = the largest extent (3D axes: set the box aspect to the spans for one scale on every axis)."""
    points = np.asarray(points, float).reshape(-1, np.shape(points)[-1])
    points = points[np.all(np.isfinite(points), axis=1)]
    low, high = points.min(axis=0), points.max(axis=0)
    extent = max(float((high - low).max()), 1e-6)
    return [(float(lo - margin * extent), float(hi + margin * extent)) for lo, hi in zip(low, high)]


def save_plot(fig, ax, path: str | os.PathLike[str], xlabel: str, ylabel: str, title: str) -> None:
    """Label a one-axes line plot (legend, small title), save it atomically and close it."""
    import matplotlib.pyplot as plt
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=8)
    ax.set_title(title, fontsize=9)
    save_figure(fig, path)
    plt.close(fig)


def planar_frame(fig, ax, limits, title: str, fontsize: int) -> np.ndarray:
    """One video frame of a planar motion: `ax` on the whole motion's `limits` (`motion_limits`), one scale on both
    axes, titled; the figure's RGB pixels."""
    (x_low, x_high), (y_low, y_high) = limits
    ax.set_xlim(x_low, x_high)
    ax.set_ylim(y_low, y_high)
    ax.set_aspect("equal")
    ax.set_title(title, fontsize=fontsize)
    return figure_pixels(fig)


def figure_pixels(fig) -> np.ndarray:
    """The figure drawn, as an RGB image (height × width × 3, uint8): a video frame."""
    fig.canvas.draw()
    return np.asarray(fig.canvas.buffer_rgba())[:, :, :3].copy()


def say(message: str) -> None:
    """Progress line on stderr (stdout stays clean for --json)."""
    print(message, file=sys.stderr, flush=True)


def simulated_time(seconds: float | None, reason: str | None = None) -> dict:
    """The summary entries from which `biobullet run` reports a real-time factor (simulated / wall seconds):
    `simulated_seconds` = the total simulated time (s) the study's runs integrate, or None for a study that is not
    a simulation, with `simulated_seconds_reason` saying why. Every study's summary carries them."""
    if seconds is None:
        if not reason:
            raise ValueError("a study without simulated time must say why (reason)")
        return {"simulated_seconds": None, "simulated_seconds_reason": reason}
    return {"simulated_seconds": float(seconds)}
