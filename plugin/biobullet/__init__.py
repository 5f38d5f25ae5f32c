"""biobullet: biomechanics-grade multibody models for PyBullet.

Models stay URDF files; a `<biobullet>` block adds joint functions, loops, force elements, compliant contact and
flexible links. Public API (no import-time side effects; heavy modules load on first use).
"""
from __future__ import annotations

from .errors import BiobulletError, ModelError, SolverError
from .model import Model, load_model

__version__ = "0.1.0"
__all__ = ["BiobulletError", "ModelError", "SolverError", "Model", "load_model", "__version__"]
