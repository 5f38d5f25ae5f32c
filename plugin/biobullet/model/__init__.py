"""Model layer: description objects, URDF + extension parsing, the tree, the coordinate map and the immutable
Model (data; its dynamics methods are bound by the loader, `biobullet.load_model`)."""
from biobullet.model.model import Model

__all__ = ["Model"]
