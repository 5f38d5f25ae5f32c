"""Model layer: description objects, URDF + extension parsing, the compiled immutable Model."""
from biobullet.model.model import Model, load_model

__all__ = ["Model", "load_model"]
