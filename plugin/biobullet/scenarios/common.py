"""Small helpers shared by scenarios: bundled model paths, atomic writes, progress messages."""
from __future__ import annotations

import os
import sys
from pathlib import Path

from .. import atomic
from ..errors import ModelError


def bundled_model(name: str) -> str:
    """Path of a bundled model file (`urdf/NAME` in a source checkout, or the package data `biobullet/data/urdf`
    of an installed wheel — a symbolic link to `urdf/` in the checkout, copied by the wheel build)."""
    here = Path(__file__).resolve()
    for candidate in (here.parents[3] / "urdf" / name, here.parents[1] / "data" / "urdf" / name):
        if candidate.is_file():
            return str(candidate)
    raise ModelError(f"bundled model {name!r} not found",
                     expected="a file in the repository's urdf/ folder or the package's data/urdf")


def bundled_models() -> list[str]:
    folder = Path(bundled_model("arm7.urdf")).parent
    return sorted(str(p) for p in folder.glob("*.urdf"))


def write_atomic(path: str | os.PathLike[str], data: str | bytes) -> None:
    """Write a file so that readers never see a half-written one (see `biobullet.atomic`)."""
    if isinstance(data, bytes):
        atomic.write_bytes(path, data)
    else:
        atomic.write_text(path, data)


def write_json(path: str | os.PathLike[str], payload: dict) -> None:
    atomic.write_json(path, payload)


def save_figure(figure, path: str | os.PathLike[str], dpi: int = 120) -> None:
    """Save a matplotlib figure atomically (tight bounding box)."""
    atomic.save_figure(figure, path, dpi=dpi, bbox_inches="tight")


def say(message: str) -> None:
    """Progress line on stderr (stdout stays clean for --json)."""
    print(message, file=sys.stderr, flush=True)
