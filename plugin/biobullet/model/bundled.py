"""Paths of the bundled model files (`urdf/` in a source checkout, `biobullet/data/urdf` in an installed wheel)."""
from __future__ import annotations

import os
from pathlib import Path

from biobullet.core.errors import ModelError, did_you_mean


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


def bundled_osim_models() -> list[str]:
    """Every bundled OpenSim `.osim` file (`biobullet/data/opensim`: the shared OpenSim corpus, credits in its
    README), sorted."""
    return sorted(str(p) for p in (Path(__file__).resolve().parents[1] / "data" / "opensim").glob("*.osim"))


def bundled_names() -> list[str]:
    """The names of the bundled models (file names without `.urdf` / `.osim`), sorted: `load_model("arm7")` and
    `load_model("arm26")` (an OpenSim model) load one."""
    return sorted(Path(path).stem for path in bundled_models() + bundled_osim_models())


def is_bare_name(path: str) -> bool:
    """A name without a folder or suffix ("shoulder_rhythm"): what `resolve_model_path` looks up as bundled."""
    return bool(path) and os.sep not in path and "/" not in path and (os.altsep or "/") not in path \
        and not Path(path).suffix


def resolve_model_path(path: object, argument: str = "path") -> str:
    """The file behind `load_model`'s first argument: an existing path as given, a bare name ("shoulder_rhythm",
    no folder, no suffix) the bundled model of that name. An unknown bare name is a ModelError listing the
    bundled names with the nearest one; anything but a str or os.PathLike is a ModelError naming the argument."""
    if not isinstance(path, (str, os.PathLike)):
        raise ModelError(f"must be a model file path (str or os.PathLike) or a bundled model name such as "
                         f"'shoulder_rhythm', not {type(path).__name__}", argument=argument)
    file = os.fspath(path)
    if not isinstance(file, str):
        raise ModelError(f"must be a text path, not {type(file).__name__}", argument=argument)
    if os.path.exists(file) or not is_bare_name(file):
        return file
    names = bundled_names()
    if file in names:
        osim = {Path(path).stem: path for path in bundled_osim_models()}
        return osim[file] if file in osim else bundled_model(file + ".urdf")
    raise ModelError(f"no file and no bundled model named {file!r}{did_you_mean(file, names)}", argument=argument,
                     expected="a model file path, or one of the bundled models " + ", ".join(names))
