"""biobullet: biomechanics-grade multibody models for PyBullet.

Models stay URDF files; a `<biobullet>` block adds joint functions, loops, force elements, compliant contact and
flexible links. The public API below is loaded lazily: `import biobullet` imports no numerical library, so the
command line starts fast and importing has no side effects.
"""
from __future__ import annotations

import importlib
from typing import Any

from biobullet.core.errors import BiobulletError, ModelError, SolverError

__version__ = "0.1.0"

# public name → the module that defines it (the attribute has the same name)
_LAZY: dict[str, str] = {
    **dict.fromkeys(("load_model",), "biobullet.loader"),
    **dict.fromkeys(("Model",), "biobullet.model"),
    **dict.fromkeys(("convert_osim", "osim_body_links"), "biobullet.opensim"),
    **dict.fromkeys(("simulate", "Trajectory"), "biobullet.integrate"),
    **dict.fromkeys(("Bridge",), "biobullet.bridge"),
    **dict.fromkeys(("validate_model",), "biobullet.validate"),
    **dict.fromkeys(("joint_reactions",), "biobullet.dynamics.joint_reactions"),
    **dict.fromkeys(("formulation_names",), "biobullet.dynamics.formulation"),
    **dict.fromkeys(("run_scenario",), "biobullet.studies"),
    **dict.fromkeys(("PluginError",), "biobullet.core.plugins"),
    **dict.fromkeys(("UnitWarning",), "biobullet.model.plausibility"),
}

#: subpackages reachable as attributes (`biobullet.muscles.lengths(model, q)` after a bare `import biobullet`)
_SUBPACKAGES = ("muscles",)

__all__ = ["BiobulletError", "ModelError", "SolverError", "__version__", *_LAZY, *_SUBPACKAGES]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    if name in _SUBPACKAGES:
        return importlib.import_module(f"biobullet.{name}")
    raise AttributeError(f"module 'biobullet' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
