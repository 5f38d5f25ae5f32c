"""`load_model`: a model file → a Model whose every element has been checked.

Assembly (`biobullet.dynamics.api.build_model`) plus the parse of every element family the file uses (force
elements, contacts, flexible links: `integrate.checks.check_elements`), so `info` and `validate` reject what
`simulate` would.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

from biobullet.core.atomic import write_text
from biobullet.dynamics.api import model_from_file
from biobullet.integrate.checks import check_elements
from biobullet.model.model import Model


def load_model(path: str | os.PathLike[str], floating_base: bool | None = None, *,
               inertia: str = "warn") -> Model:
    """Load a URDF file with its optional `<biobullet>` block into a Model.

    `floating_base` overrides the file's `<base type=...>`. `inertia`: what to do with physically impossible
    inertia tensors — "warn" (keep, as Pinocchio does, with one warning), "repair" (nearest physical tensor),
    "strict" (reject); see `biobullet.model.urdf.INERTIA_POLICIES`. Raises ModelError (naming file, element and
    attribute) on bad input.
    """
    return check_elements(model_from_file(path, floating_base, inertia=inertia))


def load_text(text: str, folder: str | Path | None = None, name: str = "contact_model.urdf") -> Model:
    """Write model-file text to `folder` (default: a new temporary folder) and load it (test models, e.g.
    `contact.testbed`'s)."""
    folder = Path(folder) if folder is not None else Path(tempfile.mkdtemp(prefix="biobullet_contact_"))
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    write_text(path, text)
    return load_model(path)


__all__ = ["load_model", "load_text"]
