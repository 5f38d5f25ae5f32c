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

# public name → (module, attribute)
_LAZY: dict[str, tuple[str, str]] = {
    "Model": ("biobullet.model", "Model"),
    "load_model": ("biobullet.loader", "load_model"),
    "convert_osim": ("biobullet.opensim", "convert_osim"),
    "osim_body_links": ("biobullet.opensim", "osim_body_links"),
    "simulate": ("biobullet.integrate", "simulate"),
    "Trajectory": ("biobullet.integrate", "Trajectory"),
    "Bridge": ("biobullet.bridge", "Bridge"),
    "validate_model": ("biobullet.validate", "validate_model"),
    "joint_reactions": ("biobullet.dynamics.joint_reactions", "joint_reactions"),
    "formulation_names": ("biobullet.dynamics.formulation", "formulation_names"),
    "run_scenario": ("biobullet.studies", "run_scenario"),
    "PluginError": ("biobullet.core.plugins", "PluginError"),
    "UnitWarning": ("biobullet.model.plausibility", "UnitWarning"),
}

#: subpackages reachable as attributes (`biobullet.muscles.lengths(model, q)` after a bare `import biobullet`)
_SUBPACKAGES = ("muscles",)

__all__ = ["BiobulletError", "ModelError", "SolverError", "__version__", *_LAZY, *_SUBPACKAGES]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        module, attribute = _LAZY[name]
        value = getattr(importlib.import_module(module), attribute)
        globals()[name] = value
        return value
    if name in _SUBPACKAGES:
        return importlib.import_module(f"biobullet.{name}")
    raise AttributeError(f"module 'biobullet' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
