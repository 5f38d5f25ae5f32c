"""Small helpers shared by scenarios: bundled model paths, atomic writes, progress messages."""
from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

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
    """Write a file so that readers never see a half-written one (temp file + rename)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = "wb" if isinstance(data, bytes) else "w"
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, mode) as handle:
            handle.write(data)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_json(path: str | os.PathLike[str], payload: dict) -> None:
    write_atomic(path, json.dumps(payload, indent=2, default=float) + "\n")


def save_figure(figure, path: str | os.PathLike[str], dpi: int = 120) -> None:
    """Save a matplotlib figure atomically."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=path.suffix)
    os.close(fd)
    try:
        figure.savefig(tmp, dpi=dpi, bbox_inches="tight")
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def say(message: str) -> None:
    """Progress line on stderr (stdout stays clean for --json)."""
    print(message, file=sys.stderr, flush=True)
