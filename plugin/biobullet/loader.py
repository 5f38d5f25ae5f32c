"""`load_model`: a model file → a Model whose every element has been checked.

Assembly (`biobullet.dynamics.api.build_model`) plus the parse of every element family the file uses (force
elements, contacts, flexible links: `integrate.checks.check_elements`), so `info` and `validate` reject what
`simulate` would.
"""
from __future__ import annotations

import os

from biobullet.dynamics.api import model_from_file
from biobullet.integrate.checks import check_elements
from biobullet.model.model import Model


def load_model(path: str | os.PathLike[str], floating_base: bool | None = None, *,
               inertia: str = "warn", joint_limits: bool = True) -> Model:
    """Load a URDF file with its optional `<biobullet>` block into a Model.

    `path`: a file, or the bare name of a bundled model ("shoulder_rhythm", "arm7": no folder, no suffix;
    `biobullet.model.bundled.bundled_names()` lists them). `floating_base` overrides the file's
    `<base type=...>`. `inertia`: what to do with physically impossible inertia tensors — "warn" (keep, as
    Pinocchio does, with one warning), "repair" (nearest physical tensor), "strict" (reject); see
    `biobullet.model.urdf.INERTIA_POLICIES`. `joint_limits`: the URDF `<limit>`s of revolute and prismatic
    joints act as stiff joint stops on both engines, as in PyBullet (default); False ignores them
    (`biobullet.forces.elements.limit_stops`). Raises ModelError (naming file, element and attribute) on bad
    input, TypeError naming the argument for an argument of the wrong type.
    """
    return check_elements(model_from_file(path, floating_base, inertia=inertia, joint_limits=joint_limits))


__all__ = ["load_model"]
