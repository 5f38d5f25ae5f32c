"""Model layer: description objects, URDF + extension parsing, the compiled immutable Model."""
from .compiled import Model, load_model

__all__ = ["Model", "load_model"]
