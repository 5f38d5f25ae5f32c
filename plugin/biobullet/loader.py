"""`load_model`: a model file → a Model whose every element has been checked.

Assembly (`biobullet.dynamics.api.build_model`) plus the parse of every element family the file uses (force
elements, contacts, flexible links: `integrate.checks.check_elements`), so `info` and `validate` reject what
`simulate` would.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

from biobullet.core.arguments import flag_argument
from biobullet.core.errors import ModelError
from biobullet.core.atomic import write_text
from biobullet.dynamics.api import model_from_file
from biobullet.integrate.checks import check_elements
from biobullet.model.bundled import resolve_model_path
from biobullet.model.model import Model
from biobullet.opensim import OSIM_SUFFIX, load_osim


def load_model(path: str | os.PathLike[str], floating_base: bool | None = None, *,
               inertia: str = "warn", joint_limits: bool = True, strict: bool = False) -> Model:
    """Load a URDF file with its optional `<biobullet>` block (or an OpenSim `.osim` model, translated by
    `biobullet.opensim`) into a Model.

    `path`: a file, or the bare name of a bundled model ("shoulder_rhythm", "arm7": no folder, no suffix;
    `biobullet.model.bundled.bundled_names()` lists them). `floating_base` overrides the file's
    `<base type=...>`. `inertia`: what to do with physically impossible inertia tensors — "warn" (keep, as
    Pinocchio does, with one warning), "repair" (nearest physical tensor), "strict" (reject); see
    `biobullet.model.urdf.INERTIA_POLICIES`. `joint_limits`: the URDF `<limit>`s of revolute and prismatic
    joints act as stiff joint stops on both engines, as in PyBullet (default); False ignores them
    (`biobullet.forces.elements.limit_stops`). An OpenSim model's coordinate ranges never act (OpenSim's dynamics
    does not enforce them: its CoordinateLimitForces do). `strict` (.osim only): refuse a model with components
    the importer cannot represent (otherwise each is reported by a warning). Raises ModelError (naming file,
    element and attribute) on bad input, or naming the argument for an argument of the wrong type.
    """
    strict = flag_argument(strict, "strict")
    floating_base = flag_argument(floating_base, "floating_base", optional=True)
    joint_limits = flag_argument(joint_limits, "joint_limits")
    path = resolve_model_path(path)   # a bare name: the bundled model (.urdf or .osim) of that name
    if path.lower().endswith(OSIM_SUFFIX):
        if floating_base:
            raise ModelError("an OpenSim model's ground is fixed (its free bodies float through their joints)",
                             argument="floating_base", expected="None or False for an .osim file")
        return load_osim(path, strict=strict, inertia=inertia)
    return check_elements(model_from_file(path, floating_base, inertia=inertia, joint_limits=joint_limits))


def load_text(text: str, folder: str | Path | None = None, name: str = "contact_model.urdf") -> Model:
    """Write model-file text to `folder` (default: a new temporary folder) and load it (test models, e.g.
    `contact.testbed`'s)."""
    folder = Path(folder) if folder is not None else Path(tempfile.mkdtemp(prefix="biobullet_contact_"))
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    write_text(path, text)
    return load_model(path)


__all__ = ["load_model", "load_text"]
