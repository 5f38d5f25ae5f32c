"""Paths of the bundled model files (`urdf/` in a source checkout, `biobullet/data/urdf` in an installed wheel)."""
from __future__ import annotations

from pathlib import Path

from biobullet.core.errors import ModelError


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
    """Every bundled `.urdf` file, sorted."""
    folder = Path(bundled_model("arm7.urdf")).parent
    return sorted(str(p) for p in folder.glob("*.urdf"))
